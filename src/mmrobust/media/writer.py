"""Encoding frames to a file: ``VideoWriter`` (PyAV) and ``OpenCVWriter`` (released-dataset style).

Both write to a hidden temporary file next to the target and rename it into
place only when closed without error, so a crash never leaves a half-written
clip under the final name.
"""

from __future__ import annotations

import contextlib
import os
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TypeVar

import av
import av.error
import cv2
import numpy as np
from av.video.frame import PictureType, VideoFrame
from av.video.stream import VideoStream

from mmrobust.media._open import describe_av_error
from mmrobust.media.errors import MediaError

DEFAULT_CODEC = "libx264"
DEFAULT_CRF = 18
"""x264 constant rate factor: visually lossless; tests rely on it (tolerances stated there)."""
DEFAULT_PRESET = "fast"

_CRF_CODECS = {"libx264", "libx265", "libvpx", "libvpx-vp9"}
_PRESET_CODECS = {"libx264", "libx265"}
_SUBSAMPLED = {"yuv420p", "yuvj420p", "yuv422p", "nv12"}


X264_REPRODUCIBLE = "mbtree=0"
"""x264 options added to every libx264 encode so that it is bit-reproducible.

With macroblock-tree rate control (x264's default from ``veryfast`` up),
identical frames and settings gave different files from run to run: 4 of 18
builds of the same two sources (6 running at once) differed in one GOP, and
12 encodes of the same 30 frames in one process gave 2 distinct files, in the
same order in 4 concurrent processes (so dependent on the process's memory
history, not on a race). Valgrind reports x264 using uninitialised stack
memory as a table index (a log2 lookup) in its macroblock-tree pass; with
``mbtree=0`` it reports nothing and all repeats were identical. For a given
thread count, x264's frame threading is deterministic; filling the input
frames' row padding with random bytes did not change the output. The cost
is measured in ``docs/tamper.md``.
"""


def _x264_params(gop: int | None, mbtree: bool) -> str:
    """``x264-params`` for a fixed keyframe interval ``gop`` (or none) and the mbtree switch."""
    parts = [] if mbtree else [X264_REPRODUCIBLE]
    if gop is not None:
        parts.append(f"keyint={gop}:min-keyint={gop}:scenecut=0")
    return ":".join(parts)


def temp_path_for(path: Path) -> Path:
    """The hidden temporary name a writer uses before renaming to ``path`` (same suffix)."""
    return path.with_name(f".{path.stem}.part{os.getpid()}{path.suffix}")


class FrameWriter(Protocol):
    """What the tamper builder needs from a writer."""

    path: Path
    padded: bool
    frames_written: int

    def write(self, frame: np.ndarray) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...
    @property
    def settings(self) -> dict[str, Any]: ...


def _check_frame(frame: np.ndarray, width: int, height: int, path: Path) -> None:
    if frame.dtype != np.uint8 or frame.shape != (height, width, 3):
        raise ValueError(
            f"{path}: expected a ({height}, {width}, 3) uint8 frame, got {frame.shape} {frame.dtype}"
        )


_W = TypeVar("_W", bound="_AtomicWriter")


