"""Shared-piece encoding (tamper/segments.py): which pieces are encoded, and outputs frame-exact.

Outputs are x264 crf 18 re-encodes; frames are compared by the index code
each synthetic frame carries (exact).
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from mmrobust.media import iter_frames, probe
from mmrobust.media.encoder import EncoderSettings
from mmrobust.schema import Window
from mmrobust.tamper import BuildConfig, build, make_effect, read_manifest
from mmrobust.tamper.segments import Encode, encode_variants
from tests.synth import make_synthetic_video, read_frame_code

N, S, E = 40, 10, 20


def _codes(path: Path) -> list[int | None]:
    return [read_frame_code(f) for f in iter_frames(path)]


def _window(s: int, e: int) -> Window:
    return Window(start_frame=s, end_frame=e, start_s=s / 25, end_s=e / 25)


def test_shared_pieces_and_reuse(tmp_path: Path) -> None:
    src = make_synthetic_video(tmp_path / "a.mp4", N, 25, (96, 64))
    effects = {n: make_effect(n) for n in ("dropping", "repetition", "masking")}

    def apply(held: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        return {n: e.apply(held, None) for n, e in effects.items()}  # type: ignore[arg-type]

    names = ["original", *effects]
    outputs = {n: tmp_path / "out" / f"{n}.mp4" for n in names}
    settings = EncoderSettings(Fraction(25), 96, 64, gop=E - S)
    built = encode_variants(src, _window(S, E), outputs, apply, settings, "original", expected=N)
    assert built.decoded == N and built.errors == {}
    # one encoder per F = 10 frames: prefix [0, 10) into every output; the original's window
    # once, into original and repetition (which plays its packets a second time, no encode);
    # masking's window; suffix [20, 30) and [30, 40) into every output
    every = tuple(names)
    assert built.encodes == [
        Encode("prefix", every, 10),
        Encode("window-original", ("original", "repetition"), 10),
        Encode("window-masking", ("masking",), 10),
        Encode("suffix", every, 10),
        Encode("suffix", every, 10),
    ]
    assert built.out_len == {"original": 10, "dropping": 0, "repetition": 20, "masking": 10}
    expected = {
        "original": list(range(N)),
        "dropping": [*range(S), *range(E, N)],
        "repetition": [*range(E), *range(S, N)],
    }
    assert built.frames == {"original": N, "dropping": N - 10, "repetition": N + 10, "masking": N}
    for name, codes in expected.items():
        assert _codes(outputs[name]) == codes
    masked = [float(f.mean()) for f in iter_frames(outputs["masking"], gray=True)]
    assert max(masked[S:E]) < 20 and min(masked[:S] + masked[E:]) > 40
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        f"{n}.mp4" for n in names
    )  # nothing else written: no segment files, no temporaries


def test_decode_count_mismatch_writes_nothing(tmp_path: Path) -> None:
    src = make_synthetic_video(tmp_path / "a.mp4", N, 25, (96, 64))
    out = tmp_path / "out"
    built = encode_variants(
        src,
        _window(S, E),
        {"original": out / "original.mp4"},
        lambda held: {},
        EncoderSettings(Fraction(25), 96, 64, gop=E - S),
        "original",
        expected=N + 5,
    )
    assert built.decoded == N and built.frames == {}
    assert list(out.iterdir()) == []  # temporaries removed, nothing renamed into place
    with pytest.raises(ValueError, match="gop"):
        encode_variants(
            src,
            _window(S, E),
            {"original": out / "o.mp4"},
            lambda held: {},
            EncoderSettings(Fraction(25), 96, 64, gop=7),
            "original",
        )


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


def _luma(path: Path) -> list[np.ndarray]:
    """The stored luma plane of every frame (no conversion), float32."""
    out = []
    with av.open(str(path)) as c:
        for f in c.decode(video=0):
            plane = f.planes[0]
            rows = np.frombuffer(bytes(plane), np.uint8).reshape(-1, plane.line_size)
            out.append(rows[: f.height, : f.width].astype(np.float32))
    return out


@pytest.mark.parametrize(("colorspace", "color_range"), [(1, 1), (5, 2)])
def test_window_frames_keep_the_source_colour(
    tmp_path: Path, colorspace: int, color_range: int
) -> None:
    """Prefix and suffix frames pass from the decoder to the encoder; window
    frames go through RGB. Both must store the source's luma: a BT.709 source
    once came back about 4 levels darker inside the window only, and a
    full-range one with its contrast squeezed (a step at both window edges
    that any detector, or model, could see in the original clip)."""
    src = make_synthetic_video(
        tmp_path / "src" / "a.mp4", N, 25, (96, 64), colorspace=colorspace, color_range=color_range
    )
    info = probe(src)
    assert (info.colorspace, info.color_range) == (colorspace, color_range)
    out = tmp_path / "out"
    cfg = BuildConfig(effects=(make_effect("rotation"),), codec="libx264", crf=18)
    report = build([tmp_path / "src"], out, cfg)
    assert report.errors == []
    entries = {e.tamper_type: e for e in read_manifest(out)}
    orig = out / entries["original"].video
    s, e = N // 2 - 12, N // 2 + 13
    shift = [float((o - i).mean()) for o, i in zip(_luma(orig), _luma(src), strict=True)]
    inside, outside = np.mean(shift[s:e]), np.mean(shift[:s] + shift[e:])
    assert abs(inside - outside) < 0.3, (inside, outside)
    assert max(abs(x) for x in shift) < 0.5
    # decoded RGB follows: the original plays the source's colours in and out of the window
    pairs = zip(iter_frames(orig), iter_frames(src), strict=True)
    rgb = [float((a.astype(float) - b).mean()) for a, b in pairs]
    assert abs(np.mean(rgb[s:e]) - np.mean(rgb[:s] + rgb[e:])) < 0.3, rgb
    assert max(abs(x) for x in rgb) < 0.5, rgb
    # the source's matrix and range are the encoder's, and the clip is tagged with them
    enc = entries["original"].encoder
    assert (enc["colorspace"], enc["color_range"]) == (colorspace, color_range)
    assert (probe(orig).colorspace, probe(orig).color_range) == (colorspace, color_range)


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


def test_mpeg4_fixed_quantiser_build_frame_exact(tmp_path: Path) -> None:
    """The released writer's codec (MPEG-4 Part 2) through the shared pieces: no SEI to strip."""
    make_synthetic_video(tmp_path / "src" / "a.mp4", N, 25, (96, 64))
    effects = (make_effect("dropping"), make_effect("repetition"))
    cfg = BuildConfig(effects=effects, codec="mpeg4", qscale=3)
    report = build([tmp_path / "src"], tmp_path / "out", cfg)
    assert report.errors == [] and report.built == 3
    entries = {e.tamper_type: e for e in read_manifest(tmp_path / "out")}
    out = tmp_path / "out"
    s, e = N // 2 - 12, N // 2 + 13
    assert _codes(out / entries["original"].video) == list(range(N))
    assert _codes(out / entries["repetition"].video) == [*range(e), *range(s, N)]
    assert probe(out / entries["dropping"].video).codec == "mpeg4"
    assert entries["original"].encoder["qscale"] == 3
    with pytest.raises(ValueError, match="qscale"):
        BuildConfig(qscale=0)


