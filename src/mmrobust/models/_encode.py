"""Media encoding for remote backends: frames and files to base64 data URLs.

Pure helpers (no network, no state); the JPEG work lives in ``mmrobust.media.jpeg``
(``cap_size`` and ``encode_jpeg`` are re-exported here for the backends).
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path

import numpy as np

from mmrobust.media.jpeg import cap_size, encode_jpeg

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
