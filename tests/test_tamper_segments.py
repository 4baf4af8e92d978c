"""Shared-segment encoding (tamper/segments.py): which segments exist, and joined outputs frame-exact.

Outputs are x264 crf 18 re-encodes; frames are compared by the index code
each synthetic frame carries (exact).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from mmrobust.datasets.schema import Window
from mmrobust.media import VideoWriter, iter_frames, probe
from mmrobust.tamper import BuildConfig, build, make_effect, read_manifest
from mmrobust.tamper.segments import encode_segments, join
from tests.synth import make_synthetic_video, read_frame_code

N, S, E = 40, 10, 20


def _codes(path: Path) -> list[int | None]:
    return [read_frame_code(f) for f in iter_frames(path)]


def _window(s: int, e: int) -> Window:
    return Window(start_frame=s, end_frame=e, start_s=s / 25, end_s=e / 25)


def test_shared_segments_and_reuse(tmp_path: Path) -> None:
    src = make_synthetic_video(tmp_path / "a.mp4", N, 25, (96, 64))
    effects = {n: make_effect(n) for n in ("dropping", "repetition", "masking")}

    def apply(held: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        return {n: e.apply(held, None) for n, e in effects.items()}  # type: ignore[arg-type]

    work = tmp_path / "work"
    res = encode_segments(
        src,
        _window(S, E),
        ["original", *effects],
        apply,
        work,
        lambda p: VideoWriter(p, 25, 96, 64),
        "original",
    )
    assert res.decoded == N
    # one piece (own encoder) per F = 10 frames: prefix [0, 10), suffix [20, 30) and [30, 40)
    assert [p.frames for p in res.prefix] == [S]
    assert [p.frames for p in res.suffix] == [10, 10]
    # one window encode for the original (reused twice by repetition), one for masking
    assert sorted(p.name for p in work.iterdir()) == [
        "prefix-0000.mp4",
        "suffix-0000.mp4",
        "suffix-0001.mp4",
        "window-3-0000.mp4",
        "window-original-0000.mp4",
    ]
    assert res.plans["dropping"] == [] and res.out_len["dropping"] == 0
    assert res.plans["repetition"] == res.plans["original"] * 2
    assert res.out_len == {"original": 10, "dropping": 0, "repetition": 20, "masking": 10}
    expected = {
        "original": list(range(N)),
        "dropping": [*range(S), *range(E, N)],
        "repetition": [*range(E), *range(S, N)],
    }
    for name, codes in expected.items():
        out = tmp_path / f"{name}.mp4"
        assert join(res, name, out, Fraction(25)) == len(codes)
        assert _codes(out) == codes
    join(res, "masking", tmp_path / "m.mp4", Fraction(25))
    masked = [float(f.mean()) for f in iter_frames(tmp_path / "m.mp4", gray=True)]
    assert max(masked[S:E]) < 20 and min(masked[:S] + masked[E:]) > 40


@pytest.mark.parametrize(
    ("position", "window"), [("start", (0, 25)), ("end", (N - 25, N)), (0.5, (8, 33))]
)
def test_window_at_edges_frame_exact(
    tmp_path: Path, position: object, window: tuple[int, int]
) -> None:
    make_synthetic_video(tmp_path / "src" / "a.mp4", N, 25, (96, 64))
    cfg = BuildConfig(
        effects=(make_effect("dropping"), make_effect("repetition")), position=position
    )  # type: ignore[arg-type]
    report = build([tmp_path / "src"], tmp_path / "out", cfg)
    assert report.errors == [] and report.built == 3
    s, e = window
    entries = {e_.tamper_type: e_ for e_ in read_manifest(tmp_path / "out")}
    out = tmp_path / "out"
    assert _codes(out / entries["original"].video) == list(range(N))
    assert _codes(out / entries["dropping"].video) == [*range(s), *range(e, N)]
    assert _codes(out / entries["repetition"].video) == [*range(e), *range(s, N)]
    assert entries["repetition"].encoder["segmented"] is True
    assert not list((out / "videos").rglob(".*"))  # work folders and temporaries removed


def test_rotated_source_goes_through_rgb_upright(tmp_path: Path) -> None:
    src = make_synthetic_video(tmp_path / "src" / "r.mp4", 30, 25, (96, 64), rotation=90)
    upright = list(iter_frames(src))
    assert upright[0].shape == (96, 64, 3)
    cfg = BuildConfig(effects=(make_effect("rotation"),))
    report = build([tmp_path / "src"], tmp_path / "out", cfg)
    assert report.errors == []
    entries = {e.tamper_type: e for e in read_manifest(tmp_path / "out")}
    orig = tmp_path / "out" / entries["original"].video
    info = probe(orig)
    assert (info.width, info.height, info.rotation) == (64, 96, 0)
    frames = list(iter_frames(orig))
    assert len(frames) == 30
    diff = max(
        float(np.abs(a.astype(int) - b).mean()) for a, b in zip(frames, upright, strict=True)
    )
    assert diff < 6.0


def test_no_segments_full_encodes_same_frames(tmp_path: Path) -> None:
    make_synthetic_video(tmp_path / "src" / "a.mp4", N, 25, (96, 64))
    effects = (make_effect("dropping"), make_effect("repetition"))
    out = tmp_path / "out"
    report = build([tmp_path / "src"], out, BuildConfig(effects=effects, segments=False))
    assert report.errors == [] and report.built == 3
    entries = {e.tamper_type: e for e in read_manifest(out)}
    s, e = N // 2 - 12, N // 2 + 13
    assert _codes(out / entries["original"].video) == list(range(N))
    assert _codes(out / entries["dropping"].video) == [*range(s), *range(e, N)]
    assert _codes(out / entries["repetition"].video) == [*range(e), *range(s, N)]
    assert all("segmented" not in x.encoder for x in entries.values())
    # switching segments on is a different build: every clip is rebuilt, none skipped
    again = build([tmp_path / "src"], out, BuildConfig(effects=effects))
    assert (again.built, again.skipped) == (3, 0)


def test_other_pixel_format_and_stale_work_folder(tmp_path: Path) -> None:
    # yuv444p source: prefix/suffix frames cannot go to the yuv420p encoder directly (RGB path)
    make_synthetic_video(tmp_path / "src" / "a.mp4", N, 25, (96, 64), pix_fmt="yuv444p")
    stale = tmp_path / "out" / "videos" / ".a.part999.seg"
    stale.mkdir(parents=True)
    (stale / "prefix.mp4").write_bytes(b"left by a killed build")
    cfg = BuildConfig(effects=(make_effect("dropping"),))
    report = build([tmp_path / "src"], tmp_path / "out", cfg)
    assert report.errors == [] and not stale.exists()
    entries = {e.tamper_type: e for e in read_manifest(tmp_path / "out")}
    orig = tmp_path / "out" / entries["original"].video
    assert probe(orig).pix_fmt == "yuv420p"
    assert _codes(orig) == list(range(N))
    s, e = N // 2 - 12, N // 2 + 13
    assert _codes(tmp_path / "out" / entries["dropping"].video) == [*range(s), *range(e, N)]
