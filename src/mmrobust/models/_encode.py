"""Media encoding for remote backends: frames and files to base64 data URLs.

Pure helpers (no network, no state); OpenCV does the JPEG work.
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path

import cv2
import numpy as np

_EXTRA_MIME = {
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".mov": "video/quicktime",
    ".webm": "video/webm",
    ".mkv": "video/x-matroska",
    ".avi": "video/x-msvideo",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".webp": "image/webp",
    ".gif": "image/gif",
    ".bmp": "image/bmp",
}


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


def encode_jpeg(frame: np.ndarray, *, max_side: int | None = None, quality: int = 90) -> bytes:
    """Encode one frame as JPEG bytes.

    Args:
        frame: ``(H, W, 3) uint8 RGB`` (or ``(H, W) uint8`` gray).
        max_side: cap on the longer side in pixels (area-downscaled); ``None``/0: no cap.
        quality: JPEG quality 1..100.

    Raises:
        ValueError: wrong dtype or shape, or quality out of range.
    """
    if (
        frame.dtype != np.uint8
        or frame.ndim not in (2, 3)
        or (frame.ndim == 3 and frame.shape[2] != 3)
    ):
        raise ValueError(f"expected an (H, W, 3) uint8 RGB frame, got {frame.shape} {frame.dtype}")
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be in 1..100, got {quality}")
    height, width = frame.shape[:2]
    new_w, new_h = cap_size(width, height, max_side)
    if (new_w, new_h) != (width, height):
        frame = cv2.resize(frame, (new_w, new_h), interpolation=cv2.INTER_AREA)
    bgr = cv2.cvtColor(frame, cv2.COLOR_RGB2BGR) if frame.ndim == 3 else frame
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:  # pragma: no cover - OpenCV fails only on impossible input
        raise ValueError("OpenCV could not encode the frame as JPEG")
    return bytes(buf.tobytes())


def data_url(payload: bytes, mime: str) -> str:
    """``data:<mime>;base64,<payload>`` (RFC 2397)."""
    return f"data:{mime};base64,{base64.b64encode(payload).decode('ascii')}"


def frame_data_url(frame: np.ndarray, *, max_side: int | None = None, quality: int = 90) -> str:
    """One ``(H, W, 3) uint8 RGB`` frame as a ``data:image/jpeg;base64,...`` URL."""
    return data_url(encode_jpeg(frame, max_side=max_side, quality=quality), "image/jpeg")


def guess_mime(path: Path) -> str:
    """MIME type from the file extension (``video/mp4``, ``image/png``, ...).

    Falls back to ``application/octet-stream`` for unknown extensions.
    """
    ext = path.suffix.lower()
    if ext in _EXTRA_MIME:
        return _EXTRA_MIME[ext]
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"


def file_data_url(path: Path) -> str:
    """The whole file as a base64 data URL with its MIME type.

    Raises:
        OSError: the file cannot be read.
    """
    return data_url(Path(path).read_bytes(), guess_mime(Path(path)))


def file_url(path: Path) -> str:
    """``file:///abs/path`` URL of a local file (vLLM needs ``--allowed-local-media-path``)."""
    return Path(path).resolve().as_uri()


__all__ = [
    "cap_size",
    "data_url",
    "encode_jpeg",
    "file_data_url",
    "file_url",
    "frame_data_url",
    "guess_mime",
]
