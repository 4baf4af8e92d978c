"""Codec control at the bitstream level: every output of a source has the same keyframe pattern.

A metadata reader (keyframe flags, SEI messages, packet order) must not be able
to tell a tampered clip from its original. Every output of a source with
window ``[s, s + F)`` has keyframes exactly at ``{kF < s} | {s + kF}`` (up to its
own length) and one x264 SEI, in its first packet. Read with PyAV from the
packets (no decoding needed for the keyframe flags).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import pytest

from mmrobust.media import VideoWriter, iter_frames
from mmrobust.media.concat import JoinedClips
from mmrobust.media.encoder import EncoderSettings, FrameEncoder
from mmrobust.tamper import EFFECTS, BuildConfig, ManifestEntry, build, make_effect, read_manifest
from tests.synth import make_synthetic_video, read_frame_code, synthetic_frame

N, FPS, F = 70, 25, 25
S = N // 2 - F // 2  # 23: the middle window [23, 48)
X264_SEI = b"x264 - core"


def _packets(path: Path) -> tuple[list[int], list[int], list[int]]:
    """``(keyframe frame indices, frame indices of packets with an x264 SEI, decode-order pts ranks)``."""
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        packets = [p for p in c.demux(stream) if p.size]
        pts = [p.pts for p in packets]
        assert None not in pts
        rank = {v: i for i, v in enumerate(sorted(pts))}  # type: ignore[type-var]
        keys = sorted(rank[p.pts] for p in packets if p.is_keyframe)  # type: ignore[index]
        sei = sorted(rank[p.pts] for p in packets if X264_SEI in bytes(p))  # type: ignore[index]
        return keys, sei, [rank[v] for v in pts]  # type: ignore[index]


def _nal_units(sample: bytes) -> list[tuple[int, int]]:
    """``(nal type, size)`` of an mp4 H.264 sample (4-byte length prefixes); raises if malformed."""
    units, i = [], 0
    while i < len(sample):
        size = int.from_bytes(sample[i : i + 4], "big")
        assert 2 <= size <= len(sample) - i - 4, f"bad NAL length {size} at {i}"
        units.append((sample[i + 4] & 31, size))
        i += 4 + size
    return units


def _expected_keys(n: int) -> list[int]:
    return sorted({*range(0, S, F), *range(S, n, F)})


@pytest.fixture(scope="session", params=[True, False], ids=["segments", "full-encodes"])
def built(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, ManifestEntry]]:
    root = tmp_path_factory.mktemp(f"keyframes-{request.param}")
    make_synthetic_video(root / "src" / "a.mp4", N, FPS, (96, 64))
    make_synthetic_video(root / "src" / "b.mp4", N, FPS, (96, 64), seed=1)  # substitution donor
    effects = tuple(
        make_effect(n) for n in EFFECTS
    )  # speed: round(25 / 2) = 12 frames, off the grid
    # x264 explicitly: its SEI and NAL structure are checked below (mpeg4, the default: next test)
    config = BuildConfig(effects=effects, segments=request.param, codec="libx264")
    report = build([root / "src"], root / "out", config)
    assert report.errors == []
    entries = {e.tamper_type: e for e in read_manifest(root / "out") if e.id.startswith("a__")}
    assert set(entries) == {"original", *EFFECTS}
    return root / "out", entries


def test_every_variant_has_the_same_keyframe_pattern(
    built: tuple[Path, dict[str, ManifestEntry]],
) -> None:
    out, entries = built
    lengths = {"original": N, "dropping": N - F, "repetition": N + F, "speed": N - F + 12}
    found: dict[str, list[int]] = {}
    n_out: dict[str, int] = {}
    for name, entry in entries.items():
        assert entry.window_source is not None or name == "original"
        assert entry.frames_output == lengths.get(name, N), name
        keys, sei, _ = _packets(out / entry.video)
        found[name] = keys
        n_out[name] = entry.frames_output
        assert keys == _expected_keys(entry.frames_output), name
        assert sei == [0], name  # one encoder signature, as a single encode has
        with av.open(str(out / entry.video)) as c:
            for i, p in enumerate(q for q in c.demux(video=0) if q.size):
                # length-prefixed slices (IDR 5 / non-IDR 1), the SEI (6) only in packet 0:
                # no Annex B start codes left by the SEI filter at piece starts
                kinds = {t for t, _ in _nal_units(bytes(p))}
                assert kinds <= ({1, 5, 6} if i == 0 else {1, 5}), (name, i, kinds)
    assert found["original"] == [0, 23, 48]
    assert found["dropping"] == [0, 23]
    assert found["repetition"] == [0, 23, 48, 73]
    # any two outputs agree on their common length
    for a in found:
        for b in found:
            m = min(n_out[a], n_out[b])
            assert [k for k in found[a] if k < m] == [k for k in found[b] if k < m], (a, b)


def test_outputs_stay_frame_exact(built: tuple[Path, dict[str, ManifestEntry]]) -> None:
    out, entries = built

    def codes(name: str) -> list[int | None]:
        return [read_frame_code(f) for f in iter_frames(out / entries[name].video)]

    e = S + F
    assert codes("original") == list(range(N))
    assert codes("dropping") == [*range(S), *range(e, N)]
    assert codes("repetition") == [*range(e), *range(S, N)]
    assert codes("speed") == [*range(S), *range(S, e - 1, 2), *range(e, N)]  # factor 2: 12 frames
    assert codes("shuffle")[S:e] != list(range(S, e))
    assert sorted(codes("shuffle")[S:e]) == list(range(S, e))  # type: ignore[type-var]


def test_joined_pieces_look_like_one_fixed_gop_encode(tmp_path: Path) -> None:
    """Pieces of one GOP each, joined, have the packet order, keyframe flags and frame
    types of one continuous encode with the same fixed GOP: the borders do not show."""
    gop, n = 20, 70
    frames = [synthetic_frame(i, 96, 64) for i in range(n)]
    with VideoWriter(tmp_path / "one.mp4", FPS, 96, 64, gop=gop, preset="veryfast") as w:
        for f in frames:
            w.write(f)
    settings = EncoderSettings(Fraction(FPS), 96, 64, gop=gop, preset="veryfast")
    with JoinedClips({"j": tmp_path / "joined.mp4"}, settings) as clips:
        for a in range(0, n, gop):
            enc = FrameEncoder(settings)
            piece = clips.piece(["j"], enc.extradata)
            for f in frames[a : a + gop]:
                for p in enc.encode(settings.rgb_frame(f)):
                    piece.add(p)
            for p in enc.flush():
                piece.add(p)
            piece.close(enc.frames)
        assert clips.finish("j") == n

    def types(path: Path) -> list[int]:
        with av.open(str(path)) as c:
            return [int(f.pict_type) for f in c.decode(video=0)]

    one, joined = _packets(tmp_path / "one.mp4"), _packets(tmp_path / "joined.mp4")
    assert one[0] == joined[0] == [0, 20, 40, 60]
    assert one[1] == joined[1] == [0]
    assert one[2] == joined[2]  # decode order: same B-frame structure
    assert 3 in types(tmp_path / "one.mp4")  # B-frames are there to compare
    assert types(tmp_path / "one.mp4") == types(tmp_path / "joined.mp4")


def test_writer_gop_forces_keyframes(tmp_path: Path) -> None:
    with VideoWriter(tmp_path / "g.mp4", FPS, 96, 64, gop=10) as w:
        for i in range(45):
            if i == 23:
                w.force_keyframe()
            w.write(synthetic_frame(i, 96, 64))
    assert w.settings["gop"] == 10
    assert _packets(tmp_path / "g.mp4")[0] == [0, 10, 20, 23, 33, 43]
    with pytest.raises(ValueError, match="gop"):
        VideoWriter(tmp_path / "x.mp4", FPS, 96, 64, gop=0)


def test_default_mpeg4_build_has_the_same_keyframe_pattern_in_every_variant(
    tmp_path: Path,
) -> None:
    make_synthetic_video(tmp_path / "src" / "a.mp4", N, FPS, (96, 64))
    make_synthetic_video(tmp_path / "src" / "b.mp4", N, FPS, (96, 64), seed=1)
    report = build([tmp_path / "src"], tmp_path / "out", BuildConfig())
    assert report.errors == []
    entries = {e.tamper_type: e for e in read_manifest(tmp_path / "out") if e.id.startswith("a__")}
    assert len(entries) == 6
    for name, entry in entries.items():
        assert entry.encoder["codec"] == "mpeg4", name
        keys, sei, _ = _packets(tmp_path / "out" / entry.video)
        assert keys == _expected_keys(entry.frames_output), name
        assert sei == [], name
