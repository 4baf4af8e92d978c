"""``mmrobust run --config FILE``, ``--print-config`` and ``export --format model-index``.

The suite of ``examples/suite.yaml``: ``constant:A`` and ``random:0`` on the demo's tamper
set (``family_tamper_set``: 4 clips, 2 tampered by ``dropping``, 2 originals, copied to
``mmrobust-demo/tamper-set``) for ``detect`` and ``type``, and on ``mmr-demo`` (24 pairs):
3 families (tamper, tamper-type, mmr) x 2 models. It is run once from the file and once
from the equivalent command line (both ``--bootstrap 20 --no-report``: flags over the file).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.suite.file import SuiteFile
from mmrobust.suite.load import load_suite_file, parse_suite_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "suite.yaml"
EXAMPLE_JSON = ROOT / "examples" / "suite-mmr.json"
COMMAND = ["--model", "constant:A", "--model", "random:0", "--data", "mmrobust-demo/tamper-set",
           "--data", "mmr-demo", "--task", "detect,type"]  # fmt: skip
"""The command line ``examples/suite.yaml`` writes down (with ``--out suite``)."""


def _invoke(args: list[str]) -> object:
    return CliRunner().invoke(app, args)


@pytest.fixture(scope="module")
def suites(
    family_tamper_set: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, Path]:
    """(work folder, suite from the YAML file, suite from the command line)."""
    import os

    work = tmp_path_factory.mktemp("suite-file")
    shutil.copytree(family_tamper_set, work / "mmrobust-demo" / "tamper-set")
    here = os.getcwd()
    os.chdir(work)
    try:
        fast = ["--bootstrap", "20", "--no-report", "-q"]
        a = CliRunner().invoke(app, ["run", "--config", str(EXAMPLE), "--out", "A", *fast])
        assert a.exit_code == 0, a.output
        b = CliRunner().invoke(app, ["run", *COMMAND, "--out", "B", *fast])
        assert b.exit_code == 0, b.output
    finally:
        os.chdir(here)
    return work, work / "A", work / "B"


def _run_dirs(suite: Path) -> list[str]:
    return sorted(str(p.parent.relative_to(suite)) for p in suite.rglob("run.json"))


def test_a_yaml_suite_is_the_equivalent_command_line(suites: tuple[Path, Path, Path]) -> None:
    _, a, b = suites
    assert _run_dirs(a) == _run_dirs(b) == sorted(
        f"{m}/{d}" for m in ("constant-A", "random-0")
        for d in ("tamper-set/detect", "tamper-set/type", "mmr-demo/mmr")
    )  # fmt: skip
    for rel in _run_dirs(a):
        ma = json.loads((a / rel / "metrics.json").read_text())
        mb = json.loads((b / rel / "metrics.json").read_text())
        ma.pop("run"), mb.pop("run")
        assert ma == mb, rel
        ka = json.loads((a / rel / "run.json").read_text())["key"]
        assert ka == json.loads((b / rel / "run.json").read_text())["key"], rel
    constant = json.loads((a / "constant-A/tamper-set/detect/metrics.json").read_text())
    assert constant["f1"]["overall"] == pytest.approx(2 / 3)  # "A" = Yes on all 4 clips
    # suite.json holds the effective suite file; the two differ only in out
    ca = json.loads((a / "suite.json").read_text())["config"]
    cb = json.loads((b / "suite.json").read_text())["config"]
    assert ca.pop("out") == "A" and cb.pop("out") == "B" and ca == cb
    assert ca["models"] == ["constant:A", "random:0"] and ca["bootstrap"] == 20
    assert ca["report"] is False and ca["tasks"] == ["detect", "type"]


def test_print_config_round_trips_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    printed = _invoke(["run", *COMMAND, "--out", "suite", "--print-config"])
    assert printed.exit_code == 0, printed.output  # type: ignore[attr-defined]
    text = printed.stdout  # type: ignore[attr-defined]
    assert not Path("suite").exists()  # nothing run, nothing made
    assert parse_suite_text(text, "printed") == load_suite_file(EXAMPLE)
    (tmp_path / "printed.yaml").write_text(text)
    again = _invoke(["run", "--config", "printed.yaml", "--print-config"])
    assert again.stdout == text  # type: ignore[attr-defined]
    # a flag overrides its key; a --model named again keeps the file's settings of it
    over = _invoke(["run", "--config", str(EXAMPLE_JSON), "--frames", "2", "--model",
                    "constant:A", "--model", "random:0", "--print-config"])  # fmt: skip
    got = yaml.safe_load(over.stdout)  # type: ignore[attr-defined]
    assert got["frames"] == 2 and got["limit"] == 8 and got["report"] is False
    assert got["models"] == [{"spec": "constant:A", "args": {"delay_s": "0"}}, "random:0"]


def test_a_bad_key_is_one_line_with_the_nearest_valid_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("s.yaml").write_text("models: [constant:A]\ndata: [mmr-demo]\nout: o\n\nfames: 4\n")
    bad = _invoke(["run", "--config", "s.yaml"])
    assert bad.exit_code == 2  # type: ignore[attr-defined]
    assert bad.stderr == (  # type: ignore[attr-defined]
        "error: s.yaml line 5: unknown key 'fames' (did you mean 'frames'?)\n"
    )
    Path("m.yaml").write_text("models:\n  - constant:A\n  - spec: random:0\n    agrs: {a: 1}\n")
    nested = _invoke(["run", "--config", "m.yaml"])
    assert nested.stderr == (  # type: ignore[attr-defined]
        "error: m.yaml line 4: unknown key 'agrs' in models[1] (did you mean 'args'?)\n"
    )
    Path("v.json").write_text('{\n  "models": ["constant:A"],\n  "frames": "many"\n}\n')
    value = _invoke(["run", "--config", "v.json"])
    assert value.stderr.startswith(  # type: ignore[attr-defined]
        "error: v.json line 3: frames: Input should be a valid integer"
    )
    missing = _invoke(["run", "--config", "s.yml"])
    assert missing.stderr == "error: --config s.yml: no such file\n"  # type: ignore[attr-defined]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.yaml", "s.yaml", "v.json"]


def test_every_flag_of_run_is_a_key_of_the_file() -> None:
    """The options are generated from the model: each flag is a field's (or fills an entry
    of ``models`` / ``data``); nothing is declared twice."""
    import typer

    from mmrobust.suite.file import flag_fields
    from mmrobust.suite.flags import ENTRY_FLAGS

    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    names = {p.name for p in command.params}
    fields = set(flag_fields())
    assert fields <= set(SuiteFile.model_fields) and fields <= names
    assert names - fields == {*ENTRY_FLAGS, "config", "print_config", "quiet"}
    assert (
        "--no-report"
        in command.params[[p.name for p in command.params].index("report")].secondary_opts
    )


def test_the_json_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _invoke(["run", "--config", str(EXAMPLE_JSON), "-q"])
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    run = tmp_path / "suite" / "mmr" / "constant-A" / "mmr-demo" / "mmr"
    info = json.loads((run / "run.json").read_text())
    assert info["config"]["model_args"] == {"delay_s": "0"} and info["config"]["limit"] == 8
    assert not (tmp_path / "suite" / "mmr" / "report").exists()


def test_model_index_of_two_models_by_three_families(
    suites: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    from huggingface_hub.repocard_data import (
        eval_results_to_model_index,
        model_index_to_eval_results,
    )

    from mmrobust import __version__
    from mmrobust.report.model_index import check_model_index, model_index

    _, a, _ = suites
    blocks = model_index(a)
    assert list(blocks) == ["constant:A", "random:0"]
    for key, block in blocks.items():
        assert check_model_index(block) == [], key
        name, results = model_index_to_eval_results(block)
        assert name == key
        assert eval_results_to_model_index(name, results) == [
            {"name": key, "results": block[0]["results"]}
        ]  # the hub library's own round trip changes nothing
        configs = [r["dataset"]["config"] for r in block[0]["results"]]
        assert configs == ["detect", "type", "mmr"]
        for r in block[0]["results"]:
            for m in r["metrics"]:
                assert m["config"] == "default" and m["args"] == {"mmrobust_version": __version__}
    results = {r["dataset"]["config"]: r for r in blocks["constant:A"][0]["results"]}
    detect = results["detect"]
    data_hash = json.loads((a / "constant-A/tamper-set/detect/run.json").read_text())
    assert detect["dataset"]["revision"] == "sha256:" + data_hash["dataset"]["data_hash"]
    assert detect["task"]["type"] == "video-text-to-text"
    assert [(m["name"], m["value"]) for m in detect["metrics"]] == [
        ("F1, macro over tamper types (%)", 66.67),
        ("F1 dropping (%)", 66.67),
    ]
    assert [(m["type"], m["value"]) for m in results["mmr"]["metrics"]] == [
        ("robust_accuracy", 4.17),
        ("misleading_rate", 83.33),
    ]  # the card's numbers (test_suite: RA 4.17%, MR 83.33%)
    card = results["type"]["metrics"]
    assert [m["type"] for m in card] == ["accuracy", "f1"]
    # the checks catch what the hub would refuse
    broken = json.loads(json.dumps(blocks["random:0"]))
    del broken[0]["results"][0]["dataset"]["type"]
    broken[0]["results"][1]["metrics"][0]["value"] = None
    broken[0]["results"][2]["metrics"][0]["colour"] = "red"
    assert check_model_index(broken) == [
        "model-index[0].results[0].dataset: missing 'type'",
        "model-index[0].results[1].metrics[0].value: not a finite number or text",
        "model-index[0].results[2].metrics[0]: unknown key 'colour'",
    ]
    # the command: one file per model in --out DIR/, and a run folder alone
    out = _invoke(["export", str(a), "--format", "model-index", "--out", f"{tmp_path}/mi/"])
    assert out.exit_code == 0, out.output  # type: ignore[attr-defined]
    files = sorted(p.name for p in (tmp_path / "mi").iterdir())
    assert files == ["constant-A.yaml", "random-0.yaml"]
    loaded = yaml.safe_load((tmp_path / "mi" / "random-0.yaml").read_text())
    assert loaded == {"model-index": blocks["random:0"]}
    one = _invoke(["export", str(a / "random-0/mmr-demo/mmr"), "--format", "Model-Index"])
    assert yaml.safe_load(one.stdout.split("\n", 1)[1])["model-index"][0]["results"] == [  # type: ignore[attr-defined]
        results_of(blocks["random:0"], "mmr")
    ]
    again = _invoke(["export", str(a), "--format", "model-index", "--out", f"{tmp_path}/mi/"])
    assert again.exit_code == 2 and "exists; --force replaces it" in again.stderr  # type: ignore[attr-defined]


def results_of(block: list[dict[str, object]], config: str) -> dict[str, object]:
    """The result of ``block`` whose dataset config is ``config``."""
    return next(r for r in block[0]["results"] if r["dataset"]["config"] == config)  # type: ignore[index, union-attr, attr-defined]


def test_docs_name_every_key() -> None:
    """docs/suite.md's table names every key of the suite file."""
    text = (ROOT / "docs" / "suite.md").read_text()
    missing = [k for k in SuiteFile.model_fields if f"`{k}`" not in text]
    assert missing == []


