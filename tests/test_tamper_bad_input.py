"""Bad input: every broken source gets a one-line reason; the build goes on (issue 2, "Bad input")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import VideoWriter
from mmrobust.tamper import read_manifest
from tests.synth import make_audio_only, make_synthetic_video


def _one_by_one(path: Path) -> None:
    with VideoWriter(path, 25, 1, 1, codec="ffv1", crf=None, pix_fmt="yuv444p") as w:
        for _ in range(40):
            w.write(np.full((1, 1, 3), 200, np.uint8))


def test_bad_sources_are_reported_and_good_ones_built(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    make_synthetic_video(src / "good1.mp4", 40, 25, (64, 48), seed=1)
    make_synthetic_video(src / "good2.mp4", 40, 25, (64, 48), seed=2)
    (src / "zero.mp4").write_bytes(b"")
    (src / "text.mp4").write_text("this is not a video\n")
    full = make_synthetic_video(tmp_path / "full.mp4", 40, 25, (64, 48))
    (src / "truncated.mp4").write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    make_audio_only(src / "audio.mp4", n_frames=5)
    _one_by_one(src / "tiny.mkv")
    make_synthetic_video(src / "short.mp4", 20, 25, (64, 48))  # 0.8 s < 1 s window
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(
        app,
        [
            "tamper",
            str(src),
            str(tmp_path / "missing.mp4"),
            str(empty),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 0, result.output
    errors = [json.loads(x) for x in (tmp_path / "o" / "errors.jsonl").read_text().splitlines()]
    # sorted by source path, not in the order sources were read or workers finished
    assert [e["source"] for e in errors] == sorted(e["source"] for e in errors)
    reasons = {Path(e["source"]).name: e["reason"] for e in errors}
    assert reasons == {
        "zero.mp4": "file is empty (0 bytes)",
        "text.mp4": reasons["text.mp4"],
        "truncated.mp4": reasons["truncated.mp4"],
        "audio.mp4": "no video stream (streams: audio)",
        "tiny.mkv": "frame size 1x1 is below the minimum 16x16",
        "short.mp4": reasons["short.mp4"],
        "missing.mp4": "path does not exist",
        "empty": reasons["empty"],
    }
    assert reasons["text.mp4"].startswith("cannot open as a video container")
    assert reasons["truncated.mp4"].startswith("cannot open as a video container")
    assert reasons["short.mp4"].startswith("clip has 20 frames, not longer than the 25-frame")
    assert reasons["empty"].startswith("folder holds no video files")
    assert all("\n" not in r for r in reasons.values())
    for name in reasons:  # one line each on the console too
        assert name in result.output
    built = read_manifest(tmp_path / "o")
    assert len(built) == 12 and {Path(e.source).name for e in built} == {"good1.mp4", "good2.mp4"}


def test_nothing_buildable_exits_non_zero(tmp_path: Path) -> None:
    (tmp_path / "zero.mp4").write_bytes(b"")
    result = CliRunner().invoke(
        app, ["tamper", str(tmp_path / "zero.mp4"), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 1
    assert "file is empty" in result.output
    assert "nothing built (1 error)" in result.output
    assert not (tmp_path / "o").exists()  # no empty build folder left behind


def test_missing_source_folder_leaves_no_build_folder(tmp_path: Path) -> None:
    """Not one source exists: a usage error (exit 2, one line), as a mistyped path is on every
    command (``tests/test_cli_surface.py``); a missing path among others is one error line."""
    result = CliRunner().invoke(
        app, ["tamper", str(tmp_path / "no_such_dir"), "--out", str(tmp_path / "X")]
    )
    assert result.exit_code == 2
    assert result.output == f"error: no such video or folder: {tmp_path / 'no_such_dir'}\n"
    assert not (tmp_path / "X").exists()


def test_bad_options_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["tamper", str(tmp_path), "--out", str(tmp_path / "o"), "--effects", "droping"]
    )
    assert result.exit_code == 2 and "Did you mean: dropping" in result.output


def test_folder_sources_include_transport_streams_and_theora(tmp_path: Path) -> None:
    from mmrobust.tamper.sources import discover_sources

    for name in ("a.ts", "b.ogv", "c.MP4", "notes.txt", ".hidden.mp4"):
        (tmp_path / name).write_bytes(b"x")
    files, errors = discover_sources([tmp_path])
    assert [f.name for f in files] == ["a.ts", "b.ogv", "c.MP4"]
    assert errors == []
