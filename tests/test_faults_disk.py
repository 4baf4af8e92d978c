"""Files the tool used to trust (issue 27 items 5 and 9): a ``.lock`` or ``manifest.jsonl``
that is a link to another file, a ``.lock`` that is a directory or holds an absurd note, and a
run folder on a read-only file system; each is refused in one line and nothing outside the
run folder is written."""

from __future__ import annotations

import errno
import fcntl
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.runlock import RunLock, RunLockError
from tests.synth import make_synthetic_video


def _data(tmp_path: Path, n: int = 2) -> Path:
    path = tmp_path / "d.jsonl"
    rows = [
        {"id": f"s{i}", "question": f"q{i}", "options": {"A": "Yes", "B": "No"}, "answer": "A"}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _eval(data: Path, out: Path) -> list[str]:
    return [
        "eval",
        "--data",
        str(data),
        "--model",
        "constant:B",
        "--out",
        str(out),
        "-q",
        "--bootstrap=0",
    ]


# -- item 5: a symlinked or foreign .lock is never written through ------------------------


def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / ".lock").symlink_to(notes)
    res = CliRunner().invoke(app, _eval(_data(tmp_path), out))
    assert res.exit_code == 2, res.output
    assert "is a symlink" in res.output and "Traceback" not in res.output
    assert notes.read_text() == "my notes\n"
    assert not (out / "results.sqlite").exists()


def test_a_dangling_lock_link_creates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    target = tmp_path / "elsewhere" / "created.txt"
    target.parent.mkdir()
    (out / ".lock").symlink_to(target)
    with pytest.raises(RunLockError, match="is a symlink"):
        RunLock(out).acquire()
    assert not target.exists()


def test_a_hard_linked_or_foreign_lock_is_never_truncated(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    out = tmp_path / "run"
    out.mkdir()
    os.link(notes, out / ".lock")
    with pytest.raises(RunLockError, match="hard link"):
        RunLock(out).acquire()
    assert notes.read_text() == "my notes\n"
    (out / ".lock").unlink()
    (out / ".lock").write_text("not a lock note\n")
    with pytest.raises(RunLockError, match="not a lock file mmrobust wrote"):
        RunLock(out).acquire()
    assert (out / ".lock").read_text() == "not a lock note\n"


def test_a_lock_note_left_by_an_earlier_run_is_reused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with RunLock(out):
        pass
    note = json.loads((out / ".lock").read_text())
    assert set(note) == {"pid", "host", "since"} and note["pid"] == os.getpid()
    with RunLock(out):  # our own note: rewritten, not refused
        assert json.loads((out / ".lock").read_text())["pid"] == os.getpid()


def test_tamper_replaces_a_symlinked_manifest_without_writing_its_target(tmp_path: Path) -> None:
    src = make_synthetic_video(tmp_path / "a.mp4", 40, 25, (64, 48), seed=1)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    out = tmp_path / "o"
    out.mkdir()
    (out / "manifest.jsonl").symlink_to(notes)
    (out / "errors.jsonl").symlink_to(tmp_path / "dangling.txt")
    res = CliRunner().invoke(app, ["tamper", str(src), "--out", str(out), "--effects", "masking"])
    assert res.exit_code == 0, res.output
    assert notes.read_text() == "my notes\n"
    assert not (tmp_path / "dangling.txt").exists()
    manifest = out / "manifest.jsonl"
    assert not manifest.is_symlink() and len(manifest.read_text().splitlines()) == 2


# -- item 9: lock files that used to raise a traceback --------------------------------------


def test_a_lock_that_is_a_directory_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    (out / ".lock").mkdir(parents=True)
    res = CliRunner().invoke(app, _eval(_data(tmp_path), out))
    assert res.exit_code == 2, res.output
    assert "is a directory" in res.output and "Traceback" not in res.output


def test_a_held_lock_with_an_absurd_since_still_names_its_holder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / ".lock").write_text(json.dumps({"pid": 4242, "host": "h", "since": 1e300}))
    fd = os.open(out / ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another holder whose note says it started in year 1e292
    try:
        with pytest.raises(
            RunLockError, match=r"in use by another mmrobust process \(PID 4242 on h\)"
        ):
            RunLock(out).acquire()
    finally:
        os.close(fd)


def test_resuming_on_a_read_only_file_system_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _data(tmp_path)
    out = tmp_path / "run"
    assert CliRunner().invoke(app, _eval(data, out)).exit_code == 0
    real_open = os.open

    def _ro(path: object, flags: int, *args: object, **kw: object) -> int:
        if str(path).endswith(".lock") and flags & (os.O_RDWR | os.O_WRONLY | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", _ro)
    res = CliRunner().invoke(app, _eval(data, out))
    assert res.exit_code == 2, res.output
    assert "read-only file system" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1
