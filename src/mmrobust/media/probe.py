"""``probe``: what a video is (size, fps, frame count by decoding, codec, rotation)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal, NamedTuple

import av
import av.error
from av.container import InputContainer
from av.video.frame import VideoFrame
from av.video.stream import VideoStream

from mmrobust.media._open import (
    decode_video,
    describe_av_error,
    is_mp4_family,
    open_video,
    timestamps_stalled,
)
from mmrobust.media.errors import MediaError

CountMethod = Literal["decode", "demux", "metadata"]


@dataclass(frozen=True)
class VideoInfo:
    """Facts about one video file.

    Attributes:
        path: the file.
        width, height: display size in pixels, i.e. after applying
            ``rotation`` -- the shape of the frames ``iter_frames`` yields.
        fps: frame rate as an exact fraction (``Fraction(30000, 1001)``).
        frame_count: number of frames; counted by decoding unless
            ``probe`` was asked otherwise (container metadata is often wrong,
            e.g. webm has none).
        duration_s: ``frame_count / fps`` in seconds (the frame timeline
            every window in mmrobust uses, not the container's duration).
        codec: decoder name (``"h264"``, ``"mpeg4"``, ``"vp9"``, ...).
        container: demuxer name (``"mov,mp4,m4a,3gp,3g2,mj2"``, ``"matroska,webm"``).
        pix_fmt: stored pixel format (``"yuv420p"``).
        rotation: display-matrix rotation in degrees counter-clockwise,
            normalised to {0, 90, 180, 270} (FFmpeg's ``av_display_rotation_get``
            convention; 0 when there is no side data).
        colorspace: YUV matrix of the first decoded frame, FFmpeg ``AVColorSpace``
            (1 BT.709, 5/6 BT.601, 9 BT.2020; 2 = unspecified, read as BT.601).
        color_range: its range, FFmpeg ``AVColorRange`` (1 limited "tv",
            2 full "pc"/JPEG; 0 = unspecified, read as limited).
    """

    path: Path
    width: int
    height: int
    fps: Fraction
    frame_count: int
    duration_s: float
    codec: str
    container: str
    pix_fmt: str
    rotation: int
    colorspace: int = 2
    color_range: int = 0


def normalise_rotation(degrees: float) -> int:
    """Round a display-matrix angle to the nearest quarter turn in {0, 90, 180, 270}."""
    return round(degrees / 90.0) % 4 * 90


def _frame_packets(container: InputContainer, stream: VideoStream) -> int:
    """Packets of ``stream`` that give a frame: not empty (Theora's "previous
    frame again"), not marked discard (samples an mp4 edit list hides).

    Raises:
        MediaError: an mp4/mov whose decode timestamps stop advancing (see
            ``decode_video``).
    """
    check = is_mp4_family(container.format.name)
    last: int | None = None
    n = 0
    for pkt in container.demux(stream):
        if check and pkt.dts is not None and pkt.size > 0:
            if last is not None and pkt.dts <= last:
                raise timestamps_stalled(container.name)
            last = pkt.dts
        n += pkt.size > 0 and not pkt.is_discard
    return n


def count_in_new_container(path: Path) -> int:
    """``_frame_packets`` of ``path`` read from a container of its own (no seeking back: a raw
    elementary stream such as ``.h264`` cannot seek).

    Raises:
        av.error.FFmpegError: the file cannot be demuxed.
        MediaError: see ``_frame_packets``.
    """
    with av.open(str(path)) as container:
        return _frame_packets(container, container.streams.video[0])


def _stored_samples(path: Path) -> int:
    """Video packets in an mp4/mov file with its edit list ignored.

    An edit list can hide leading samples (a cut made without re-encoding
    keeps the frames from the previous keyframe and hides them; an encoder's
    pre-roll): the header lists them, the demuxer drops them or marks them
    discard, and no frame is presented for them. Counting the samples with
    the edit list ignored tells such a file from one whose data was cut
    short (its header lists samples that are not there). Only called when
    the counts disagree, so ordinary files pay nothing.
    """
    try:
        with av.open(str(path), options={"ignore_editlist": "1"}) as container:
            return _frame_packets(container, container.streams.video[0])
    except av.error.FFmpegError:
        return 0


def stream_fps(path: Path, stream: VideoStream) -> Fraction:
    """The stream's frame rate (average, else guessed, else base rate).

    Raises:
        MediaError: none of them is usable.
    """
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    if not rate or rate <= 0:
        raise MediaError(path, "video stream has no usable frame rate")
    return Fraction(rate)


class PacketCount(NamedTuple):
    """What ``count_packets`` reads without decoding: frames (from packets), fps, codec, container."""

    frames: int
    fps: Fraction
    codec: str
    container: str


def count_packets(path: str | Path) -> PacketCount:
    """Frame count, fps, codec and container of a video without decoding a frame: the frame
    count from its packets (exact for the usual one-frame-per-packet codecs, as
    ``probe(count_frames="demux")``).

    Raises:
        MediaError: unreadable, no video stream, no usable frame rate, or a demux error.
    """
    p = Path(path)
    with open_video(p) as (container, stream):
        fps = stream_fps(p, stream)
        try:
            n = _frame_packets(container, stream)
        except av.error.FFmpegError as exc:
            raise MediaError(p, f"demux failed: {describe_av_error(exc)}") from exc
        return PacketCount(n, fps, stream.codec_context.name, container.format.name)


def truncation(path: Path, format_name: str, listed: int, counted: int) -> str | None:
    """Why an mp4/mov file whose header lists ``listed`` frames but yields ``counted`` is
    broken, else ``None``.

    More than 2 frames short is a truncated file when the samples are not stored
    either (data cut off), and a broken timeline when they are stored but more of
    them are hidden than shown (an edit list hides a cut's leading frames, a few of a
    clip; a video ``mdhd`` timescale of 0 leaves one frame of 90).
    """
    if not is_mp4_family(format_name) or counted >= listed - 2:
        return None
    stored = _stored_samples(path)
    if stored < listed - 2:
        return f"truncated file: the container lists {listed} frames, only {counted} decode"
    if stored - counted > counted:
        return (
            f"broken timeline: the container lists {listed} frames, only {counted} "
            "presented (its edit list or timescale hides the rest)"
        )
    return None


def probe(path: str | Path, *, count_frames: bool | CountMethod = True) -> VideoInfo:
    """Describe the first video stream of ``path``.

    Args:
        path: a video file (any container/codec FFmpeg can demux and decode).
        count_frames: ``True`` or ``"decode"`` counts frames by decoding
            every frame (exact, costs one decode); ``"demux"`` counts video
            packets without decoding (fast, exact for the usual one-frame-per-packet
            codecs; packets an mp4 edit list marks discard are left out, as the
            decoder presents no frame for them); ``False`` or ``"metadata"``
            trusts the container (may be 0, and counts samples an edit list hides).

    Returns:
        A ``VideoInfo``.

    Raises:
        MediaError: the file is missing, empty, not a video (a still image),
            undecodable, has no decodable frame, has no usable frame rate, or
            (mp4/mov) frame timestamps that do not advance, or (mp4/mov, when
            counting) more than 2 frames fewer than its header lists that are
            not a few samples hidden by an edit list (see ``truncation``).
    """
    method: CountMethod
    if count_frames is True:
        method = "decode"
    elif count_frames is False:
        method = "metadata"
    else:
        method = count_frames
    p = Path(path)
    with open_video(p) as (container, stream):
        fps = stream_fps(p, stream)
        codec = stream.codec_context.name
        pix_fmt = stream.codec_context.pix_fmt or "unknown"
        first: VideoFrame | None = None  # size, rotation and colour come from it
        n = 0
        try:
            if method == "decode":
                for frame in decode_video(container, stream):
                    if n == 0:
                        first = frame
                    n += 1
            else:
                for frame in decode_video(container, stream):
                    first = frame
                    break
                else:
                    raise MediaError(p, "no decodable video frame")
                n = count_in_new_container(p) if method == "demux" else int(stream.frames or 0)
        except av.error.FFmpegError as exc:
            raise MediaError(
                p, f"decode failed after {n} frames: {describe_av_error(exc)}"
            ) from exc
        if first is None:  # only a decode count gets here without a frame
            raise MediaError(p, "no decodable video frame")
        listed = int(stream.frames or 0)
        if method != "metadata":
            truncated = truncation(p, container.format.name, listed, n)
            if truncated:
                raise MediaError(p, truncated)
        rotation = normalise_rotation(first.rotation)
        width, height = first.width, first.height
        if rotation in (90, 270):
            width, height = height, width
        return VideoInfo(
            path=p,
            width=width,
            height=height,
            fps=fps,
            frame_count=n,
            duration_s=float(n / fps),
            codec=codec,
            container=container.format.name,
            pix_fmt=pix_fmt,
            rotation=rotation,
            colorspace=int(first.colorspace),
            color_range=int(first.color_range),
        )


__all__ = [
    "CountMethod",
    "PacketCount",
    "VideoInfo",
    "count_in_new_container",
    "count_packets",
    "normalise_rotation",
    "probe",
    "stream_fps",
    "truncation",
]
