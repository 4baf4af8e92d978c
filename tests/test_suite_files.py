"""The suite folder's own files when several ``mmrobust run`` commands write one ``--out``.

* A re-run with fewer models: ``suite.json`` and the report keep the complete runs of the
  earlier command, marked as such (before: B only, while A's complete runs were on disk).
* Two commands at once: a run one of them failed because the other held its folder is
  recorded as the folder stands (before: ``failed`` while it was complete).
* One dataset spelled several ways, one model given twice: each run once, with a note
  (before: two dataset folders, every sample asked twice).

``mmr-demo`` (48 questions) with ``constant:`` / ``random:`` models: no media decoded.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import mmrobust
from mmrobust.suite import SuiteConfig, run_suite

DEMO = Path(mmrobust.__file__).parent / "data" / "mmr_demo"


def _config(out: Path, models: list[str], **kw: Any) -> SuiteConfig:
    kw.setdefault("report", False)
    return SuiteConfig(
        models=models,
        data=kw.pop("data", ["mmr-demo"]),
        tasks=["detect"],
        out=str(out),
        options={"n_resamples": 0, **kw.pop("options", {})},
        **kw,
    )


def _saved(out: Path) -> dict[str, dict[str, Any]]:
    runs = json.loads((out / "suite.json").read_text(encoding="utf-8"))["runs"]
    return {r["run_dir"]: r for r in runs}


@pytest.mark.slow
def test_a_rerun_with_fewer_models_keeps_the_earlier_runs(tmp_path: Path) -> None:
    out = tmp_path / "s"
    from mmrobust.runlock import RunLock

    with RunLock(out / "random-1" / "mmr-demo" / "mmr"):  # held elsewhere: this run fails
        run_suite(_config(out, ["constant:A", "random:0", "random:1"]), progress=False)
    assert _saved(out)["random-1/mmr-demo/mmr"]["status"] == "failed"

    lines: list[str] = []
    second = run_suite(_config(out, ["random:0"], report=True), progress=False, log=lines.append)
    saved = _saved(out)
    assert sorted(saved) == [
        "constant-A/mmr-demo/mmr", "random-0/mmr-demo/mmr", "random-1/mmr-demo/mmr"
    ]  # fmt: skip
    assert saved["random-0/mmr-demo/mmr"]["this_command"] is True
    assert saved["random-0/mmr-demo/mmr"]["n_skipped"] == 48  # resumed
    earlier = saved["constant-A/mmr-demo/mmr"]
    assert earlier["this_command"] is False and earlier["status"] == "complete"
    assert earlier["model"] == "constant:A"
    kept = saved["random-1/mmr-demo/mmr"]  # an earlier outcome is kept until re-run
    assert kept["status"] == "failed" and "in use by" in kept["error"] and not kept["this_command"]
    assert second.earlier == ["constant-A/mmr-demo/mmr"]
    assert any(
        line.startswith("note: 1 complete run(s)") and "constant-A/mmr-demo/mmr" in line
        for line in lines
    ), lines
    assert second.site is not None  # one leaderboard of both complete runs
    assert [len(g.runs) for g in second.site.groups] == [2]
    assert "constant:A" in (out / "report" / "report.md").read_text(encoding="utf-8")

    third = run_suite(_config(out, ["constant:A"]), progress=False)  # A re-run: A is this one's
    saved = _saved(out)
    assert saved["constant-A/mmr-demo/mmr"]["this_command"] is True
    assert saved["random-0/mmr-demo/mmr"]["this_command"] is False
    assert third.earlier == ["random-0/mmr-demo/mmr"]


def test_a_run_another_process_held_is_recorded_as_its_folder_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other process (simulated in this one) runs constant:A's folder to the end while
    holding its lock; this command's attempt fails naming the holder, and ``suite.json`` says
    the run is complete (from its folder), not failed (from this process's memory)."""
    from mmrobust.run.eval import run_eval
    from mmrobust.runlock import RunLock
    from mmrobust.suite import runner

    real = runner._one

    def other_process_holds_it(config: SuiteConfig, run: Any, shared: Any) -> None:
        if run.model == "constant:A":
            cfg = config.eval_config(run.model, run.data, None, run.task, str(run.run_dir))
            run_eval(cfg, progress=False)
            with RunLock(run.run_dir):
                real(config, run, shared)
            return
        real(config, run, shared)

    monkeypatch.setattr(runner, "_one", other_process_holds_it)
    out = tmp_path / "s"
    result = run_suite(_config(out, ["constant:A", "random:0"]), progress=False)
    assert [r.status for r in result.failed] == ["failed"]
    assert "is in use by" in (result.failed[0].error or "")  # names the holder
    saved = _saved(out)
    assert saved["constant-A/mmr-demo/mmr"]["status"] == "complete"
    assert saved["constant-A/mmr-demo/mmr"]["this_command"] is False  # the other one wrote it
    assert saved["random-0/mmr-demo/mmr"]["status"] == "complete"
    assert not list(out.glob(".suite.json.*.tmp"))


def test_one_dataset_spelled_four_ways_and_a_repeated_model_run_once(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "MMR-demo.json").write_bytes((DEMO / "MMR-demo.json").read_bytes())
    (tmp_path / "link").symlink_to(base, target_is_directory=True)
    out = tmp_path / "s"
    lines: list[str] = []
    spellings = ["base", "base/", str(base), "link", "./base/../base"]
    config = _config(  # text only: the copied demo file's images are drawn by mmr-demo only
        out, ["constant:A", "constant:A"], data=spellings, options={"text_only": True}
    )

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = run_suite(config, progress=False, log=lines.append)
    finally:
        os.chdir(here)
    assert [r.label for r in result.ran] == ["constant-A/MMR-demo/mmr"]  # one folder, once
    assert result.ran[0].n_new == 48
    assert sorted(p.name for p in (out / "constant-A").iterdir()) == ["MMR-demo"]
    notes = [line for line in lines if line.startswith("note: ")]
    assert notes == [
        "note: --data 'base/' is 'base' (the same dataset): run once",
        f"note: --data '{base}' is 'base' (the same dataset): run once",
        "note: --data 'link' is 'base' (the same dataset): run once",
        "note: --data './base/../base' is 'base' (the same dataset): run once",
        "note: --model constant:A is given 2 times: run once",
    ]
    assert json.loads((out / "suite.json").read_text())["notes"] == [n[6:] for n in notes]