def test_print_config_and_suite_json_hold_no_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A URL's password in a backend setting is held in memory (``***@`` wherever shown), a
    secret-named setting of a file is masked, in ``--print-config`` and in ``suite.json``."""
    monkeypatch.chdir(tmp_path)
    args = ["run", "--model", "constant:A", "--data", "mmr-demo", "--out", "S", "--task", "detect"]
    url = "--model-args=base_url=http://user:hunter22@127.0.0.1:9/v1"
    printed = _invoke([*args, url, "--print-config"])
    assert printed.exit_code == 0, printed.output  # type: ignore[attr-defined]
    assert "hunter22" not in printed.stdout and "http://***@127.0.0.1:9/v1" in printed.stdout  # type: ignore[attr-defined]
    Path("s.yaml").write_text(
        "models: [{spec: constant:A, args: {delay_s: 0, api_token: sk-abcdef123456}}]\n"
    )
    shown = _invoke(["run", "--config", "s.yaml", "--print-config"])
    assert "sk-abcdef123456" not in shown.stdout  # type: ignore[attr-defined]
    assert "delay_s: '0'" in shown.stdout  # type: ignore[attr-defined]
    from mmrobust.suite.flags import suite_from_flags

    suite = suite_from_flags(
        {"models": ["constant:A"], "data": ["mmr-demo"], "out": "S",
         "model_args": [url.split("=", 1)[1]]}, {"models", "data", "out"},
    )  # fmt: skip
    saved = json.dumps(suite.to_suite_config().file)  # what suite.json stores as "config"
    assert "hunter22" not in saved and "http://***@127.0.0.1:9/v1" in saved
    refused = _invoke(["run", "--config", "s.yaml", "--data", "mmr-demo", "--out", "T"])
    assert refused.exit_code == 2 and "api_key_env" in refused.stderr  # type: ignore[attr-defined]
    assert not Path("T").exists()


def test_model_index_of_a_family_with_its_own_card_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``consistency`` (``mmrobust perturb``; 2 MMR photos, blur and typographic at severity 3:
    6 questions): each card row's score columns, named by effect. ``constant:A`` answers "A"
    to every question, so no answer flips: flip rate and accuracy drop 0 for each effect."""
    from huggingface_hub.repocard_data import (
        eval_results_to_model_index,
        model_index_to_eval_results,
    )

    from mmrobust.perturb import perturb
    from mmrobust.report.model_index import check_model_index, model_index

    monkeypatch.chdir(tmp_path)
    perturb("mmr-demo", "gaussian_blur,typographic", tmp_path / "p", severities="3", limit=2)
    ran = _invoke(["run", "--model", "constant:A", "--data", "p", "--out", "C", "--bootstrap",
                   "0", "--no-report", "-q"])  # fmt: skip
    assert ran.exit_code == 0, ran.output  # type: ignore[attr-defined]
    [block] = model_index(tmp_path / "C").values()
    assert check_model_index(block) == []
    assert eval_results_to_model_index(*model_index_to_eval_results(block)) == block
    [result] = block[0]["results"]
    assert result["dataset"]["config"] == "consistency"
    values = {m["name"]: m["value"] for m in result["metrics"]}
    for effect in ("gaussian_blur", "typographic", "all"):
        assert values[f"flip rate, {effect} (%)"] == 0.0
        assert values[f"accuracy drop, {effect} (%)"] == 0.0
    assert all(m["type"] != "pairs" for m in result["metrics"])  # a count is not a score
