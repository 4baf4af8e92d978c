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
from mmrobust.media.encoder import (
    DEFAULT_CODEC,
    DEFAULT_CRF,
    DEFAULT_PRESET,
    ENCODER_THREADS,
    X264_REPRODUCIBLE,
    EncoderSettings,
)
from mmrobust.media.errors import MediaError


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
        threads: encoder threads, slice-threaded (default ``ENCODER_THREADS``,
            fixed so the file does not depend on the machine); 0: FFmpeg's
            automatic count, which follows the CPUs and changes the bytes.
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
        qscale: fixed quantiser 1-31 for codecs without a crf (``mpeg4``:
            FFmpeg ``-qscale:v``); ``None``: the codec's rate control.
        colorspace, color_range: YUV matrix and range to encode with and tag
            (FFmpeg ``AVColorSpace`` / ``AVColorRange``; ``None``: BT.601,
            limited, untagged); see ``EncoderSettings``.

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
        threads: int = ENCODER_THREADS,
        gop: int | None = None,
        mbtree: bool = False,
        qscale: int | None = None,
        colorspace: int | None = None,
        color_range: int | None = None,
    ) -> None:
        self.enc = EncoderSettings(
            Fraction(fps),
            width,
            height,
            codec=codec,
            crf=crf,
            pix_fmt=pix_fmt,
            preset=preset,
            threads=threads,
            gop=gop,
            mbtree=mbtree,
            qscale=qscale,
            colorspace=colorspace,
            color_range=color_range,
        )
        self.gop = gop
        self._next_key = 0
        self.path = Path(path)
        self.fps = self.enc.fps
        self.width, self.height = width, height
        self.codec, self.crf, self.pix_fmt, self.preset = codec, crf, pix_fmt, preset
        self.padded = self.enc.padded
        self.enc_width, self.enc_height = self.enc.enc_size
        self.frames_written = 0
        self._tmp = temp_path_for(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.x264_params = self.enc.x264_params
        try:
            self._container = av.open(str(self._tmp), mode="w")
            stream = self._container.add_stream(codec, rate=self.fps, options=self.enc.options())
            if not isinstance(stream, VideoStream):
                raise ValueError(f"{codec} is not a video encoder")
            self._stream = stream
            self.enc.configure(stream.codec_context)
        except (av.error.FFmpegError, ValueError, OSError) as exc:
            self._discard()
            raise MediaError(
                self.path, f"cannot open encoder {codec}: {describe_av_error(exc)}"
            ) from exc
        self._closed = False

    @property
    def settings(self) -> dict[str, Any]:
        """Encoder settings, as recorded in the tamper manifest."""
        return self.enc.manifest(self.path.suffix.lstrip("."))

    def force_keyframe(self) -> None:
        """Make the next frame a keyframe; with ``gop`` set, the fixed interval restarts there."""
        self._next_key = self.frames_written

    def write(self, frame: np.ndarray) -> None:
        """Encode one ``(H, W, 3) uint8 RGB`` frame."""
        _check_frame(frame, self.width, self.height, self.path)
        self._encode(self.enc.convert(self.enc.rgb_frame(frame)))

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
    "ENCODER_THREADS",
    "X264_REPRODUCIBLE",
    "FrameWriter",
    "OpenCVWriter",
    "VideoWriter",
    "temp_path_for",
]
