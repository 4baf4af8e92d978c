"""Opening a video with PyAV, turning every failure into a one-line ``MediaError``."""

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
        MediaError: missing file, directory, zero-byte file, unreadable
            container, no video stream (e.g. audio-only), or a frame size over
            ``limits.MAX_FRAME_PIXELS``.
    """
    p = Path(path)
    if not p.exists():
        raise MediaError(p, "file does not exist")
    if p.is_dir():
        raise MediaError(p, "is a directory, not a video file")
    if p.stat().st_size == 0:
        raise MediaError(p, "file is empty (0 bytes)")
    try:
        container = av.open(str(p), mode="r")
    except (av.error.FFmpegError, OSError, ValueError) as exc:
        raise MediaError(p, f"cannot open as a video container: {describe_av_error(exc)}") from exc
    try:
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

    Raises:
        av.error.FFmpegError: a decode error (callers turn it into ``MediaError``).
    """
    for packet in container.demux(stream):
        if packet.size == 0 and packet.dts is not None:
            continue
        yield from packet.decode()


__all__ = ["decode_video", "describe_av_error", "open_video"]
