"""Each unreadable media path is named for what it is, on every path that meets it (the tamper
builder's sources, the video opener, a dataset's media check): a named pipe and a link to
``/dev/zero`` (were "file is empty (0 bytes)"), a symlink loop (was "path does not exist"), a
link to nothing, and a file this user may not read (was "video file missing").

Permission denied needs care: the tests run as root, and root reads a ``chmod 000`` file all
the same, so the kernel's refusal is injected where the check asks it (``os.open`` and
``os.stat`` in ``mmrobust.media.pathcheck`` fail with ``EACCES`` for that one path, exactly
what a non-root user gets); the real ``chmod 000`` case runs in a child process without the
capability that lets root read it (``setpriv``), or as is when the tests are not root.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import mmrobust.media.pathcheck as pathcheck
from mmrobust.cli import app
from mmrobust.datasets.checks import media_problem
from mmrobust.media import MediaError
from mmrobust.media._open import open_video
from mmrobust.tamper.sources import discover_sources

LOOP = "is a symbolic link loop (too many levels of links)"


@pytest.fixture
def odd(tmp_path: Path) -> dict[str, Path]:
    """A folder of video-named entries that are no readable video file."""
    d = tmp_path / "src"
    d.mkdir()
    os.mkfifo(d / "fifo.mp4")
    (d / "zero.mp4").symlink_to("/dev/zero")
    (d / "loop.mp4").symlink_to("loop.mp4")
    (d / "dangling.mp4").symlink_to(tmp_path / "gone.mp4")
    return {p.name.removesuffix(".mp4"): p for p in d.iterdir()}


EXPECTED = {
    "fifo": "is a named pipe (FIFO), not a regular file",
    "zero": "is a character device, not a regular file",
    "loop": LOOP,
}


def test_tamper_sources_given_or_found_in_a_folder(odd: dict[str, Path]) -> None:
    folder = odd["fifo"].parent
    for given in ([folder], list(odd.values()), [folder, *odd.values()]):
        files, errors = discover_sources(given)
        assert files == []
        reasons = {Path(e.source).name: e.reason for e in errors}
        assert len(errors) == 4  # each once, also when given and found in the folder
        assert reasons == {
            **{f"{k}.mp4": f"path {v}" for k, v in EXPECTED.items()},
            "dangling.mp4": f"path is a link to {folder.parent / 'gone.mp4'}, which does not exist",
        }


def test_tamper_cli_names_each_and_builds_nothing(odd: dict[str, Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["tamper", *map(str, odd.values()), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 1, result.output
    for name, why in EXPECTED.items():
        assert f"{odd[name]}: path {why}" in result.output
    assert "file is empty" not in result.output
    assert not (tmp_path / "o").exists()
    alone = CliRunner().invoke(app, ["tamper", str(odd["loop"]), "--out", str(tmp_path / "o")])
    assert alone.exit_code == 1 and f"path {LOOP}" in alone.output  # was: no such video


def test_the_opener_and_the_dataset_check(odd: dict[str, Path]) -> None:
    for name, why in EXPECTED.items():
        with pytest.raises(MediaError) as info, open_video(odd[name]):
            pass
        assert info.value.reason == why
    assert (
        media_problem(odd["fifo"])
        == f"video path is a named pipe (FIFO), not a file: {odd['fifo']}"
    )
    assert (
        media_problem(odd["zero"]) == f"video path is a character device, not a file: {odd['zero']}"
    )
    assert media_problem(odd["loop"], "image") == f"image path {LOOP}: {odd['loop']}"
    assert media_problem(odd["dangling"]).startswith("video path is a link to ")  # type: ignore[union-attr]
    assert media_problem(odd["fifo"].parent / "none.mp4") == (
        f"video file missing: {odd['fifo'].parent / 'none.mp4'}"
    )


def _refuse(target: Path, real: Callable[..., Any]) -> Callable[..., Any]:
    def call(path: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(path) == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    return call


@pytest.mark.parametrize("where", ["open", "stat"])
def test_permission_denied_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """``open``: a file this user may not read; ``stat``: one inside a folder it may not enter."""
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"\0" * 64)
    monkeypatch.setattr(pathcheck.os, where, _refuse(clip, getattr(os, where)))
    assert media_problem(clip) == f"video file permission denied: {clip}"  # was: file missing
    with pytest.raises(MediaError, match=r"permission denied$"), open_video(clip):
        pass
    files, errors = discover_sources([clip])
    assert files == [] and [(e.source, e.reason) for e in errors] == [
        (str(clip), "permission denied")
    ]


def test_permission_denied_for_real(tmp_path: Path) -> None:
    """A ``chmod 000`` file read by a process without the capability that lets root read it
    (``setpriv``, as ``tests/test_faults_media.py`` does)."""
    import subprocess
    import sys

    from tests.test_faults_media import _unreadable_runner

    prefix = _unreadable_runner() if os.geteuid() == 0 else []
    if prefix is None:
        pytest.skip("cannot make a file unreadable here (root without setpriv)")
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"\0" * 64)
    clip.chmod(0)
    code = (
        "import sys; from pathlib import Path; from mmrobust.datasets.checks import media_problem; "
    )
    code += "print(media_problem(Path(sys.argv[1])))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    res = subprocess.run([*prefix, sys.executable, "-c", code, str(clip)],
                         capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert res.stdout == f"video file permission denied: {clip}\n", res.stderr
