"""The ``run/`` package: options validated by the library, the typed ``run.json``, one
extract -> judge path shared by eval and rescore, the thin re-export in ``mmrobust.runner``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.run.config import EvalConfig
from mmrobust.run.eval import run_eval
from mmrobust.run.folder import RunInfo, load_run_config, read_run_info
from mmrobust.run.rescore import rescore
from tests.test_runner import write_text_tamper_set


@pytest.mark.parametrize("fps", ["inf", "nan", "-inf"])
def test_fps_inf_and_nan_are_refused_before_any_work(tmp_path: Path, fps: str) -> None:
    data = write_text_tamper_set(tmp_path / "d.jsonl", 1)
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="--fps must be a finite positive number"):
        EvalConfig(data=str(data), model="constant:A", out=str(out), fps=float(fps)).validate()
    res = CliRunner().invoke(
        app, ["eval", "--data", str(data), "--model", "constant:A", "--out", str(out), "--fps", fps]
    )
    assert res.exit_code == 2, res.output
    assert res.output.strip().startswith("error: --fps must be a finite positive number")
    assert not out.exists()  # refused at the start: no run folder


def test_options_are_validated_by_the_library_not_only_the_cli(tmp_path: Path) -> None:
    data = write_text_tamper_set(tmp_path / "d.jsonl", 1)
    base = {"data": str(data), "model": "constant:A", "out": str(tmp_path / "run")}
    with pytest.raises(ValueError, match="--extract must be one of strict, lenient, official"):
        run_eval(EvalConfig(**base, extract="fuzzy"), progress=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="--option-style must be paper or vlmevalkit"):
        run_eval(EvalConfig(**base, option_style="round"), progress=False)  # type: ignore[arg-type]
    assert not (tmp_path / "run").exists()


def test_run_json_is_typed_and_an_old_file_reads_back_unchanged(tmp_path: Path) -> None:
    data = write_text_tamper_set(tmp_path / "d.jsonl", 2)
    out = tmp_path / "run"
    run_eval(
        EvalConfig(data=str(data), model="constant:A", out=str(out), n_resamples=0), progress=False
    )
    info = read_run_info(out)
    assert isinstance(info, RunInfo)
    assert (info.dataset.benchmark, info.dataset.n_selected, info.n_rows) == ("tamper", 12, 12)
    assert info.options().model == "constant:A" and info.interrupted is False
    # a run.json of an older version, with keys this version does not know: kept as they are
    raw = json.loads((out / "run.json").read_text())
    raw["legacy_block"] = {"x": [1, 2]}
    raw["dataset"]["loader_note"] = "from v0.1"
    del raw["executor"]
    (out / "run.json").write_text(json.dumps(raw))
    assert load_run_config(out) == raw
    rescore(out, extract_mode="strict")
    again = json.loads((out / "run.json").read_text())
    assert again["legacy_block"] == {"x": [1, 2]} and again["dataset"]["loader_note"] == "from v0.1"
    assert again["rescore"]["extraction"] == ["lenient", "strict"]


def test_a_broken_run_json_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"config": {}, "key": {"model_fp": 1}}))
    with pytest.raises(ValueError, match=r"run.json: not a valid run.json \(key"):
        read_run_info(tmp_path)


def test_runner_keeps_its_public_names() -> None:
    import mmrobust.run.eval
    import mmrobust.runner as runner

    assert runner.run_eval is mmrobust.run.eval.run_eval
    for name in runner.__all__:
        assert getattr(runner, name) is not None
