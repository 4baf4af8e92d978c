"""media: probe, streaming decode, encode, sample clips, bad input."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from mmrobust.media import (
    MediaError,
    OpenCVWriter,
    VideoWriter,
    iter_frames,
    probe,
    read_frames,
    sample_clips,
)
from mmrobust.media._open import decode_video
from mmrobust.media.concat import JoinedClips
from mmrobust.media.encoder import EncoderSettings, FrameEncoder
from tests.synth import (
    make_audio_only,
    make_synthetic_video,
    read_frame_code,
    synthetic_frame,
    synthetic_frames,
)

# x264 at crf 18 on the synthetic texture: mean absolute error per frame is ~2.5
# (8-bit units); frames 1 apart differ by > 10. Tolerance used below: 6.
X264_TOL = 6.0


def _mad(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def test_sample_clips_facts() -> None:
    clips = sample_clips()
    assert set(clips) == {"bigbuckbunny", "bikes", "carphone_distorted", "carphone_pristine"}
    facts = {
        "bigbuckbunny": (1280, 720, Fraction(25), 132),
        "bikes": (640, 272, Fraction(25), 250),
        "carphone_pristine": (176, 144, Fraction(30000, 1001), 120),
    }
    for name, (w, h, fps, n) in facts.items():
        info = probe(clips[name])
        assert (info.width, info.height, info.fps, info.frame_count) == (w, h, fps, n)
        assert info.codec == "h264" and info.rotation == 0
        assert info.duration_s == pytest.approx(n / float(fps))


@pytest.mark.parametrize(
    ("suffix", "codec", "decoder", "tol"),
    [
        (".mp4", "libx264", "h264", X264_TOL),
        (".mkv", "libx264", "h264", X264_TOL),
        (".avi", "mpeg4", "mpeg4", 15.0),  # mpeg4 default bitrate is low
        (".webm", "libvpx", "vp8", X264_TOL),
        (".webm", "libvpx-vp9", "vp9", X264_TOL),
        (".mpg", "mpeg2video", "mpeg2video", 15.0),
    ],
)
def test_codecs_and_containers_roundtrip(
    tmp_path: Path, suffix: str, codec: str, decoder: str, tol: float
) -> None:
    path = make_synthetic_video(tmp_path / f"clip{suffix}", 30, 25, (160, 96), codec=codec)
    info = probe(path)
    assert info.codec == decoder
    assert info.frame_count == 30
    assert (info.width, info.height) == (160, 96)
    frames = list(iter_frames(path))
    assert [read_frame_code(f) for f in frames] == list(range(30))
    ref = synthetic_frames(30, (160, 96))
    assert max(_mad(f, r) for f, r in zip(frames, ref, strict=True)) < tol


def test_fractional_fps_and_demux_count(tmp_path: Path) -> None:
    path = make_synthetic_video(tmp_path / "ntsc.mp4", 45, Fraction(30000, 1001))
    info = probe(path)
    assert info.fps == Fraction(30000, 1001)
    assert info.frame_count == 45
    assert info.duration_s == pytest.approx(45 * 1001 / 30000)
    assert probe(path, count_frames="demux").frame_count == 45


def test_odd_size_is_padded(tmp_path: Path) -> None:
    path = tmp_path / "odd.mp4"
    frames = synthetic_frames(5, (161, 97))
    with VideoWriter(path, 25, 161, 97) as w:
        for f in frames:
            w.write(f)
    assert w.padded and (w.enc_width, w.enc_height) == (162, 98)
    info = probe(path)
    assert (info.width, info.height) == (162, 98)
    out = read_frames(path, [0, 4])
    # content sits top-left; the padded column repeats the last one
    assert _mad(out[1][:97, :161], frames[4]) < X264_TOL
    assert _mad(out[1][:97, 161], out[1][:97, 160]) < X264_TOL


def test_rotation_metadata_is_applied(tmp_path: Path) -> None:
    # display matrix +90 (counter-clockwise): players show the stored frame turned 90 deg CCW
    path = make_synthetic_video(tmp_path / "rot.mp4", 6, 25, (160, 96), rotation=90)
    info = probe(path)
    assert info.rotation == 90
    assert (info.width, info.height) == (96, 160)
    up = next(iter_frames(path))
    raw = next(iter_frames(path, autorotate=False))
    assert up.shape == (160, 96, 3) and raw.shape == (96, 160, 3)
    assert np.array_equal(up, np.rot90(raw, 1))
    assert read_frame_code(raw) == 0
    small = next(iter_frames(path, size=(48, 80)))
    assert small.shape == (80, 48, 3)


def test_iter_frames_range_size_gray(tmp_path: Path) -> None:
    path = make_synthetic_video(tmp_path / "c.mp4", 20, 25, (160, 96))
    got = list(iter_frames(path, start=5, stop=9))
    assert [read_frame_code(f) for f in got] == [5, 6, 7, 8]
    small = list(iter_frames(path, stop=2, size=(80, 48)))
    assert small[0].shape == (48, 80, 3) and small[0].dtype == np.uint8
    gray = next(iter_frames(path, gray=True))
    assert gray.shape == (96, 160) and gray.dtype == np.uint8
    assert read_frame_code(gray) == 0
    assert list(iter_frames(path, start=3, stop=3)) == []
    with pytest.raises(ValueError):
        list(iter_frames(path, start=4, stop=2))


def test_read_frames_order_and_range(tmp_path: Path) -> None:
    path = make_synthetic_video(tmp_path / "c.mp4", 12, 25, (160, 96))
    out = read_frames(path, [7, 2, 7, 0])
    assert out.shape == (4, 96, 160, 3) and out.dtype == np.uint8
    assert [read_frame_code(f) for f in out] == [7, 2, 7, 0]
    with pytest.raises(MediaError, match="out of range: the clip has 12 frames"):
        read_frames(path, [3, 12])


def test_writer_abort_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "x.mp4"
    with pytest.raises(RuntimeError), VideoWriter(path, 25, 64, 64) as w:
        w.write(np.zeros((64, 64, 3), np.uint8))
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="expected a"), VideoWriter(path, 25, 64, 64) as w:
        w.write(np.zeros((32, 64, 3), np.uint8))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(MediaError, match="no frames were written"), VideoWriter(path, 25, 64, 64):
        pass
    assert list(tmp_path.iterdir()) == []


def test_opencv_writer_truncates_fps(tmp_path: Path) -> None:
    path = tmp_path / "cv.mp4"
    frames = synthetic_frames(10, (160, 96))
    with OpenCVWriter(path, Fraction(30000, 1001), 160, 96) as w:
        for f in frames:
            w.write(f)
    info = probe(path)
    assert info.codec == "mpeg4" and info.fps == 29 and info.frame_count == 10
    assert [read_frame_code(f) for f in iter_frames(path)] == list(range(10))


# --- bad input ---------------------------------------------------------------------------


def _faststart_truncated(path: Path) -> Path:
    full = path.with_name("full.mp4")
    with av.open(str(full), "w", options={"movflags": "faststart"}) as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt = 160, 96, "yuv420p"
        for f in synthetic_frames(40, (160, 96)):
            for pkt in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                c.mux(pkt)
        for pkt in s.encode(None):
            c.mux(pkt)
    data = full.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p, "file does not exist"),
        (lambda p: (p.write_bytes(b""), p)[1], "file is empty"),
        (lambda p: (p.write_text("not a video\n"), p)[1], "cannot open as a video container"),
        (make_audio_only, "no video stream"),
        (_faststart_truncated, "truncated file: the container lists 40 frames"),
    ],
    ids=["missing", "zero-byte", "text", "audio-only", "truncated-faststart"],
)
def test_bad_input_is_one_line_media_error(tmp_path: Path, make, reason: str) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path / "bad.mp4")
    with pytest.raises(MediaError) as info:
        probe(path)
    assert reason in str(info.value)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith(str(path))


def _hide_leading_frames(src: Path, dst: Path, hidden: int) -> Path:
    """Remux ``src`` (one stream, no B-frames) with every timestamp moved ``hidden``
    frames earlier: mp4's muxer writes an edit list that starts the clip at
    ``src``'s frame ``hidden``, as a cut made without re-encoding does; the
    frames before it stay in the file (back to the keyframe) but are not shown."""
    with av.open(str(src)) as inp, av.open(str(dst), "w") as out:
        ist = inp.streams.video[0]
        ost = out.add_stream_from_template(ist)
        step = int(1 / (ist.average_rate * ist.time_base))
        for pkt in inp.demux(ist):
            if pkt.dts is None:
                continue
            pkt.pts -= hidden * step
            pkt.dts -= hidden * step
            pkt.stream = ost
            out.mux(pkt)
    return dst


def test_frames_hidden_by_an_edit_list_are_not_counted(tmp_path: Path) -> None:
    # found on a real clip (an .m4v whose header lists 287 frames,
    # 138 of them hidden): the demux count took it for 287 frames, so as a
    # substitution donor it was cut past its end, and the decode count called
    # it a truncated file
    src = make_synthetic_video(tmp_path / "src.mp4", 40, fps=25)
    cut = _hide_leading_frames(src, tmp_path / "cut.mp4", 15)
    with av.open(str(cut)) as c:
        assert c.streams.video[0].frames == 40  # the header still lists them all
    for method in ("demux", "decode"):
        assert probe(cut, count_frames=method).frame_count == 25, method  # type: ignore[arg-type]
    assert [read_frame_code(f) for f in iter_frames(cut)] == list(range(15, 40))
    assert probe(cut, count_frames="metadata").frame_count == 40


def test_truncated_mp4_with_index_at_end(tmp_path: Path) -> None:
    src = make_synthetic_video(tmp_path / "ok.mp4", 30)
    bad = tmp_path / "cut.mp4"
    bad.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    with pytest.raises(MediaError, match="cannot open as a video container"):
        list(iter_frames(bad))


# --- joining pieces (media/concat.py) ----------------------------------------------------


def _encode_piece(settings: EncoderSettings, first: int, n: int) -> tuple[bytes, list[av.Packet]]:
    enc = FrameEncoder(settings)
    packets = []
    for i in range(first, first + n):
        packets += enc.encode(settings.rgb_frame(synthetic_frame(i, settings.width, 64)))
    return enc.extradata, packets + enc.flush()


def _append(clips: JoinedClips, names: list[str], piece: tuple[bytes, list[av.Packet]]) -> None:
    p = clips.piece(names, piece[0])
    for packet in piece[1]:
        p.add(packet)
    p.close(len(piece[1]))


def test_joined_clips_share_and_repeat_pieces(tmp_path: Path) -> None:
    settings = EncoderSettings(Fraction(25), 96, 64)
    a, b, c = (
        _encode_piece(settings, 0, 7),
        _encode_piece(settings, 7, 5),
        _encode_piece(settings, 12, 6),
    )
    out = {"x": tmp_path / "x.mp4", "y": tmp_path / "y.mp4"}
    with JoinedClips(out, settings) as clips:
        _append(clips, ["x", "y"], a)
        _append(clips, ["x", "y"], b)
        _append(clips, ["y"], b)  # the same packets again: y plays b twice
        _append(clips, ["x", "y"], c)
        assert clips.frames("x") == 18 and clips.frames("y") == 23
        assert clips.finish("x") == 18 and clips.finish("y") == 23
    expected = {
        "x": list(range(18)),
        "y": [*range(7), *range(7, 12), *range(7, 12), *range(12, 18)],
    }
    for name, codes in expected.items():
        frames = list(iter_frames(out[name]))
        assert [read_frame_code(f) for f in frames] == codes
        assert (
            max(_mad(f, synthetic_frame(i, 96, 64)) for f, i in zip(frames, codes, strict=True))
            < X264_TOL
        )
        info = probe(out[name])
        assert info.frame_count == len(codes) and info.fps == 25 and info.codec == "h264"
        with av.open(str(out[name])) as c_:
            packets = [p for p in c_.demux(c_.streams.video[0]) if p.size]
        dts = [p.dts for p in packets]
        assert dts == sorted(dts) and len(set(dts)) == len(dts)
        keyframes = [i for i, p in enumerate(packets) if p.is_keyframe]
        assert keyframes[:4] == ([0, 7, 12] if name == "x" else [0, 7, 12, 17])
        assert [i for i, p in enumerate(packets) if b"x264 - core" in bytes(p)] == [0]
    assert not list(tmp_path.glob(".*part*"))


def test_joined_clips_reject_other_headers_and_wrong_counts(tmp_path: Path) -> None:
    settings = EncoderSettings(Fraction(25), 96, 64)
    a = _encode_piece(settings, 0, 4)
    other = _encode_piece(EncoderSettings(Fraction(25), 128, 64), 4, 4)
    out = tmp_path / "joined.mp4"
    with JoinedClips({"o": out}, settings) as clips:
        assert a[0] == clips.header != other[0]
        with pytest.raises(MediaError, match="different codec header"):
            clips.piece(["o"], other[0])
        p = clips.piece(["o"], a[0])
        with pytest.raises(MediaError, match="taking another piece"):
            clips.piece(["o"], a[0])
        for packet in a[1]:
            p.add(packet)
        with pytest.raises(MediaError, match="holds 4 packets, expected 5"):
            p.close(5)
    assert not out.exists() and not list(tmp_path.glob(".*part*"))  # left unfinished: discarded
    with JoinedClips({"o": out}, settings) as clips, pytest.raises(MediaError, match="no frames"):
        clips.finish("o")
    assert not out.exists() and not list(tmp_path.glob(".*part*"))


def test_writer_mpeg4_qscale_sets_the_quantiser(tmp_path: Path) -> None:
    frames = [synthetic_frame(i, 96, 64) for i in range(8)]
    sizes, errors = {}, {}
    for q in (2, 12):
        with VideoWriter(tmp_path / f"q{q}.mp4", 25, 96, 64, codec="mpeg4", qscale=q) as w:
            for f in frames:
                w.write(f)
        assert w.settings["qscale"] == q and w.settings["codec"] == "mpeg4"
        sizes[q] = (tmp_path / f"q{q}.mp4").stat().st_size
        errors[q] = max(
            _mad(a, b) for a, b in zip(iter_frames(tmp_path / f"q{q}.mp4"), frames, strict=True)
        )
    assert sizes[2] > 1.5 * sizes[12] and errors[2] < errors[12]
    with pytest.raises(ValueError, match="qscale"):
        VideoWriter(tmp_path / "x.mp4", 25, 96, 64, codec="mpeg4", qscale=32)


def test_decode_skips_empty_packets_inside_the_stream() -> None:
    """A zero-length packet with a timestamp (Theora's "previous frame again",
    as in GNOME's help videos) must not reach the decoder: there it reads as
    end of stream and the next packet fails, which made such videos
    unreadable (checked on lightsoff.ogv: 218 frames now, an error before).
    The final flush packet (no timestamp) is still decoded."""

    class Packet:
        def __init__(self, size: int, dts: int | None, frames: list[str]) -> None:
            self.size, self.dts, self.frames, self.sent = size, dts, frames, False

        def decode(self) -> list[str]:
            self.sent = True
            return self.frames

    packets = [
        Packet(120, 0, ["frame 0"]),
        Packet(0, 1, ["would end the stream"]),
        Packet(90, 2, []),  # a decoder delay: its frame comes with the next packet
        Packet(95, 3, ["frame 2"]),
        Packet(0, None, ["frame 3 (flushed)"]),
    ]

    class Container:
        def demux(self, stream: object) -> Iterator[Packet]:
            assert stream == "video stream"
            return iter(packets)

    frames = list(decode_video(Container(), "video stream"))  # type: ignore[arg-type]
    assert frames == ["frame 0", "frame 2", "frame 3 (flushed)"]
    assert [p.sent for p in packets] == [True, False, True, True, True]
