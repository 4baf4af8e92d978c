"""``mmrobust run`` (issue 30): models x datasets x tasks in one call, resumable, one report.

The suite is 2 models (``constant:A``, ``random:0``) x the 4 tamper tasks on a real
4-clip tamper build (``family_tamper_set``: bikes and carphone_pristine, dropping) plus
``mmr-demo`` (24 pairs: 48 questions), where type/when/leading do not apply.
Row counts per run: detect / type / when 4 (one question per clip), leading 8 (a pair
per clip), MMR 48.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.suite import SuiteConfig, folder_names, parse_tasks, run_suite, safe_name

MODELS = ["constant:A", "random:0"]
ROWS = {"detect": 4, "type": 4, "when": 4, "leading": 8, "mmr": 48}


def _rows(run: Path) -> int:
    import contextlib
    import sqlite3

    with contextlib.closing(sqlite3.connect(run / "results.sqlite")) as db:
        return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])


def _config(data: Path, out: Path, **kw: object) -> SuiteConfig:
    return SuiteConfig(
        models=list(MODELS),
        data=[str(data), "mmr-demo"],
        tasks=parse_tasks(["detect,type", "when,leading"]),
        out=str(out),
        options={"n_resamples": 20},
        **kw,  # type: ignore[arg-type]
    )


def test_names_are_safe_scrubbed_and_collision_free() -> None:
    names = folder_names(
        ["openai:gpt-4o", "openai-gpt-4o", "hf:Qwen/VL", "hf:qwen/vl", "..", "con", "report",
         "openai:http://user:hunter22@host:8000/v1?api_key=sk-abcdef"]
    )  # fmt: skip
    # the same slug (also ignoring case) gets a suffix from the spec's own sha256
    assert names["openai:gpt-4o"] == "openai-gpt-4o-1cffe337"
    assert names["openai-gpt-4o"] == "openai-gpt-4o-5b435e3e"
    assert names["hf:Qwen/VL"].startswith("hf-Qwen-VL-") and names["hf:qwen/vl"].startswith(
        "hf-qwen-vl-"
    )
    assert names[".."] == "x" and names["con"] == "con_" and names["report"].startswith("report-")
    secret = names["openai:http://user:hunter22@host:8000/v1?api_key=sk-abcdef"]
    assert "hunter22" not in secret and "sk-abcdef" not in secret and "user" not in secret
    assert len(set(names.values())) == len(names)
    # a name depends on the spec and its collisions, not on the order given
    assert folder_names(["openai-gpt-4o", "openai:gpt-4o"]) == {
        "openai-gpt-4o": "openai-gpt-4o-5b435e3e",
        "openai:gpt-4o": "openai-gpt-4o-1cffe337",
    }
    assert safe_name("a/../../b") == "a-b" and len(safe_name("m" * 300)) == 80
    assert parse_tasks(["all"]) == ["detect", "type", "when", "leading"]
    with pytest.raises(ValueError, match="unknown task 'wen'"):
        parse_tasks(["detect,wen"])


def test_suite_interrupted_resumes_and_writes_one_report(
    family_tamper_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmrobust.models import baselines

    out = tmp_path / "OUT"
    calls = [0]
    reply = baselines.ConstantModel._reply

    def ctrl_c_on_sixth(self: baselines.ConstantModel, req: object) -> str:
        calls[0] += 1
        if calls[0] == 6:  # the 2nd question of constant:A's --task type run
            os.kill(os.getpid(), signal.SIGINT)
        return reply(self, req)  # type: ignore[arg-type]

    monkeypatch.setattr(baselines.ConstantModel, "_reply", ctrl_c_on_sixth)
    # one worker: with constant's 4 threads all 4 questions may already be in flight when the
    # SIGINT lands, and in-flight answers are stored by design (4 rows, the test's race)
    serial = _config(family_tamper_set, out)
    serial.options["workers"] = 1
    first = run_suite(serial, progress=False)
    assert first.interrupted
    status = {r.label: r.status for r in first.runs}
    set_name = Path(family_tamper_set).name
    assert status[f"constant-A/{set_name}/detect"] == "complete"
    assert status[f"constant-A/{set_name}/type"] == "interrupted"
    assert status[f"random-0/{set_name}/detect"] == "planned"  # never started
    assert _rows(out / "constant-A" / set_name / "detect") == 4
    stored = _rows(out / "constant-A" / set_name / "type")
    assert 1 <= stored < 4
    assert not (out / "random-0").exists()
    assert first.report_dir is not None  # a report over what finished
    saved = json.loads((out / "suite.json").read_text())
    assert saved["interrupted"] is True and len(saved["runs"]) == 2 * 4 + 2 * 4

    monkeypatch.setattr(baselines.ConstantModel, "_reply", reply)
    again = run_suite(_config(family_tamper_set, out), progress=False)
    assert not again.interrupted and again.failed == []
    by = {r.label: r for r in again.runs}
    assert by[f"constant-A/{set_name}/detect"].n_new == 0
    assert by[f"constant-A/{set_name}/detect"].n_skipped == 4
    assert by[f"constant-A/{set_name}/type"].n_skipped == stored
    assert by[f"constant-A/{set_name}/type"].n_new == 4 - stored
    # type/when/leading on MMR: skipped with a note, the MMR pairs in OUT/<model>/mmr-demo/mmr
    assert again.notes == [
        "mmr-demo: type, when, leading skipped (they ask about tampered clips; "
        "mmr-demo is a mmr dataset)"
    ]
    ran = sorted(r.label for r in again.ran)
    expected = sorted(
        [f"{m}/{set_name}/{t}" for m in ("constant-A", "random-0") for t in ROWS if t != "mmr"]
        + [f"{m}/mmr-demo/mmr" for m in ("constant-A", "random-0")]
    )
    assert ran == expected
    for label in ran:
        run = out / label
        assert _rows(run) == ROWS[label.rsplit("/", 1)[1]], label
        info = json.loads((run / "run.json").read_text())
        assert info["complete"] is True and info["interrupted"] is False
    assert by[f"constant-A/{set_name}/detect"].headline == "F1 66.7%"  # 2 Yes of 4 clips, all "A"
    assert by["constant-A/mmr-demo/mmr"].headline == "RA 4.17%  MR 83.33%"
    # one report over all ten run folders, five leaderboards of two models each
    assert again.site is not None
    assert sorted(len(g.runs) for g in again.site.groups) == [2, 2, 2, 2, 2]
    assert (out / "report" / "index.html").is_file()


def test_a_suite_run_is_what_eval_writes(family_tamper_set: Path, tmp_path: Path) -> None:
    """OUT/constant-A/<set>/when holds what ``mmrobust eval`` writes for the same options."""
    cfg = SuiteConfig(
        models=["constant:A"], data=[str(family_tamper_set)], tasks=["when"],
        out=str(tmp_path / "OUT"), options={"n_resamples": 20}, report=False,
    )  # fmt: skip
    res = run_suite(cfg, progress=False)
    assert res.report_dir is None and [r.status for r in res.runs] == ["complete"]
    single = tmp_path / "single"
    cli = CliRunner().invoke(
        app,
        ["eval", "--model", "constant:A", "--data", str(family_tamper_set), "--task", "when",
         "--out", str(single), "--bootstrap", "20", "-q"],
    )  # fmt: skip
    assert cli.exit_code == 0, cli.output
    suite_run = res.runs[0].run_dir
    assert sorted(p.name for p in suite_run.iterdir()) == sorted(p.name for p in single.iterdir())
    a = json.loads((suite_run / "metrics.json").read_text())
    b = json.loads((single / "metrics.json").read_text())
    a.pop("run"), b.pop("run")
    assert a == b
    ia = json.loads((suite_run / "run.json").read_text())
    ib = json.loads((single / "run.json").read_text())
    assert ia["key"] == ib["key"]


def test_cli_names_failed_runs_and_exits_1(family_tamper_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "OUT"
    missing = tmp_path / "no-such-set"
    args = ["run", "--model", "constant:A", "--data", str(family_tamper_set)]
    args += ["--data", str(missing), "--task", "detect", "--out", str(out), "-q"]
    args += ["--bootstrap", "0", "--no-report"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "1 of 2 runs finished, 1 blocked (dataset not loaded)" in result.stdout
    assert "error: 1 dataset(s) cannot be loaded:" in result.stderr
    assert f"  {missing}: dataset not found: " in result.stderr
    assert "(blocks 1 run: constant-A/no-such-set: detect)" in result.stderr
    assert _rows(out / "constant-A" / Path(family_tamper_set).name / "detect") == 4
    bad = CliRunner().invoke(app, ["run", "--model", "constant:A", "--data", "mmr-demo",
                                   "--task", "detct", "--out", str(out)])  # fmt: skip
    assert bad.exit_code == 2 and "unknown task 'detct'" in bad.stderr


def test_each_model_is_loaded_once_and_closed_once(
    family_tamper_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs are planned model by model; a model is loaded at its first run and closed after
    its last (before: one load per run folder, 5 loads of an hf: checkpoint per dataset set)."""
    from mmrobust.models import baselines, spec

    loads: list[str] = []
    closes: list[str] = []
    real = spec.load_model

    def counting(name: str, args: object = None) -> object:
        loads.append(name)
        return real(name, args)  # type: ignore[arg-type]

    monkeypatch.setattr(spec, "load_model", counting)
    monkeypatch.setattr(baselines.ConstantModel, "close", lambda self: closes.append(self.name))
    res = run_suite(_config(family_tamper_set, tmp_path / "OUT", report=False), progress=False)
    assert [r.status for r in res.ran] == ["complete"] * 10
    # the light baselines are also built (from a parsed spec) and closed once when the suite
    # is validated, so that their bad arguments are refused before any run
    assert [str(n) for n in loads if not isinstance(n, str)] == ["constant:A", "random:0"]
    assert [n for n in loads if isinstance(n, str)] == ["constant:A", "random:0"]
    assert closes == ["constant:A"] * 2  # validated; then once, after its 5 runs (4 tasks + MMR)
    order = [r.label.split("/")[0] for r in res.ran]
    assert order == ["constant-A"] * 5 + ["random-0"] * 5

    # the same command again: every run folder is complete, so no model is loaded at all
    loads.clear()
    again = run_suite(_config(family_tamper_set, tmp_path / "OUT", report=False), progress=False)
    assert [n for n in loads if isinstance(n, str)] == []
    assert [(r.status, r.n_new) for r in again.ran] == [("complete", 0)] * 10
    assert [r.n_skipped for r in again.ran] == [4, 4, 4, 8, 48] * 2
    assert again.ran[0].headline == res.ran[0].headline == "F1 66.7%"
    # one folder with work left (random-0's when run removed): only its model is loaded
    import shutil

    shutil.rmtree(tmp_path / "OUT" / "random-0" / Path(family_tamper_set).name / "when")
    loads.clear()
    third = run_suite(_config(family_tamper_set, tmp_path / "OUT", report=False), progress=False)
    assert [n for n in loads if isinstance(n, str)] == ["random:0"]
    assert sum(r.n_new for r in third.ran) == 4


