"""JPEG frames: how sampled frames are kept (frame cache) and sent (remote backends).

:class:`FrameEncoding` says how: JPEG quality and a cap on the longer side.
A model states the encoding it wants (``Model.frame_encoding``); the
OpenAI-compatible backend asks for exactly what it sends, so cached bytes go
out as they are. Frames reach every model through this encoding, with the
frame cache on or off, so a warm run sees the same pixels as a cold one.
OpenCV does the JPEG work (libjpeg-turbo; the GIL is released).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

import numpy as np

DEFAULT_QUALITY = 95
"""JPEG quality of frames for models that take pixel arrays (hf): visually lossless."""


@dataclass(frozen=True)
class FrameEncoding:
    """How sampled frames are stored and handed on.

    Attributes:
        quality: JPEG quality 1..100.
        max_side: longer side in pixels after an area downscale (never upscaled);
            ``None`` or 0 keeps the decoded size.

    Raises:
        ValueError: quality outside 1..100 or a negative ``max_side``.
    """

    quality: int = DEFAULT_QUALITY
    max_side: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.quality <= 100:
            raise ValueError(f"JPEG quality must be in 1..100, got {self.quality}")
        if self.max_side is not None and self.max_side < 0:
            raise ValueError(f"max_side must be >= 0, got {self.max_side}")

    def describe(self) -> str:
        """``"JPEG q90, longer side <= 1024 px"`` or ``"JPEG q95, decoded size"``."""
        side = f"longer side <= {self.max_side} px" if self.max_side else "decoded size"
        return f"JPEG q{self.quality}, {side}"

    def fingerprint(self) -> str:
        """Short hash (a results-store and frame-cache key part)."""
        data = {"quality": self.quality, "max_side": self.max_side or None}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def as_dict(self) -> dict[str, int | None]:
        """``{"quality": ..., "max_side": ...}`` for ``run.json``."""
        return asdict(self)


def cap_size(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    """Size ``(W, H)`` after scaling so the longer side is at most ``max_side``.

    Keeps the aspect ratio; never upscales; each side stays >= 1.
    ``max_side`` of ``None`` or ``0`` means no cap.
    """
    longest = max(width, height)
    if not max_side or longest <= max_side:
        return width, height
    scale = max_side / longest
    return max(1, round(width * scale)), max(1, round(height * scale))


def cap_frame(frame: np.ndarray, max_side: int | None) -> np.ndarray:
    """``frame`` with its longer side at most ``max_side`` (pure; an area downscale).

    The one resize between decoded pixels and a model's processor: ``hf:`` evaluation
    applies it to each ``Request.frames`` array and ``finetune`` to each training image
    and video frame (``image_max_side``), so both hand the processor the same pixels.

    Args:
        frame: ``(H, W, 3) uint8 RGB`` (or ``(H, W) uint8`` gray).
        max_side: pixels; ``None`` or 0: no cap. Never upscales; the size is
            :func:`cap_size`'s, the interpolation ``cv2.INTER_AREA``.

    Returns:
        ``frame`` itself when it already fits, else a new array of the capped size.
    """
    height, width = frame.shape[:2]
    size = cap_size(width, height, max_side)
    if size == (width, height):
        return frame
    import cv2

    return np.asarray(cv2.resize(frame, size, interpolation=cv2.INTER_AREA))


def encode_jpeg(frame: np.ndarray, *, max_side: int | None = None, quality: int = 90) -> bytes:
    """Encode one frame as JPEG bytes.

    Args:
        frame: ``(H, W, 3) uint8 RGB`` (or ``(H, W) uint8`` gray).
        max_side: cap on the longer side in pixels (area-downscaled); ``None``/0: no cap.
        quality: JPEG quality 1..100.

    Raises:
        ValueError: wrong dtype or shape, or quality out of range.
    """
    import cv2

    if (
        frame.dtype != np.uint8
        or frame.ndim not in (2, 3)
        or (frame.ndim == 3 and frame.shape[2] != 3)
    ):
        raise ValueError(f"expected an (H, W, 3) uint8 RGB frame, got {frame.shape} {frame.dtype}")
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be in 1..100, got {quality}")
    frame = cap_frame(frame, max_side)
    bgr = cv2.cvtColor(frame, cv2.COLOR_RGB2BGR) if frame.ndim == 3 else frame
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:  # pragma: no cover - OpenCV fails only on impossible input
        raise ValueError("OpenCV could not encode the frame as JPEG")
    return bytes(buf.tobytes())


def decode_jpeg(data: bytes) -> np.ndarray:
    """JPEG bytes -> ``(H, W, 3) uint8 RGB``.

    Raises:
        ValueError: not a decodable JPEG.
    """
    import cv2

    img = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if img is None:
        raise ValueError("not a decodable JPEG")
    return np.ascontiguousarray(cv2.cvtColor(img, cv2.COLOR_BGR2RGB))


__all__ = [
    "DEFAULT_QUALITY",
    "FrameEncoding",
    "cap_frame",
    "cap_size",
    "decode_jpeg",
    "encode_jpeg",
]
