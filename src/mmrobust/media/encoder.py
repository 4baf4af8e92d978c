"""Encoder settings shared by ``VideoWriter`` and the tamper builder's piece encoders.

``EncoderSettings`` turns the writer's options (codec, crf, preset, fixed GOP,
x264 reproducibility switch, fixed quantiser) into an FFmpeg codec
configuration. The same settings configure a container's stream
(``VideoWriter``) or a standalone encoder (``FrameEncoder``, no container:
the tamper builder fans its packets out to several files), so both give the
same codec header (``extradata``) and the same packets for the same frames.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import av.error
import numpy as np
from av.codec.context import Flags
from av.packet import Packet
from av.video.codeccontext import VideoCodecContext
from av.video.frame import PictureType, VideoFrame
from av.video.reformatter import VideoReformatter

DEFAULT_CODEC = "libx264"
DEFAULT_CRF = 18
"""x264 constant rate factor: visually lossless; tests rely on it (tolerances stated there)."""
DEFAULT_PRESET = "fast"

_CRF_CODECS = {"libx264", "libx265", "libvpx", "libvpx-vp9"}
_PRESET_CODECS = {"libx264", "libx265"}
_SUBSAMPLED = {"yuv420p", "yuvj420p", "yuv422p", "nv12"}
_QP2LAMBDA = 118
"""FFmpeg ``FF_QP2LAMBDA``: ``global_quality`` is a quantiser times this."""

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


ENCODER_THREADS = 2
"""Default encoder thread count, pinned so that the bytes written depend only on the
frames and settings, never on the machine.

