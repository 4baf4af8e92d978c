"""Joining encoded segments into one clip without re-encoding (stream copy).

The tamper builder encodes the frames every variant shares (before and after
the window) once, each variant's window separately, and joins them here. A
segment is a file holding one video stream that starts with a keyframe and
whose frames reference nothing outside it (each written by its own encoder).
Joining copies the compressed packets, shifting each segment's timestamps by
the duration of the segments before it; a segment may be used more than once
(repetition plays the window twice).

All segments must come from encoders with identical settings: their codec
headers (``extradata``: SPS/PPS in an mp4 ``avcC`` for H.264) must be byte
for byte the same, since the joined file has one header. This is checked.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import av.error

from mmrobust.media._open import describe_av_error
from mmrobust.media.errors import MediaError
from mmrobust.media.writer import temp_path_for


@dataclass(frozen=True)
class Segment:
    """One encoded piece of a clip.

    Attributes:
        path: file holding one video stream, starting with a keyframe.
        frames: number of frames it holds (sets the next segment's time offset).
    """

    path: Path
    frames: int


def _extradata(path: Path) -> tuple[bytes, Fraction]:
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        data = s.codec_context.extradata or b""
        tb = s.time_base
        assert tb is not None
        return bytes(data), Fraction(tb)


def concat_segments(segments: Sequence[Segment], out: str | Path, fps: Fraction) -> int:
    """Write ``out`` as the segments played one after another, by copying packets.

    Segment ``k`` starts at frame ``sum(frames[:k])``: its packets' pts/dts are
    shifted by that many frame durations (``1 / fps`` s), so decode order and
    presentation order stay monotonic across borders. The output is written
    to a temporary name and renamed when complete.

    Args:
        segments: in playing order; repeats allowed; empty segments (0 frames) skipped.
        out: output file (container from the suffix; same as the segments').
        fps: frame rate of every segment.

    Returns:
        Number of packets (= frames) written.

    Raises:
        MediaError: no frames, differing codec headers or time bases, a
            frame count that differs from ``Segment.frames``, or a read/write failure.
    """
    out = Path(out)
    parts = [s for s in segments if s.frames > 0]
    if not parts:
        raise MediaError(out, "no frames to write")
    headers = {s.path: _extradata(s.path) for s in parts}
    first_header = headers[parts[0].path]
    for p, h in headers.items():
        if h != first_header:
            raise MediaError(
                out, f"segment {p.name} has a different codec header or time base; cannot join"
            )
    tb = first_header[1]
    step = Fraction(1, 1) / (Fraction(fps) * tb)
    if step.denominator != 1:
        raise MediaError(out, f"frame duration 1/{fps} s is not a whole number of ticks of {tb}")
    tmp = temp_path_for(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    try:
        with av.open(str(parts[0].path)) as first, av.open(str(tmp), mode="w") as dst:
            ost = dst.add_stream_from_template(first.streams.video[0])
            offset = 0
            for seg in parts:
                shift = offset * int(step)
                n = 0
                with av.open(str(seg.path)) as src:
                    ist = src.streams.video[0]
                    for packet in src.demux(ist):
                        if packet.size == 0 and packet.pts is None:
                            continue  # demuxer's end-of-stream marker
                        if packet.pts is not None:
                            packet.pts += shift
                        if packet.dts is not None:
                            packet.dts += shift
                        packet.stream = ost
                        dst.mux(packet)
                        n += 1
                if n != seg.frames:
                    raise MediaError(
                        out, f"segment {seg.path.name} holds {n} frames, expected {seg.frames}"
                    )
                offset += seg.frames
                written += n
    except av.error.FFmpegError as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise MediaError(out, f"joining segments failed: {describe_av_error(exc)}") from exc
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    os.replace(tmp, out)
    return written


__all__ = ["Segment", "concat_segments"]
