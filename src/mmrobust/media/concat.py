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

Each encoder also writes in-band data at its start: x264 puts an SEI message
(NAL type 6, its version and options) into its first packet. Kept in every
segment, the count of those messages would tell how many segments a clip was
joined from. For H.264, the SEI units of each later segment's first packet are
removed (FFmpeg ``filter_units`` bitstream filter), so a joined clip carries
exactly one, in its first packet, as a single encode does.
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
from av.bitstream import BitStreamFilterContext
from av.packet import Packet
from av.video.stream import VideoStream

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


def _header(stream: VideoStream) -> tuple[bytes, Fraction]:
    """What must match for two segments to be joined: codec header bytes and time base."""
    tb = stream.time_base
    if tb is None:  # pragma: no cover - demuxers always set it
        raise ValueError("stream without a time base")
    return bytes(stream.codec_context.extradata or b""), Fraction(tb)


_SEI_FILTER = {"h264": "filter_units=remove_types=6"}
"""Bitstream filter removing an encoder's start-of-stream SEI, per codec."""


def _strip_sei(packet: Packet, stream: VideoStream, out: Path) -> Packet:
    """``packet`` without its SEI NAL units (H.264); other codecs unchanged."""
    spec = _SEI_FILTER.get(stream.codec_context.name)
    if spec is None:
        return packet
    bsf = BitStreamFilterContext(spec, stream)
    filtered = [*bsf.filter(packet), *bsf.filter(None)]
    if len(filtered) != 1:
        raise MediaError(out, f"SEI filter returned {len(filtered)} packets for one")
    return filtered[0]


def concat_segments(segments: Sequence[Segment], out: str | Path, fps: Fraction) -> int:
    """Write ``out`` as the segments played one after another, by copying packets.

    Segment ``k`` starts at frame ``sum(frames[:k])``: its packets' pts/dts are
    shifted by that many frame durations (``1 / fps`` s), so decode order and
    presentation order stay monotonic across borders. The first packet of
    every segment after the first loses its SEI units (H.264; see the module
    docstring). The output is written to a temporary name and renamed when
    complete.

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
    tmp = temp_path_for(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    try:
        with av.open(str(parts[0].path)) as first, av.open(str(tmp), mode="w") as dst:
            template = first.streams.video[0]
            header = _header(template)
            step = 1 / (Fraction(fps) * header[1])
            if step.denominator != 1:
                raise MediaError(
                    out, f"frame duration 1/{fps} s is not a whole number of ticks of {header[1]}"
                )
            ost = dst.add_stream_from_template(template)
            offset = 0
            for k, seg in enumerate(parts):
                shift = offset * int(step)
                with av.open(str(seg.path)) as src:
                    ist = src.streams.video[0]
                    if _header(ist) != header:
                        raise MediaError(
                            out,
                            f"segment {seg.path.name} has a different codec header or time base; "
                            "cannot join",
                        )
                    n = 0
                    for packet in src.demux(ist):
                        if packet.size == 0 and packet.pts is None:
                            continue  # demuxer's end-of-stream marker
                        if k > 0 and n == 0:
                            packet = _strip_sei(packet, ist, out)
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