FFmpeg's automatic count (``threads=0``) follows the CPUs the process may use
(``sched_getaffinity``; ``mpeg4``: cores + 1, at most 16), and ``mpeg4`` and
x264 both cut each frame into one slice per thread, so the same frames encoded
in a process allowed 1 CPU and in one allowed 2 gave different files
(``mpeg4``: 1 vs 3 slices; x264: 1 vs 2). With a fixed count the slices are
fixed: 1 to 4 threads each gave one sha256 with 1 or 2 CPUs on the sample
clips (``benchmarks/encoder_threads.py``). Encoding runs slice-threaded
(``thread_type`` ``SLICE``, PyAV's default, pinned too). The cost against the
automatic count (none measurable in CPU time; each slice adds 0.1-0.3% to the
file) is in ``docs/tamper.md``.
"""

_SHORT_TIME_BASE = {"mpeg4", "h263", "h263p", "msmpeg4", "msmpeg4v2", "flv"}
"""Encoders whose time base denominator must fit in 16 bits (MPEG-4 Part 2 and
its relatives: FFmpeg refuses 1 / fps when fps's numerator exceeds 65535)."""


_LOCAL = threading.local()


def shared_reformatter() -> VideoReformatter:
    """This thread's ``VideoReformatter``, kept across frames.

    ``VideoFrame.reformat`` / ``to_ndarray`` build a new reformatter, so a
    new swscale context, for every frame; one kept per thread reuses its
    context while the conversion stays the same (``sws_getCachedContext``)
    and gives the same pixels. At 176x144 building the context cost more
    than converting the frame (about 1 ms of 1.3 ms per RGB -> YUV frame).
    Reformatters are not thread-safe, hence one per thread.
    """
    r: VideoReformatter | None = getattr(_LOCAL, "reformatter", None)
    if r is None:
        r = _LOCAL.reformatter = VideoReformatter()
    return r


def encodable_fps(fps: Fraction, codec: str) -> Fraction:
    """``fps`` as ``codec`` can store it: unchanged, or for MPEG-4 Part 2 and
    its relatives the nearest rate whose numerator is at most 65535 (a phone's
    average rate such as 519168/19667 becomes 55990/2121, 2e-9 relative off).
    """
    fps = Fraction(fps)
    if codec in _SHORT_TIME_BASE and fps.numerator > 65535:
        return 1 / (1 / fps).limit_denominator(65535)
    return fps


def _x264_params(gop: int | None, mbtree: bool) -> str:
    """``x264-params`` for a fixed keyframe interval ``gop`` (or none) and the mbtree switch."""
    parts = [] if mbtree else [X264_REPRODUCIBLE]
    if gop is not None:
        parts.append(f"keyint={gop}:min-keyint={gop}:scenecut=0")
    return ":".join(parts)


@dataclass(frozen=True)
class EncoderSettings:
    """How frames of one size and rate are encoded (see ``VideoWriter`` for each field).

    Attributes:
        fps: frame rate; the codec time base is ``1 / fps`` (one tick per frame).
        width, height: size of the frames given to the encoder, before padding.
        codec, crf, pix_fmt, preset, gop, mbtree: as ``VideoWriter``.
        threads: encoder threads, slice-threaded (default ``ENCODER_THREADS``);
            0: FFmpeg's automatic count, which follows the machine's CPUs and
            so changes the bytes from one machine to another.
        qscale: fixed quantiser 1 (best) to 31 for codecs without a crf
            (``mpeg4``, ``mpeg2video``: FFmpeg ``-qscale:v``); ``None``: the
            codec's own rate control. Ignored by crf codecs.
        colorspace, color_range: YUV matrix and range of the encoded frames
            (FFmpeg ``AVColorSpace`` / ``AVColorRange``, e.g. 1 = BT.709,
            2 = full range), written into the stream and used to convert RGB
            frames; ``None``: FFmpeg's defaults (BT.601, limited range) and no
            tag. A source's own values keep frames passed through from its
            decoder and frames converted from RGB on the same scale.

    Raises:
        ValueError: a size below 1, ``gop`` below 1, ``qscale`` outside 1-31
            or ``threads`` below 0.
    """

    fps: Fraction
    width: int
    height: int
    codec: str = DEFAULT_CODEC
    crf: int | None = DEFAULT_CRF
    pix_fmt: str = "yuv420p"
    preset: str | None = DEFAULT_PRESET
    threads: int = ENCODER_THREADS
    gop: int | None = None
    mbtree: bool = False
    qscale: int | None = None
    colorspace: int | None = None
    color_range: int | None = None

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"invalid frame size {self.width}x{self.height}")
        if self.gop is not None and self.gop < 1:
            raise ValueError(f"gop must be at least 1 frame, got {self.gop}")
        if self.qscale is not None and not 1 <= self.qscale <= 31:
            raise ValueError(f"qscale must be in 1-31, got {self.qscale}")
        if self.threads < 0:
            raise ValueError(f"threads must be 0 (automatic) or more, got {self.threads}")
        object.__setattr__(self, "fps", Fraction(self.fps).limit_denominator(1_000_000))

    @property
    def pad(self) -> tuple[int, int]:
        """Pixels added on the right and bottom: 1 for an odd side of a subsampled format."""
        sub = self.pix_fmt in _SUBSAMPLED
        return (self.width % 2 if sub else 0, self.height % 2 if sub else 0)

    @property
    def padded(self) -> bool:
        """Whether frames are padded before encoding."""
        return any(self.pad)

    @property
    def enc_size(self) -> tuple[int, int]:
        """Encoded ``(width, height)`` in pixels (after padding)."""
        return self.width + self.pad[0], self.height + self.pad[1]

    @property
    def x264_params(self) -> str | None:
        """The ``x264-params`` option (libx264 only)."""
        if self.codec != "libx264":
            return None
        return _x264_params(self.gop, self.mbtree) or None

    def options(self) -> dict[str, str]:
        """Codec-private options (FFmpeg ``AVOption`` strings)."""
        options: dict[str, str] = {}
        if self.crf is not None and self.codec in _CRF_CODECS:
            options["crf"] = str(self.crf)
            if self.codec.startswith("libvpx"):
                options["b"] = "0"
        if self.preset and self.codec in _PRESET_CODECS:
            options["preset"] = self.preset
        if self.x264_params:
            options["x264-params"] = self.x264_params
        if self.gop is not None and self.codec == "libx264":
            options["forced-idr"] = "1"
        if self.qscale is not None and self.codec not in _CRF_CODECS:
            # FFmpeg's CLI also sets each frame's quality to the quantiser; PyAV frames
            # carry none (0), which the encoder clips to [qmin, qmax]: pin both.
            options["qmin"] = options["qmax"] = str(self.qscale)
        return options

    def configure(self, ctx: VideoCodecContext) -> None:
        """Set size, pixel format, time base, threads, GOP and quantiser on an unopened encoder."""
        ctx.width, ctx.height = self.enc_size
        ctx.pix_fmt = self.pix_fmt
        ctx.time_base = 1 / self.fps
        ctx.thread_type = "SLICE"  # PyAV's default; pinned so that a new one cannot move bytes
        ctx.thread_count = self.threads
        if self.gop is not None:
            ctx.gop_size = self.gop
        if self.qscale is not None and self.codec not in _CRF_CODECS:
            ctx.qscale = True
            ctx.global_quality = self.qscale * _QP2LAMBDA
        if self.colorspace is not None:
            ctx.colorspace = self.colorspace
        if self.color_range is not None:
            ctx.color_range = self.color_range

    def manifest(self, container: str) -> dict[str, Any]:
        """Settings as recorded in the tamper manifest."""
        return {
            "writer": "pyav",
            "codec": self.codec,
            "crf": self.crf if self.codec in _CRF_CODECS else None,
            "preset": self.preset if self.codec in _PRESET_CODECS else None,
            "pix_fmt": self.pix_fmt,
            "fps": str(self.fps),
            "container": container,
            "threads": self.threads,
            **({"gop": self.gop} if self.gop is not None else {}),
            **({"x264_params": self.x264_params} if self.x264_params is not None else {}),
            **(
                {"qscale": self.qscale}
                if self.qscale is not None and self.codec not in _CRF_CODECS
                else {}
            ),
            **({"colorspace": self.colorspace} if self.colorspace is not None else {}),
            **({"color_range": self.color_range} if self.color_range is not None else {}),
        }

    def rgb_frame(self, frame: np.ndarray) -> VideoFrame:
        """A ``(height, width, 3) uint8 RGB`` array as a PyAV frame of the encoded size.

        Raises:
            ValueError: wrong shape or dtype.
        """
        if frame.dtype != np.uint8 or frame.shape != (self.height, self.width, 3):
            raise ValueError(
                f"expected a ({self.height}, {self.width}, 3) uint8 frame, "
                f"got {frame.shape} {frame.dtype}"
            )
        if self.padded:
            frame = np.pad(frame, ((0, self.pad[1]), (0, self.pad[0]), (0, 0)), mode="edge")
        return av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")

    def convert(self, frame: VideoFrame) -> VideoFrame:
        """``frame`` in the encoder's pixel format, converted with this matrix
        and range (an RGB frame from ``rgb_frame``); a frame already in it is
        returned as is."""
        if frame.format.name == self.pix_fmt:
            return frame
        return shared_reformatter().reformat(
            frame,
            format=self.pix_fmt,
            dst_colorspace=self.colorspace,
            dst_color_range=self.color_range,
        )

    def fits(self, frame: VideoFrame) -> bool:
        """Whether a decoded frame can be encoded as is (encoded size and pixel format)."""
        return (frame.width, frame.height) == self.enc_size and frame.format.name == self.pix_fmt


class FrameEncoder:
    """One standalone encoder (no container): frames in, packets out.

    Opened with ``settings`` and the global-header flag, so the codec header
    (H.264 SPS/PPS) is in ``extradata`` rather than in the packets, as when
    writing mp4. Frame ``i`` gets pts ``i`` in the time base ``1 / fps``;
    frame 0 is a forced keyframe (IDR for x264). Packets come back in decode
    order from ``encode`` and ``flush``.

    Raises:
        av.error.FFmpegError: the encoder cannot be opened or fails (callers wrap it).
    """

    def __init__(self, settings: EncoderSettings) -> None:
        self.settings = settings
        ctx = av.CodecContext.create(settings.codec, "w")
        if not isinstance(ctx, VideoCodecContext):
            raise ValueError(f"{settings.codec} is not a video encoder")
        settings.configure(ctx)
        ctx.framerate = settings.fps
        ctx.bit_rate = 0  # as OutputContainer.add_stream, so both give the same header
        ctx.bit_rate_tolerance = 128000
        ctx.flags |= Flags.global_header
        ctx.options = settings.options()
        ctx.open()
        self._ctx = ctx
        self.frames = 0

    @property
    def extradata(self) -> bytes:
        """The codec header (empty when the codec has none)."""
        return bytes(self._ctx.extradata or b"")

    def encode(self, frame: VideoFrame) -> list[Packet]:
        """Encode one frame of the encoded size (other pixel formats are converted)."""
        frame = self.settings.convert(frame)
        frame.pts = self.frames
        frame.time_base = self._ctx.time_base
        frame.pict_type = PictureType.I if self.frames == 0 else PictureType.NONE
        self.frames += 1
        return list(self._ctx.encode(frame))

    def flush(self) -> list[Packet]:
        """The packets still held by the encoder; no frame may follow."""
        return list(self._ctx.encode(None))


__all__ = [
    "DEFAULT_CODEC",
    "DEFAULT_CRF",
    "DEFAULT_PRESET",
    "ENCODER_THREADS",
    "X264_REPRODUCIBLE",
    "EncoderSettings",
    "FrameEncoder",
    "encodable_fps",
    "shared_reformatter",
]