def test_mpeg4_build_of_a_phone_frame_rate(tmp_path: Path) -> None:
    """A rate whose time base MPEG-4 Part 2 cannot store (numerator > 65535,
    as phones' average rates are) is written at the nearest rate it can:
    the default build once failed on such a source with "Invalid argument"."""
    fps = Fraction(519168, 19667)  # 26.397 fps, from a phone video
    make_synthetic_video(tmp_path / "src" / "a.mp4", N, fps, (96, 64))
    cfg = BuildConfig(effects=(make_effect("dropping"),), codec="mpeg4", qscale=3)
    report = build([tmp_path / "src"], tmp_path / "out", cfg)
    assert report.errors == [] and report.built == 2
    entries = {e.tamper_type: e for e in read_manifest(tmp_path / "out")}
    out = tmp_path / "out" / entries["original"].video
    assert entries["original"].fps == "55990/2121"
    assert abs(float(probe(out).fps) - float(fps)) < 1e-6
    assert _codes(out) == list(range(N))


def test_failure_mid_source_leaves_no_file(tmp_path: Path) -> None:
    """An effect failing after the prefix was muxed: every open output is discarded."""
    src = make_synthetic_video(tmp_path / "a.mp4", N, 25, (96, 64))
    out = tmp_path / "out"

    def broken(held: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
        raise ValueError("effect failed")

    with pytest.raises(ValueError, match="effect failed"):
        encode_variants(
            src,
            _window(S, E),
            {"original": out / "original.mp4", "masking": out / "masking.mp4"},
            broken,
            EncoderSettings(Fraction(25), 96, 64, gop=E - S),
            "original",
        )
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("n_frames", [33, 34])  # window start 11 / 12: a 1- / 2-frame last piece
def test_short_last_piece_before_the_window_joins(tmp_path: Path, n_frames: int) -> None:
    # 10 fps, F = 10: the frames before the window end in a piece of 1 (or 2)
    # frames. x264 starts a 1-2 frame piece at dts 0 but a longer one at dts -2;
    # joined as they were, two packets got the same dts and the muxer refused
    # every output (found on real clips: OpenCV's box.mp4 and vtest.avi at the middle).
    src = make_synthetic_video(tmp_path / "a.mp4", n_frames, 10, (96, 64))
    out = tmp_path / "out"
    cfg = BuildConfig(effects=tuple(make_effect(n) for n in ("dropping", "repetition", "masking")))
    report = build([src], out, cfg)
    assert report.errors == [] and report.built == 4
    rows = {e.tamper_type: e for e in read_manifest(out)}
    assert set(rows) == {"original", "dropping", "repetition", "masking"}
    s = n_frames // 2 - 5
    codes = {k: _codes(out / r.video) for k, r in rows.items()}
    assert codes["original"] == list(range(n_frames))
    assert codes["dropping"] == [*range(s), *range(s + 10, n_frames)]
    assert codes["repetition"] == [*range(s + 10), *range(s, n_frames)]
    for r in rows.values():
        with av.open(str(out / r.video)) as c:
            dts = [p.dts for p in c.demux(video=0) if p.size]
        assert all(b > a for a, b in itertools.pairwise(dts))
