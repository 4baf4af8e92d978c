"""Files the tool used to trust (issue 27 items 5 and 9): a ``.lock`` or ``manifest.jsonl``
that is a link to another file, a ``.lock`` that is a directory or holds an absurd note, and a
run folder on a read-only file system; each is refused in one line and nothing outside the
run folder is written."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def _read_only(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Make ``folder`` read-only for this process: a read-only bind mount where the test may
    mount (root in a container), else ``os.open``/``Path.open``/``Path.mkdir`` raising EROFS
    for writes under it (root ignores mode bits, so ``chmod`` proves nothing)."""
    if os.geteuid() == 0 and shutil.which("mount"):
        bind = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
        if bind.returncode == 0:
            ro = subprocess.run(
                ["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True
            )
            try:
                if ro.returncode == 0:
                    yield "mount"
                    return
            finally:
                subprocess.run(["umount", str(folder)], capture_output=True)
    root = str(folder)

    def _under(path: object) -> bool:
        p = os.path.abspath(os.fspath(path))  # type: ignore[call-overload]
        return p == root or p.startswith(root + os.sep)

    def _erofs(path: object) -> OSError:
        return OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    real_open, real_path_open, real_mkdir = os.open, Path.open, Path.mkdir
    writes = os.O_RDWR | os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def _os_open(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if flags & writes and _under(path):
            raise _erofs(path)
        return real_open(path, flags, *args, **kw)

    def _path_open(self: Path, mode: str = "r", *args: Any, **kw: Any) -> Any:
        if set(mode) & set("wax+") and _under(self):
            raise _erofs(self)
        return real_path_open(self, mode, *args, **kw)

    def _mkdir(self: Path, *args: Any, **kw: Any) -> None:
        if _under(self) and not self.is_dir():
            raise _erofs(self)
        real_mkdir(self, *args, **kw)

    monkeypatch.setattr(os, "open", _os_open)
    monkeypatch.setattr(Path, "open", _path_open)
    monkeypatch.setattr(Path, "mkdir", _mkdir)
    yield "simulated"


def test_resuming_on_a_read_only_file_system_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _data(tmp_path)
    out = tmp_path / "run"
    assert CliRunner().invoke(app, _eval(data, out)).exit_code == 0
    with contextlib.contextmanager(_read_only)(out, monkeypatch) as how:
        res = CliRunner().invoke(app, _eval(data, out))
    print(f"read-only by {how}")
    assert res.exit_code == 2, res.output
    assert "read-only file system" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_audit_out_on_a_read_only_folder_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = make_synthetic_video(tmp_path / "a.mp4", 40, 25, (64, 48), seed=1)
    built = tmp_path / "built"
    res = CliRunner().invoke(app, ["tamper", str(src), "--out", str(built), "--effects", "masking"])
    assert res.exit_code == 0, res.output
    ro = tmp_path / "ro"
    ro.mkdir()
    with contextlib.contextmanager(_read_only)(ro, monkeypatch) as how:
        res = CliRunner().invoke(app, ["audit", str(built), "--out", str(ro)])
    print(f"read-only by {how}")
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert f"error: cannot write {ro / 'audit.json'}: Read-only file system" in res.output
    assert not (ro / "audit.json").exists()


# -- item 9: report --audit with a hostile audit.json ---------------------------------------


def _audit() -> dict[str, Any]:
    scores = {"f1": 0.5, "f1_per_type": {"masking": 0.5}, "balanced_accuracy": 0.5, "accuracy": 0.5}
    return {
        "dataset": "built", "source": "x", "n_clips": 4, "n_original": 2, "n_tampered": 2,
        "n_groups": 2, "cv": "GroupKFold(2) by source video", "always_yes": scores,
        "unreadable": [],
        "fields": {
            "codec": {**scores, "values": {"original": {"h264": 2}, "tampered": {"h264": 2}}},
            "bitrate": {**scores, "values": {"original": 1200.0}},
        },
        "classifier": {"model": "random forest", **scores},
        "window_coverage": {"policy": "8 segment centres", "per_type": {"masking": 1.0},
                            "overall": 1.0, "windows_known": 2, "windows_derived": 0,
                            "windows_unknown": 0},
    }  # fmt: skip


def test_a_valid_audit_renders_and_a_hostile_one_is_one_line(tmp_path: Path) -> None:
    from mmrobust.report.audit import audit_section, load_audit

    good = tmp_path / "good.json"
    good.write_text(json.dumps(_audit()))
    html = str(audit_section(load_audit(good)).html)
    assert "<td>codec</td><td>50.0</td>" in html and "h264 (2)" in html
    assert "median 1200" in html and "Window coverage (8 segment centres)" in html

    deep = tmp_path / "deep.json"
    deep.write_text('{"always_yes": 1, "window_coverage": ' + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(ValueError, match=r"deep\.json: not valid JSON"):
        load_audit(deep)
    nested = tmp_path / "nested.json"  # parses, but nests past 64 levels
    nested.write_text(json.dumps({**_audit(), "note": _nest(200)}))
    with pytest.raises(ValueError, match="nested deeper than 64 levels"):
        load_audit(nested)
    mistyped = tmp_path / "mistyped.json"
    mistyped.write_text(json.dumps({**_audit(), "always_yes": "high"}))
    with pytest.raises(ValueError, match=r"mistyped.json: not an audit.json .*\(always_yes: "):
        load_audit(mistyped)
    fields = tmp_path / "fields.json"
    fields.write_text(json.dumps({**_audit(), "fields": {"codec": {"values": [1, 2]}}}))
    with pytest.raises(ValueError, match=r"fields.codec.values"):
        load_audit(fields)


def _nest(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def test_report_with_a_mistyped_audit_is_one_line(tmp_path: Path) -> None:
    data = _data(tmp_path)
    run = tmp_path / "run"
    assert CliRunner().invoke(app, _eval(data, run)).exit_code == 0
    bad = tmp_path / "audit.json"
    bad.write_text(json.dumps({**_audit(), "window_coverage": {"per_type": {}}}))
    res = CliRunner().invoke(
        app, ["report", str(run), "--out", str(tmp_path / "r"), "--audit", str(bad)]
    )
    assert res.exit_code == 2, res.output
    assert "not an audit.json written by mmrobust audit (window_coverage.policy" in res.output
    assert "Traceback" not in res.output
