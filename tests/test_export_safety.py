"""``mmrobust export`` as an attacker or a careless user meets it: formula cells in CSV, links
planted at its targets, ``--out`` aimed at the run's own files, a full disk, ``--out DIR/``,
files already there, format case, paths that do not exist.

One run (``constant:A`` on 6 generic questions whose id, question and group start with each
OWASP CSV-injection trigger) is shared by the module.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.export import sample_records, write_records

PAYLOADS = ('=HYPERLINK("http://evil.example","x")', "+1+cmd", "-2+3", "@SUM(A1)", "\tTAB", "\rCR")
"""A cell starting with each character OWASP names: = + - @ tab CR."""
TEXT_FIELDS = ("raw_answer", "reasoning", "id", "question", "prompt", "group")


def _export(*args: str) -> Any:
    return CliRunner().invoke(app, ["export", *args])


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run_files(run: Path) -> dict[str, str]:
    return {n: _sha(run / n) for n in ("run.json", "metrics.json", "results.sqlite")}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("export-safety")
    data = root / "inj.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"{p}{i}", "question": f"{p}?", "group": f"{p}g",
                        "options": ["Yes", "No"], "answer": "Yes"}) + "\n"
            for i, p in enumerate(PAYLOADS)
        ),
        encoding="utf-8",
    )  # fmt: skip
    out = root / "run"
    args = ["eval", "--model", "constant:A", "--data", str(data), "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--bootstrap", "0", "-q"])
    assert result.exit_code == 0, result.output
    return out


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


# -- 1. CSV injection ------------------------------------------------------------------------


def test_every_trigger_in_every_text_field_is_neutralised_in_csv_only(
    run: Path, tmp_path: Path
) -> None:
    """Each of the 6 payloads in each of the 6 text fields: the CSV cell is ``'`` + payload
    (36 cells), the JSON Lines and Parquet values are the payload exactly."""
    import pandas as pd

    records = sample_records(run)
    assert len(records) == 6
    for rec, p in zip(sorted(records, key=lambda r: r["id"]), sorted(PAYLOADS), strict=True):
        assert str(rec["id"]).startswith(p)  # the run holds the payload in id, question, group
        rec["raw_answer"], rec["reasoning"] = p + " reply", p + " thought"
    by_id = {r["id"]: r for r in records}
    write_records(records, tmp_path / "s.csv", "csv")
    write_records(records, tmp_path / "s.jsonl", "jsonl")
    write_records(records, tmp_path / "s.parquet", "parquet")
    rows = _csv_rows((tmp_path / "s.csv").read_bytes().decode())
    assert len(rows) == 6
    checked = 0
    for row in rows:
        original = by_id[row["id"][1:]]  # the id cell is neutralised too
        for field in TEXT_FIELDS:
            assert row[field] == "'" + str(original[field]), (field, row[field])
            checked += 1
        assert row["status"] == "ok" and row["model"] == "constant:A"  # untouched cells
    assert checked == 36
    exact = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    frame = pd.read_parquet(tmp_path / "s.parquet")
    for field in TEXT_FIELDS:
        assert [r[field] for r in exact] == [r[field] for r in records]
        assert list(frame[field]) == [r[field] for r in records]


def test_the_cli_csv_of_the_run_and_standard_output_are_neutralised(
    run: Path, tmp_path: Path
) -> None:
    result = _export(str(run), "--format", "csv", "--out", str(tmp_path / "x.csv"))
    assert result.exit_code == 0, result.output
    for text in ((tmp_path / "x.csv").read_bytes().decode(),
                 _export(str(run), "--format", "csv", "--out", "-").stdout):  # fmt: skip
        rows = _csv_rows(text)
        assert len(rows) == 6
        for row in rows:
            for field in ("id", "question", "prompt", "group"):
                assert row[field][0] == "'" and row[field][1] in "=+-@\t\r", (field, row[field])
            assert row["raw_answer"] == "A"  # a plain reply is left alone


# -- 2. links and the run's own files ----------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_a_link_at_the_target_or_its_old_temporary_name_is_never_written_through(
    run: Path, tmp_path: Path, fmt: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    target = run / f"samples.{fmt}"
    plants = [target, run / f"samples.{fmt}.tmp", run / f".samples.{fmt}.tmp"]
    for link in plants:
        link.unlink(missing_ok=True)
        link.symlink_to(victim)
    try:
        result = _export(str(run), "--format", fmt)
        assert result.exit_code == 0, result.output
        assert victim.read_text() == "precious\n"
        assert target.is_file() and not target.is_symlink() and target.stat().st_size > 100
        assert not [p for p in run.iterdir() if p.name.endswith(".tmp") and p not in plants]
    finally:
        for link in plants:
            link.unlink(missing_ok=True)


@pytest.mark.parametrize("name", ["results.sqlite", "run.json", "metrics.json", ".lock"])
def test_out_on_a_file_the_run_owns_is_refused(run: Path, tmp_path: Path, name: str) -> None:
    before = _run_files(run)
    link = tmp_path / "innocent.csv"
    link.symlink_to(run / name)  # the same file reached through a link
    for out in (run / name, link, run / name / "x.csv"):
        for force in ([], ["--force"]):
            result = _export(str(run), "--format", "csv", "--out", str(out), *force)
            assert result.exit_code == 2, (out, result.output)
            assert f"{name} of the run folder {run}" in result.stderr
            assert "mmrobust owns it" in result.stderr and "Traceback" not in result.output
    assert _run_files(run) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["innocent.csv"]


# -- 3. a full disk ------------------------------------------------------------------------------


class _FullDisk:
    """A file that takes ``room`` bytes (or characters), then fails as a full disk does."""

    def __init__(self, f: Any, room: int) -> None:
        self._f, self._room = f, room

    def write(self, data: Any) -> int:
        if len(data) > self._room:
            self._f.write(data[: self._room])
            self._room = 0
            self._f.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
        self._room -= len(data)
        return int(self._f.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_a_full_disk_leaves_the_old_file_or_none_and_no_temporary(
    run: Path, tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mmrobust.atomicfile as atomicfile

    real_fdopen = os.fdopen
    monkeypatch.setattr(
        atomicfile.os, "fdopen", lambda *a, **k: _FullDisk(real_fdopen(*a, **k), 600)
    )
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / f"old.{fmt}").write_text("old\n")
    cases = [
        (tmp_path / f"x.{fmt}", []),  # new file
        (kept / f"old.{fmt}", ["--force"]),  # replacing a file
        (tmp_path / "newdir", []),  # --out DIR/: the folder it made is removed again
    ]
    for out, force in cases:
        arg = f"{out}/" if out.name == "newdir" else str(out)
        result = _export(str(run), "--format", fmt.upper(), "--out", arg, *force)
        assert result.exit_code == 3, result.output
        assert result.stderr.count("\n") == 1 and "No space left on device" in result.stderr
        assert ".tmp" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]
    assert [p.name for p in kept.iterdir()] == [f"old.{fmt}"]
    assert (kept / f"old.{fmt}").read_text() == "old\n"


# -- 4, 9. --out DIR/, files already there, format case, paths that do not exist -----------


def test_out_folder_existing_files_force_and_format_case(run: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"  # a second run: the first one again under another name
    other.mkdir()
    for name in ("run.json", "metrics.json", "results.sqlite"):
        (other / name).write_bytes((run / name).read_bytes())
    result = _export(str(run), str(other), "--format", "JSONL", "--out", f"{tmp_path}/per-run/")
    assert result.exit_code == 0, result.output
    per_run = tmp_path / "per-run"
    assert sorted(p.name for p in per_run.iterdir()) == ["other.jsonl", "run.jsonl"]
    assert len((per_run / "run.jsonl").read_text().splitlines()) == 6
    again = _export(str(run), "--format", "Csv", "--out", str(per_run))  # an existing folder
    assert again.exit_code == 0 and (per_run / "run.csv").is_file()

    mine = tmp_path / "mine.csv"
    mine.write_text("my own notes\n")
    refused = _export(str(run), "--format", "csv", "--out", str(mine))
    assert refused.exit_code == 2
    assert refused.stderr == f"error: --out {mine} already exists; pass --force to replace it, " \
                             "or choose another --out\n"  # fmt: skip
    assert mine.read_text() == "my own notes\n"
    forced = _export(str(run), "--format", "csv", "--out", str(mine), "--force")
    assert forced.exit_code == 0 and len(_csv_rows(mine.read_text())) == 6

    gone = tmp_path / "nonexistent" / "dir"
    for out in (f"{gone}/x.csv", f"{gone}/"):
        missing_dir = _export(str(run), "--format", "csv", "--out", out)
        assert missing_dir.exit_code == 2
        assert missing_dir.stderr.startswith("error: cannot write ")
        assert f"the folder {gone.parent if out.endswith('/') else gone} does not exist; " \
               "create it first or choose another --out" in missing_dir.stderr  # fmt: skip
        assert ".tmp" not in missing_dir.stderr
    assert not (tmp_path / "nonexistent").exists()

    nope = _export(str(tmp_path / "nope"), "--out", str(tmp_path / "nope.jsonl"))
    assert (nope.exit_code, nope.stderr) == (2, f"error: no such folder: {tmp_path / 'nope'}\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    not_run = _export(str(empty))
    assert not_run.stderr == f"error: not a run folder (no run.json): {empty}\n"
    assert not (tmp_path / "nope.jsonl").exists() and list(empty.iterdir()) == []
