"""Small edges of ``mmrobust run`` and its neighbours, each one line and the right exit code.

Before: ``run --model random:abc`` failed once per task; a ``run`` where nothing applies
exited 0; three ``--model-args`` for two models were merged; two ``--model-arg timeout=``
blamed ``--model-args``; ``eval --tasks`` was refused; ``tamper-data`` had no ``-q``; the
``suite/*/*/*`` glob stopped on ``suite/report/...``; help showed ``<list[str]>``; a Ctrl-C
while ``run`` started printed a traceback or nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from mmrobust.cli import app

RUN = ["run", "--data", "mmr-demo", "--bootstrap", "0", "--no-report", "-q"]


def _run(*args: str) -> object:
    return CliRunner().invoke(app, [*RUN, *args])


def test_a_bad_light_spec_is_refused_before_any_run(tmp_path: Path) -> None:
    out = tmp_path / "s"
    result = _run("--model", "constant:A", "--model", "random:abc", "--out", str(out))
    assert result.exit_code == 2, result.output
    assert result.output.strip() == "error: random:<seed> needs an integer seed, not 'abc'"
    assert not out.exists()


def test_nothing_applies_is_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "s"
    result = _run("--model", "constant:A", "--task", "type,when", "--out", str(out))
    assert result.exit_code == 2, result.output
    assert result.output.startswith(
        "error: nothing to run: every (model, dataset, task) is skipped as not applicable "
        "(mmr-demo: type, when skipped"
    )
    assert not out.exists()


def test_model_args_given_neither_once_nor_once_per_model_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "s"
    args = ["--model", "constant:A", "--model", "random:0", "--out", str(out)]
    three = ["--model-args", "delay_s=0", "--model-args", "delay_s=0", "--model-args", "x=1"]
    result = _run(*args, *three)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        "error: --model-args is given 3 times for 2 --model: give it once (every model) or "
        "once per --model, in the same order"
    )
    twice = ["--model", "constant:A", "--model", "constant:A", "--out", str(out)]
    result = _run(*twice, "--model-args", "delay_s=0", "--model-args", "delay_s=1")
    assert result.exit_code == 2, result.output
    assert "--model constant:A is given twice with different --model-args" in result.output
    assert not out.exists()


def test_a_model_arg_given_twice_names_model_arg() -> None:
    from mmrobust.models.spec import parse_model_args

    with pytest.raises(ValueError) as info:
        parse_model_args(["timeout=5", "timeout=2"])
    assert str(info.value) == "'timeout' is given twice by --model-arg ('5' and '2'); give it once"
    assert parse_model_args(["timeout=5", "timeout=5"]) == {"timeout": "5"}
    with pytest.raises(ValueError, match=r"given by --model-args \('4'\) and --model-arg"):
        parse_model_args(["timeout=2"], ["timeout=4"])


def test_eval_takes_tasks_as_run_does(tmp_path: Path) -> None:
    args = ["eval", "--data", "mmr-demo", "--model", "constant:A", "--bootstrap", "0", "-q"]
    result = CliRunner().invoke(
        app, [*args, "--tasks", "detect,type", "--out", str(tmp_path / "a")]
    )
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        "error: eval runs one --task, got 'detect,type': give one, or run several with "
        "`mmrobust run --task detect,type`"
    )
    out = tmp_path / "b"
    result = CliRunner().invoke(
        app, [*args, "--tasks", "detect", "--limit", "2", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert (out / "run.json").is_file()


def test_tamper_data_takes_q(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["tamper-data", str(tmp_path / "nosuch"), "--out", str(tmp_path / "o"), "-q"]
    )
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: no such video or folder: {tmp_path / 'nosuch'}"
    assert "-q" in CliRunner().invoke(app, ["tamper-data", "--help"]).output


def test_no_help_shows_a_list_type() -> None:
    command = typer.main.get_command(app)
    names = list(command.commands)  # type: ignore[attr-defined]
    shown = {}
    for name in names:
        shown[name] = CliRunner().invoke(app, [name, "--help"]).output
        assert "<list[" not in shown[name], (name, shown[name])
    assert "RUN_DIRS <str>" in shown["report"] and "--data <str>" in shown["run"]
    assert "SOURCES <path>" in shown["tamper-data"]


def test_a_suite_glob_skips_the_suite_report(tmp_path: Path) -> None:
    """``export suite/*/*/*`` (the glob also matches suite/report/cards/...): the report's
    files are skipped with one note, every run folder is exported."""
    from mmrobust.report.inputs import skip_report_files

    suite = tmp_path / "suite"
    result = _run("--model", "constant:A", "--limit", "2", "--out", str(suite))
    assert result.exit_code == 0, result.output
    report = suite / "report"
    (report / "cards").mkdir(parents=True)
    for name in ("index.html", "report.md", "cards/constant-A.html", "cards/constant-A.json"):
        (report / name).write_text("x", encoding="utf-8")
    (report / "mmr" / "constant_A").mkdir(parents=True)
    paths = sorted(str(p) for p in suite.glob("*/*/*"))
    assert len(paths) == 4
    kept, note = skip_report_files(paths)
    assert kept == [str(suite / "constant-A" / "mmr-demo" / "mmr")]
    assert note == f"note: skipped 3 path(s) inside the report folder {report} (not run folders)"
    result = CliRunner().invoke(app, ["export", *paths])
    assert result.exit_code == 0, result.output
    assert note in result.output
    assert (suite / "constant-A" / "mmr-demo" / "mmr" / "samples.jsonl").is_file()
    only = CliRunner().invoke(app, ["export", *paths[1:]])
    assert only.exit_code == 2 and "no run folder given (only report files)" in only.output


def test_ctrl_c_while_run_prepares_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmrobust.suite.config import SuiteConfig

    def ctrl_c(self: SuiteConfig) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(SuiteConfig, "validate", ctrl_c)
    result = _run("--model", "constant:A", "--out", str(tmp_path / "s"))
    assert result.exit_code == 130
    assert result.output.strip() == (
        "interrupted: finished runs are kept; re-run the same command to resume"
    )


def test_ctrl_c_while_the_command_imports_is_one_line() -> None:
    """The handler ``mmrobust.cli`` installs first when the process is the ``mmrobust``
    command: a SIGINT while its modules import prints one line and exits 130."""
    # A command started from a terminal has Python's SIGINT handler; the test process may
    # ignore SIGINT (a test before it on the same worker), which the child would inherit.
    code = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "sys.orig_argv = [sys.executable, '/usr/bin/mmrobust', 'run']\n"
        "from mmrobust.cli import _startup\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(30)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        130, "", "interrupted: stopped while starting; nothing was read or written\n"
    )  # fmt: skip
    from mmrobust.cli import _startup

    assert _startup._is_the_command(["python", "-m", "mmrobust.cli", "run"])
    assert not _startup._is_the_command(["python", "-m", "pytest"])
    assert signal.getsignal(signal.SIGINT) is not _startup._on_sigint  # pytest's own kept
