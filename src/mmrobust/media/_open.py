"""Opening a video with PyAV, turning every failure into a one-line ``MediaError``.

Shared by every reader (probe, sampling for models, the forensic detector's
frames, the tamper builder), so a file is refused or accepted the same way on
every path (issue 27 item 12): a still image under a video name is refused at
open; an mp4/mov whose frame timestamps do not advance (``stts`` sample
deltas of 0) is refused while its packets are read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import av
import av.error
from av.container import InputContainer
from av.video.frame import VideoFrame
from av.video.stream import VideoStream

from mmrobust.media import limits
from mmrobust.media.errors import MediaError
from mmrobust.media.pathcheck import path_problem

_OPEN_WORDS = {
    "does not exist": "file does not exist",
    "is a folder": "is a directory, not a video file",
}
""":func:`path_problem`'s phrases as the opener has always said them."""

STILL_IMAGE_DEMUXERS = frozenset({"image2", "image2pipe"})
"""FFmpeg demuxers of still images (with every ``*_pipe`` one: ``png_pipe``, ``jpeg_pipe``, ...)."""


def is_mp4_family(format_name: str) -> bool:
    """Whether FFmpeg's demuxer name is the mov/mp4 one (its header lists every sample)."""
    names = format_name.split(",")
    return "mp4" in names or "mov" in names


def timestamps_stalled(path: object) -> MediaError:
    """The error for an mp4/mov whose packets' decode timestamps stop advancing."""
    return MediaError(
        path,
        "frame timestamps do not advance (the container's sample durations are 0): "
        "no frame timeline to sample from",
    )


def describe_av_error(exc: BaseException) -> str:
    """One-line description of a PyAV/FFmpeg exception."""
    if isinstance(exc, av.error.FFmpegError):
        text = exc.strerror or type(exc).__name__
        return f"{text} ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}"


@contextmanager
def open_video(path: str | Path) -> Iterator[tuple[InputContainer, VideoStream]]:
    """Open ``path`` and yield ``(container, first video stream)``.

    Raises:
        MediaError: missing file, directory, a named pipe or device, a link loop, no
            permission to read (:func:`mmrobust.media.pathcheck.path_problem`), zero-byte file, unreadable
            container, a still image (PNG, JPEG, ... under any name), no video
            stream (e.g. audio-only), or a frame size over ``limits.MAX_FRAME_PIXELS``.
    """
    p = Path(path)
    problem = path_problem(p)  # a pipe, a device, a link loop, no permission: said as such
    if problem is not None:
        raise MediaError(p, _OPEN_WORDS.get(problem, problem))
    if p.stat().st_size == 0:
        raise MediaError(p, "file is empty (0 bytes)")
    try:
        container = av.open(str(p), mode="r")
    except (av.error.FFmpegError, OSError, ValueError) as exc:
        raise MediaError(p, f"cannot open as a video container: {describe_av_error(exc)}") from exc
    try:
        name = container.format.name
        if name in STILL_IMAGE_DEMUXERS or name.endswith("_pipe"):
            raise MediaError(p, f"is a still image ({name}), not a video")
        if not container.streams.video:
            kinds = sorted({str(s.type) for s in container.streams}) or ["none"]
            raise MediaError(p, f"no video stream (streams: {', '.join(kinds)})")
        stream = container.streams.video[0]
        reason = limits.too_large(stream.codec_context.width, stream.codec_context.height)
        if reason is not None:
            raise MediaError(p, reason)
        stream.thread_type = "AUTO"
        yield container, stream
    finally:
        container.close()


def decode_video(container: InputContainer, stream: VideoStream) -> Iterator[VideoFrame]:
    """The frames of ``stream`` in presentation order, as ``container.decode(stream)``
    but skipping empty packets inside the stream.

    A zero-length packet with a timestamp is Theora's "the previous frame
    again" (GNOME's help videos have them). Handed to the decoder it reads as
    the end-of-stream signal, and the next packet then fails with "Invalid
    argument", so the whole video was unreadable. FFmpeg's own tools skip such
    packets; so do we: they add no frame (``probe``'s demux count leaves them
    out as well). The final flush packet (no timestamp) still drains the
    decoder.

    In an mp4/mov every decode timestamp must be later than the one before
    (they are the running sum of the ``stts`` sample durations); one that is
    not means durations of 0, and FFmpeg then drops or misorders frames.

    Raises:
        av.error.FFmpegError: a decode error (callers turn it into ``MediaError``).
        MediaError: an mp4/mov whose frame timestamps do not advance.
    """
    fmt = getattr(container, "format", None)  # None: a stand-in container (tests)
    check = fmt is not None and is_mp4_family(fmt.name)
    last: int | None = None
    for packet in container.demux(stream):
        if packet.size == 0 and packet.dts is not None:
            continue
        if check and packet.dts is not None:
            if last is not None and packet.dts <= last:
                raise timestamps_stalled(getattr(container, "name", "?"))
            last = packet.dts
        yield from packet.decode()


__all__ = [
    "STILL_IMAGE_DEMUXERS",
    "decode_video",
    "describe_av_error",
    "is_mp4_family",
    "open_video",
    "timestamps_stalled",
]