def test_shared_model_args_go_to_the_backends_that_take_them(
    family_tamper_set: Path, tmp_path: Path
) -> None:
    """README's `mmrobust run --model openai:... --model hf:... --model-args base_url=...`:
    each backend gets only the keys it declares (before: every model got every key, so the
    non-API models failed with "unknown ... model args ['base_url']"); a key no backend of
    the suite declares still fails every run."""
    cfg = SuiteConfig(
        models=["constant:A", "forensic"],
        data=[str(family_tamper_set)],
        tasks=["detect"],
        out=str(tmp_path / "OUT"),
        options={"n_resamples": 0, "model_args": {"delay_s": "0", "prior": "none"}},
        report=False,
    )
    assert cfg.model_args_for("constant:A") == {"delay_s": "0"}
    assert cfg.model_args_for("forensic") == {"prior": "none"}
    assert cfg.eval_config("forensic", "d", None, "detect", "o").model_args == {"prior": "none"}
    res = run_suite(cfg, progress=False)
    assert [(r.label, r.status) for r in res.ran] == [
        (f"constant-A/{family_tamper_set.name}/detect", "complete"),
        (f"forensic/{family_tamper_set.name}/detect", "complete"),
    ]
    typo = SuiteConfig(
        models=["constant:A", "forensic"],
        data=[str(family_tamper_set)],
        tasks=["detect"],
        out=str(tmp_path / "OUT2"),
        options={"n_resamples": 0, "model_args": {"delay_s": "0", "priorr": "1"}},
        report=False,
    )
    assert typo.model_args_for("constant:A") == {"delay_s": "0", "priorr": "1"}
    with pytest.raises(ValueError, match="priorr"):  # refused before any run, as eval does
        run_suite(typo, progress=False)
    assert not (tmp_path / "OUT2").exists()