class _AtomicWriter:
    """Context-manager protocol shared by the writers: ``close`` on success, ``abort`` on error."""

    def close(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self: _W) -> _W:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class VideoWriter(_AtomicWriter):
    """Encode ``(H, W, 3) uint8 RGB`` frames with PyAV at a constant frame rate.

    Frame ``i`` gets presentation time ``i / fps`` seconds. When the pixel
    format is chroma-subsampled (``yuv420p``) and a side is odd, each frame is
    padded by one pixel on the right and/or bottom (edge pixels repeated) and
    ``padded`` is set; the encoded size is ``(enc_width, enc_height)``.

    Args:
        path: output file; the container comes from the suffix (.mp4, .mkv, .webm, .avi, .mpg).
        fps: frame rate (a ``Fraction`` keeps 30000/1001 exact).
        width, height: size of the frames passed to ``write``.
        codec: FFmpeg encoder name (``libx264``, ``mpeg4``, ``libvpx-vp9``, ``mpeg2video``, ...).
        crf: constant rate factor, for x264/x265/vpx only.
        pix_fmt: encoded pixel format.
        preset: x264/x265 preset.
        threads: encoder threads (0 = FFmpeg decides).
        gop: fixed keyframe interval in frames (``None``: the encoder decides).
            Frames ``0, gop, 2 gop, ...`` are forced keyframes (IDR for H.264),
            counted again from every ``force_keyframe``; the encoder puts no
            other keyframe (x264: ``keyint=gop:min-keyint=gop:scenecut=0``,
            other encoders: ``gop_size=gop``). The tamper builder uses it so
            all variants of a source share one keyframe pattern.
        mbtree: keep x264's macroblock-tree rate control (libx264 only).
            Off by default because it makes the output depend on memory
            contents: the same frames, settings and thread count give a
            different file from run to run (see ``X264_REPRODUCIBLE``).

    Raises:
        MediaError: the encoder or container cannot be opened or fails.
        ValueError: a frame of the wrong shape or dtype is written.

    Use as a context manager; leaving the block with an exception discards
    the partial file.
    """

    def __init__(
        self,
        path: str | Path,
        fps: Fraction | float | int,
        width: int,
        height: int,
        *,
        codec: str = DEFAULT_CODEC,
        crf: int | None = DEFAULT_CRF,
        pix_fmt: str = "yuv420p",
        preset: str | None = DEFAULT_PRESET,
        threads: int = 0,
        gop: int | None = None,
        mbtree: bool = False,
    ) -> None:
        if width < 1 or height < 1:
            raise ValueError(f"invalid frame size {width}x{height}")
        if gop is not None and gop < 1:
            raise ValueError(f"gop must be at least 1 frame, got {gop}")
        self.gop = gop
        self._next_key = 0
        self.path = Path(path)
        self.fps = Fraction(fps).limit_denominator(1_000_000)
        self.width, self.height = width, height
        self.codec, self.crf, self.pix_fmt, self.preset = codec, crf, pix_fmt, preset
        subsampled = pix_fmt in _SUBSAMPLED
        self._pad = (width % 2 if subsampled else 0, height % 2 if subsampled else 0)
        self.padded = any(self._pad)
        self.enc_width, self.enc_height = width + self._pad[0], height + self._pad[1]
        self.frames_written = 0
        self._tmp = temp_path_for(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        options: dict[str, str] = {}
        if crf is not None and codec in _CRF_CODECS:
            options["crf"] = str(crf)
            if codec.startswith("libvpx"):
                options["b"] = "0"
        if preset and codec in _PRESET_CODECS:
            options["preset"] = preset
        self.x264_params = (_x264_params(gop, mbtree) or None) if codec == "libx264" else None
        if self.x264_params:
            options["x264-params"] = self.x264_params
        if gop is not None and codec == "libx264":
            options["forced-idr"] = "1"
        try:
            self._container = av.open(str(self._tmp), mode="w")
            stream = self._container.add_stream(codec, rate=self.fps, options=options)
            if not isinstance(stream, VideoStream):
                raise ValueError(f"{codec} is not a video encoder")
            self._stream = stream
            self._stream.width, self._stream.height = self.enc_width, self.enc_height
            self._stream.pix_fmt = pix_fmt
            self._stream.codec_context.time_base = 1 / self.fps
            if threads:
                self._stream.codec_context.thread_count = threads
            if gop is not None:
                self._stream.codec_context.gop_size = gop
        except (av.error.FFmpegError, ValueError, OSError) as exc:
            self._discard()
            raise MediaError(
                self.path, f"cannot open encoder {codec}: {describe_av_error(exc)}"
            ) from exc
        self._closed = False

    @property
    def settings(self) -> dict[str, Any]:
        """Encoder settings, as recorded in the tamper manifest."""
        return {
            "writer": "pyav",
            "codec": self.codec,
            "crf": self.crf if self.codec in _CRF_CODECS else None,
            "preset": self.preset if self.codec in _PRESET_CODECS else None,
            "pix_fmt": self.pix_fmt,
            "fps": str(self.fps),
            "container": self.path.suffix.lstrip("."),
            **({"gop": self.gop} if self.gop is not None else {}),
            **({"x264_params": self.x264_params} if self.x264_params is not None else {}),
        }

    def force_keyframe(self) -> None:
        """Make the next frame a keyframe; with ``gop`` set, the fixed interval restarts there."""
        self._next_key = self.frames_written

    def write(self, frame: np.ndarray) -> None:
        """Encode one ``(H, W, 3) uint8 RGB`` frame."""
        _check_frame(frame, self.width, self.height, self.path)
        if self.padded:
            frame = np.pad(frame, ((0, self._pad[1]), (0, self._pad[0]), (0, 0)), mode="edge")
        self._encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24"))

    def _encode(self, vf: VideoFrame) -> None:
        vf.pts = self.frames_written
        if self.frames_written == self._next_key:
            vf.pict_type = PictureType.I
            if self.gop is not None:
                self._next_key += self.gop
        else:
            vf.pict_type = PictureType.NONE
        vf.time_base = self._stream.codec_context.time_base
        try:
            for packet in self._stream.encode(vf):
                self._container.mux(packet)
        except av.error.FFmpegError as exc:
            raise MediaError(self.path, f"encode failed: {describe_av_error(exc)}") from exc
        self.frames_written += 1

    def write_frame(self, frame: VideoFrame) -> None:
        """Encode a decoded PyAV frame as is, skipping the RGB round trip of ``write``.

        The frame must already have the encoded size ``(enc_width, enc_height)``;
        a different pixel format is converted by FFmpeg. Its timestamps and
        picture type are replaced (a source keyframe does not force one here).

        Raises:
            ValueError: the frame size differs from the encoded size.
            MediaError: the encoder fails.
        """
        if (frame.width, frame.height) != (self.enc_width, self.enc_height):
            raise ValueError(
                f"{self.path}: expected a {self.enc_width}x{self.enc_height} frame, "
                f"got {frame.width}x{frame.height}"
            )
        if frame.format.name != self.pix_fmt:
            frame = frame.reformat(format=self.pix_fmt)
        self._encode(frame)

    def close(self) -> None:
        """Flush the encoder, close the file and move it into place.

        Raises:
            MediaError: nothing was written, or flushing failed.
        """
        if self._closed:
            return
        self._closed = True
        try:
            if self.frames_written == 0:
                raise MediaError(self.path, "no frames were written")
            for packet in self._stream.encode(None):
                self._container.mux(packet)
            self._container.close()
        except av.error.FFmpegError as exc:
            self._discard()
            raise MediaError(self.path, f"finalising failed: {describe_av_error(exc)}") from exc
        except MediaError:
            self._discard()
            raise
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        """Close without keeping anything."""
        if not self._closed:
            self._closed = True
            self._discard()

    def _discard(self) -> None:
        with contextlib.suppress(Exception):
            self._container.close()
        with contextlib.suppress(FileNotFoundError):
            self._tmp.unlink()


class OpenCVWriter(_AtomicWriter):
    """Write frames the way the released MVTamperBench generator did.

    OpenCV ``cv2.VideoWriter`` with fourcc ``mp4v`` (MPEG-4 Part 2) at
    ``int(fps)`` frames per second (29.97 becomes 29). Use it only to
    reproduce the released dataset (``--style released``); the default
    ``VideoWriter`` keeps the exact frame rate. Frames are
    ``(H, W, 3) uint8 RGB``; no padding is applied.

    Raises:
        MediaError: OpenCV cannot open a writer for ``path``.
    """

    def __init__(
        self, path: str | Path, fps: Fraction | float | int, width: int, height: int
    ) -> None:
        self.path = Path(path)
        self.fps = int(fps)
        self.width, self.height = width, height
        self.padded = False
        self.frames_written = 0
        self._tmp = temp_path_for(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fourcc = cv2.VideoWriter.fourcc(*"mp4v")
        self._writer = cv2.VideoWriter(str(self._tmp), fourcc, max(self.fps, 1), (width, height))
        if not self._writer.isOpened():
            raise MediaError(self.path, "OpenCV could not open an mp4v writer")
        self._closed = False

    @property
    def settings(self) -> dict[str, Any]:
        """Encoder settings, as recorded in the tamper manifest."""
        return {"writer": "opencv", "fourcc": "mp4v", "fps": str(self.fps), "container": "mp4"}

    def write(self, frame: np.ndarray) -> None:
        """Encode one ``(H, W, 3) uint8 RGB`` frame."""
        _check_frame(frame, self.width, self.height, self.path)
        self._writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        self.frames_written += 1

    def close(self) -> None:
        """Finish the file and move it into place."""
        if self._closed:
            return
        self._closed = True
        self._writer.release()
        if self.frames_written == 0:
            with contextlib.suppress(FileNotFoundError):
                self._tmp.unlink()
            raise MediaError(self.path, "no frames were written")
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        """Close without keeping anything."""
        if not self._closed:
            self._closed = True
            self._writer.release()
            with contextlib.suppress(FileNotFoundError):
                self._tmp.unlink()


__all__ = [
    "DEFAULT_CODEC",
    "DEFAULT_CRF",
    "DEFAULT_PRESET",
    "X264_REPRODUCIBLE",
    "FrameWriter",
    "OpenCVWriter",
    "VideoWriter",
    "temp_path_for",
]
