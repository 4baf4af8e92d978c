"""Broken videos made byte by byte (issue 27 item 12), for ``tests/test_faults_media.py``.

Each maker writes a small real clip with PyAV and then breaks one thing a container header
says: the data cut after some frames (header intact), every ``stts`` delta 0, the video
``mdhd`` timescale 0, a still image under a video name, a raw H.264 elementary stream.
"""

from __future__ import annotations

import struct
from fractions import Fraction
from pathlib import Path

import av
import cv2

from tests.synth import synthetic_frame


def write_mp4(
    path: Path, n_frames: int = 90, fps: int = 30, size: tuple[int, int] = (64, 48)
) -> Path:
    """``n_frames`` synthetic frames, MPEG-4 Part 2 (no B-frames), ``moov`` before ``mdat``."""
    width, height = size
    with av.open(str(path), "w", options={"movflags": "faststart"}) as out:
        stream = out.add_stream("mpeg4", rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.qscale = 3  # type: ignore[attr-defined]
        for i in range(n_frames):
            frame = av.VideoFrame.from_ndarray(synthetic_frame(i, width, height), format="rgb24")
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return path


def truncate_after(src: Path, dst: Path, frames: int) -> Path:
    """``src`` cut just before the data of frame ``frames`` (its header still lists them all)."""
    with av.open(str(src)) as container:
        positions = [p.pos for p in container.demux(container.streams.video[0]) if p.size]
    dst.write_bytes(src.read_bytes()[: positions[frames]])
    return dst


def _box(data: bytes, name: bytes, start: int = 0) -> int:
    """Offset of the payload of the first ``name`` box at or after ``start``."""
    at = data.index(name, start)
    return at + 4


def zero_stts_deltas(src: Path, dst: Path) -> Path:
    """``src`` with every ``stts`` sample delta of the video track set to 0."""
    data = bytearray(src.read_bytes())
    at = _box(data, b"stts")
    (count,) = struct.unpack(">I", data[at + 4 : at + 8])
    for k in range(count):
        delta = at + 8 + 8 * k + 4
        data[delta : delta + 4] = b"\0\0\0\0"
    dst.write_bytes(bytes(data))
    return dst


def zero_mdhd_timescale(src: Path, dst: Path) -> Path:
    """``src`` with the video track's ``mdhd`` timescale set to 0."""
    data = bytearray(src.read_bytes())
    at = _box(data, b"mdhd")
    version = data[at]
    offset = at + 4 + (16 if version == 1 else 8)
    data[offset : offset + 4] = b"\0\0\0\0"
    dst.write_bytes(bytes(data))
    return dst


def image_as_video(dst: Path, size: tuple[int, int] = (64, 48)) -> Path:
    """A PNG still written under a video name (``dst``, e.g. ``photo.mp4``)."""
    ok, png = cv2.imencode(".png", synthetic_frame(0, size[0], size[1]))
    assert ok
    dst.write_bytes(png.tobytes())
    return dst


def raw_h264(dst: Path, n_frames: int = 50, size: tuple[int, int] = (64, 48)) -> Path:
    """An Annex B H.264 elementary stream (no container: no frame rate, no frame count)."""
    width, height = size
    with av.open(str(dst), "w", format="h264") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(n_frames):
            frame = av.VideoFrame.from_ndarray(synthetic_frame(i, width, height), format="rgb24")
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return dst