def test_model_args_once_per_model(tmp_path: Path) -> None:
    """``--model-args`` given once per ``--model`` (in order) goes to that model only; given
    once, to every model (models on different servers)."""
    out = tmp_path / "OUT"
    args = ["run", "--model", "constant:A", "--model", "random:0", "--data", "mmr-demo"]
    args += ["--model-args", "delay_s=0", "--model-args", "delay_s=0.001", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--bootstrap", "0", "--no-report", "-q"])
    assert result.exit_code == 0, result.output
    a = json.loads((out / "constant-A" / "mmr-demo" / "mmr" / "run.json").read_text())
    b = json.loads((out / "random-0" / "mmr-demo" / "mmr" / "run.json").read_text())
    assert a["config"]["model_args"] == {"delay_s": "0"}
    assert b["config"]["model_args"] == {"delay_s": "0.001"}
    shared = tmp_path / "S"
    args = ["run", "--model", "constant:A", "--model", "random:0", "--data", "mmr-demo"]
    args += ["--model-args", "delay_s=0", "--out", str(shared), "--bootstrap", "0"]
    result = CliRunner().invoke(app, [*args, "--no-report", "-q"])
    assert result.exit_code == 0, result.output
    b2 = json.loads((shared / "random-0" / "mmr-demo" / "mmr" / "run.json").read_text())
    assert b2["config"]["model_args"] == {"delay_s": "0"}


def test_a_video_only_model_is_planned_on_no_image_set(
    family_tamper_set: Path, tmp_path: Path
) -> None:
    """``forensic`` takes video only (its backend says so, ``models.spec.media_kinds_of``): the
    suite plans it on the tamper set and skips it on ``mmr-demo`` with the reason, exit 0
    (before: 8 failed samples and exit 1); ``constant:A`` runs on both."""
    out = tmp_path / "OUT"
    args = ["run", "--model", "forensic", "--model", "constant:A", "--data", str(family_tamper_set)]
    args += ["--data", "mmr-demo", "--task", "detect", "--out", str(out), "--bootstrap", "0"]
    result = CliRunner().invoke(app, [*args, "--no-report", "-q"])
    assert result.exit_code == 0, result.output
    reason = "forensic takes video only; mmr-demo has images"
    assert f"note: forensic on mmr-demo: skipped: {reason}" in result.stdout
    assert "3 of 3 runs finished, 1 skipped (not applicable)" in result.stdout
    runs = json.loads((out / "suite.json").read_text())["runs"]
    assert [(r["run_dir"], r["status"], r["skipped"]) for r in runs] == [
        (f"forensic/{family_tamper_set.name}/detect", "complete", None),
        ("forensic/mmr-demo/mmr", "skipped", reason),
        (f"constant-A/{family_tamper_set.name}/detect", "complete", None),
        ("constant-A/mmr-demo/mmr", "complete", None),
    ]
    assert not (out / "forensic" / "mmr-demo").exists()
    assert _rows(out / "constant-A" / "mmr-demo" / "mmr") == ROWS["mmr"]


def test_an_unloadable_dataset_is_one_failure_naming_the_runs_it_blocks(
    family_tamper_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hf:MVTamperBench`` offline and not in the hub cache: resolved once, reported once with
    the tasks it blocks, exit 1 (before: one failed run per model and task, the same error 8
    times on the console and 8 times in the failure list); the other dataset still runs."""
    import huggingface_hub.constants as hub_constants

    from mmrobust.datasets import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    resolved: list[str] = []
    real = hub.snapshot

    def counting(ref: hub.HubRef, **kw: object) -> Path:
        resolved.append(ref.repo_id)
        return real(ref, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(hub, "snapshot", counting)
    out = tmp_path / "OUT"
    args = ["run", "--model", "constant:A", "--model", "random:0", "--data", "hf:MVTamperBench"]
    args += ["--data", str(family_tamper_set), "--task", "all", "--out", str(out), "-q"]
    result = CliRunner().invoke(app, [*args, "--bootstrap", "0", "--no-report"])
    assert result.exit_code == 1, result.output
    assert resolved == ["Srikant86/MVTamperBench"]
    why = "Srikant86/MVTamperBench is not (completely) in the local hub cache"
    assert result.output.count(why) == 2  # once as it is found, once in the closing list
    assert "error: 1 dataset(s) cannot be loaded:" in result.stderr
    blocks = "(blocks 8 runs: constant-A/hf-MVTamperBench: detect, type, when, leading; "
    blocks += "random-0/hf-MVTamperBench: detect, type, when, leading)"
    assert blocks in result.stderr and "run(s) failed" not in result.stderr
    assert "8 of 16 runs finished, 8 blocked (dataset not loaded)" in result.stdout
    suite = json.loads((out / "suite.json").read_text())
    [failure] = suite["datasets_failed"]
    assert failure["data"] == "hf:MVTamperBench" and failure["error"].startswith(why)
    assert failure["blocked"] == [
        f"{m}/hf-MVTamperBench/{t}"
        for m in ("constant-A", "random-0")
        for t in ("detect", "type", "when", "leading")
    ]
    statuses = [(r["run_dir"].split("/")[1], r["status"]) for r in suite["runs"]]
    assert statuses.count(("hf-MVTamperBench", "blocked")) == 8
    assert statuses.count((family_tamper_set.name, "complete")) == 8


def test_each_dataset_is_loaded_once_per_suite(
    family_tamper_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan loads each dataset once and every run uses that load (before: once for the
    plan and once more per run: 9 loads of one dataset for 2 models x 4 tasks)."""
    import mmrobust.datasets
    import mmrobust.run.eval

    loads: list[str] = []
    real = mmrobust.datasets.load_dataset

    def counting(data: object, *a: object, **kw: object) -> object:
        loads.append(str(data))
        return real(data, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(mmrobust.datasets, "load_dataset", counting)
    monkeypatch.setattr(mmrobust.run.eval, "load_dataset", counting)
    cfg = SuiteConfig(
        models=list(MODELS), data=[str(family_tamper_set)], tasks=list(parse_tasks(["all"])),
        out=str(tmp_path / "OUT"), options={"n_resamples": 0}, report=False,
    )  # fmt: skip
    res = run_suite(cfg, progress=False)
    assert [r.status for r in res.runs] == ["complete"] * 8
    assert loads == [str(family_tamper_set)]
    assert [_rows(r.run_dir) for r in res.runs[:4]] == [4, 4, 4, 8]


@pytest.mark.parametrize("cache", ["none", "persistent"])
def test_a_suite_decodes_each_clip_once_with_or_without_the_cache(
    family_tamper_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: str
) -> None:
    """2 models x 4 tasks on 4 clips ask 2 x (4 + 4 + 4 + 8) = 40 questions: each clip is
    decoded once for the suite (before, with ``--cache-dir none``: once per question)."""
    from mmrobust.media import provider

    decoded: list[str] = []
    real = provider.sample_clip

    def counting(video: object, *args: object, **kw: object) -> object:
        decoded.append("/".join(Path(str(video)).parts[-2:]))
        return real(video, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(provider, "sample_clip", counting)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where a scratch cache goes
    cache_dir = "none" if cache == "none" else str(tmp_path / "frames")
    cfg = SuiteConfig(
        models=list(MODELS), data=[str(family_tamper_set)], tasks=parse_tasks(["all"]),
        out=str(tmp_path / "OUT"),
        options={"n_resamples": 0, "model_args": {"media": "frames"}, "cache_dir": cache_dir},
        report=False,
    )  # fmt: skip
    res = run_suite(cfg, progress=False)
    assert [r.status for r in res.ran] == ["complete"] * 8
    assert sum(r.n_new for r in res.ran) == 40
    assert len(decoded) == 4 and len(set(decoded)) == 4, decoded
    # the scratch cache is gone with the suite; the persistent one keeps its 4 entries
    assert list(scratch.iterdir()) == []
    kept = len(list((tmp_path / "frames").rglob("*.frames")))
    assert kept == (0 if cache == "none" else 4)
