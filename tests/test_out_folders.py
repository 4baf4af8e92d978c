"""``run --out`` and ``report --out`` naming a file (or a path under a file): one sentence with
the fix, exit 2, nothing made; ``report`` on a path that does not exist says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app


@pytest.mark.parametrize("command", ["run", "report"])
def test_out_on_a_file_is_one_sentence_with_the_fix(command: str, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    for out, what in ((afile, "is a file"), (afile / "sub", f"is inside {afile}, which is a file")):
        if command == "run":
            args = ["run", "--model", "constant:A", "--data", "mmr-demo", "--out", str(out), "-q"]
        else:
            args = ["report", str(tmp_path), "--out", str(out)]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"error: --out {out} {what}, not a folder; choose a folder (it is made when "
            "missing), or move that file away\n"
        )
    assert [p.name for p in tmp_path.iterdir()] == ["afile"] and afile.read_text() == "mine\n"


def test_report_on_a_path_that_does_not_exist_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "r")]
    )
    assert (result.exit_code, result.stderr) == (2, f"error: no such folder: {tmp_path / 'nope'}\n")
    assert list(tmp_path.iterdir()) == []


def _empty_folders(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_dir() and not any(p.iterdir())]


def test_a_refused_eval_or_run_leaves_no_empty_folder(tmp_path: Path) -> None:
    """``constant:Z`` can answer none of two Yes/No questions: ``eval`` refuses before any
    request and removes the folders it made for the run (``a/b/c``: all three, was ``a/b``
    left); ``run`` leaves no empty ``OUT/<model>/<dataset>`` folder (was one)."""
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "1", "question": "Red?", "options": ["Yes", "No"], "answer": "Yes"}\n')
    base = ["--model", "constant:Z", "--data", str(data), "--bootstrap", "0", "-q"]
    refused = CliRunner().invoke(app, ["eval", *base, "--out", str(tmp_path / "a" / "b" / "c")])
    assert refused.exit_code == 2, refused.output
    assert not (tmp_path / "a").exists()
    suite = tmp_path / "S"
    CliRunner().invoke(app, ["run", *base, "--out", str(suite), "--no-report"])
    assert not (suite / "constant-Z").exists() and _empty_folders(tmp_path) == []
