"""Fixed per-source costs of a build (issue 32 item 2): donor frames decoded from the IDR before
them (same pixels as a decode from frame 0), no fsync per manifest write, one swscale context
per thread."""

from __future__ import annotations

import threading
from pathlib import Path

import av
import numpy as np
import pytest

import mmrobust.tamper.donor_frames as df
from mmrobust.media import iter_frames, sample_clips
from mmrobust.media.encoder import shared_reformatter
from mmrobust.media.writer import VideoWriter
from mmrobust.tamper import BuildConfig, build, read_manifest
from tests.synth import make_synthetic_video, read_frame_code, synthetic_frame

W, H = 96, 64


def _x264(path: Path, n: int, params: str) -> Path:
    """``n`` synthetic frames (index code in each) through x264 with ``x264-params``."""
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=25, options={"x264-params": params, "crf": "18"})
        s.width, s.height, s.pix_fmt = W, H, "yuv420p"
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(synthetic_frame(i, W, H), format="rgb24")
            for p in s.encode(frame):
                c.mux(p)
        for p in s.encode(None):
            c.mux(p)
    return path


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_donor_frames_start_at_the_idr_before_them(tmp_path: Path) -> None:
    # IDR every 10 frames, B-frames between: frames [23, 33) decode from the IDR at 20
    src = tmp_path / "closed.mp4"
    with VideoWriter(src, 25, W, H, gop=10) as w:
        for i in range(60):
            w.write(synthetic_frame(i, W, H))
    for start in (10, 23, 30, 50):
        fast = df._from_keyframe(src, start, start + 10, (W, H))
        assert fast is not None, start  # the seek was taken
        assert [read_frame_code(f) for f in fast] == list(range(start, start + 10))
        assert _same(fast, list(iter_frames(src, start=start, stop=start + 10, size=(W, H))))
    # before the second IDR there is nothing to skip: the plain decode is used
    assert df._from_keyframe(src, 5, 15, (W, H)) is None
    assert [read_frame_code(f) for f in df.donor_frames(src, 5, 15, (W, H))] == list(range(5, 15))


def test_donor_frames_fall_back_where_a_seek_could_differ(tmp_path: Path) -> None:
    # open GOP: keyframes after the first are not IDRs (B-frames before them in output order
    # reference the GOP before), so only the decode from frame 0 is trusted
    src = _x264(tmp_path / "open.mp4", 60, "keyint=10:min-keyint=10:scenecut=0:open-gop=1")
    assert df._from_keyframe(src, 33, 43, (W, H)) is None
    got = df.donor_frames(src, 33, 43, (W, H))
    assert [read_frame_code(f) for f in got] == list(range(33, 43))
    # MPEG-4 Part 2 (the released clips' codec): not H.264/HEVC, decoded from frame 0
    mp4v = make_synthetic_video(tmp_path / "m.mp4", 30, 25, (W, H), codec="mpeg4", crf=None)
    assert df._from_keyframe(mp4v, 12, 20, (W, H)) is None
    assert len(df.donor_frames(mp4v, 12, 20, (W, H))) == 8


def test_donor_frames_of_a_real_clip_match_a_full_decode() -> None:
    bikes = sample_clips()["bikes"]  # 250 frames, IDRs at 0, 30, 76, 137, 187, 242
    full = list(iter_frames(bikes, size=(176, 144)))
    assert len(full) == 250
    for start in (31, 100, 152, 220):
        fast = df._from_keyframe(bikes, start, start + 30, (176, 144))
        assert fast is not None and _same(fast, full[start : start + 30]), start


def test_build_writes_no_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # temp file + rename keeps manifest.jsonl whole; an fsync per write cost 15-165 ms on a
    # loaded disk and bought nothing (the clips are not flushed, resume checks their sha256)
    a = make_synthetic_video(tmp_path / "a.mp4", 40, 25, (W, H))
    b = make_synthetic_video(tmp_path / "b.mp4", 40, 25, (W, H), seed=1)

    def no_fsync(fd: int) -> None:
        raise AssertionError("fsync called")

    monkeypatch.setattr("os.fsync", no_fsync)
    report = build([a, b], tmp_path / "out", BuildConfig())
    assert not report.errors and report.built == 12
    assert len(read_manifest(tmp_path / "out")) == 12
    assert not list((tmp_path / "out").glob(".*.tmp"))  # no temporary left behind


def test_one_reformatter_per_thread() -> None:
    here = shared_reformatter()
    assert shared_reformatter() is here
    other: list[object] = []
    t = threading.Thread(target=lambda: other.append(shared_reformatter()))
    t.start()
    t.join()
    assert other and other[0] is not here
