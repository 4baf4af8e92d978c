"""Media encoding for remote backends: frames and files to base64 data URLs.

Pure helpers (no network, no state); the JPEG work lives in ``mmrobust.media.jpeg``
(``cap_size`` and ``encode_jpeg`` are re-exported here for the backends).
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mmrobust.media.jpeg import cap_size, encode_jpeg
from mmrobust.models.base import MediaInput, Request

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


def request_jpegs(
    request: Request, *, max_side: int | None = None, quality: int = 90
) -> list[bytes]:
    """The JPEG bytes to send for a request's frames: ``Request.frame_jpegs`` as the runner
    encoded them (a video's frames, for a backend whose ``frame_format`` is ``"jpeg"``: then
    ``Request.frames`` is empty), else each of ``Request.frames`` (an image sample's image)
    encoded now. Read a request's media through this, not ``frames`` alone.

    Raises:
        ValueError: a frame is not ``(H, W, 3) uint8``.
    """
    if request.frame_jpegs:
        return list(request.frame_jpegs)
    return [encode_jpeg(f, max_side=max_side or None, quality=quality) for f in request.frames]


_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})
_VIDEO_TYPES = frozenset({"video", "video_url", "input_video"})


def count_payload_media(payload: Any) -> tuple[int, int]:
    """``(images, videos)`` in a JSON request body, found by their usual shapes: a part whose
    ``type`` is ``image`` / ``image_url`` / ``input_image`` (``video`` ...), an inline blob
    with an ``image/*`` / ``video/*`` ``mime_type`` / ``mimeType`` / ``media_type``, or a
    ``data:image/...`` / ``data:video/...`` URL string. The default of
    ``HttpModel.count_media``; a backend that knows its format counts exactly."""
    if isinstance(payload, str):
        return int(payload.startswith("data:image/")), int(payload.startswith("data:video/"))
    if isinstance(payload, Mapping):
        kind = payload.get("type")
        if kind in _IMAGE_TYPES or kind in _VIDEO_TYPES:
            return int(kind in _IMAGE_TYPES), int(kind in _VIDEO_TYPES)
        mime = next((payload[k] for k in ("mime_type", "mimeType") if k in payload), None)
        if isinstance(mime, str) and mime.startswith(("image/", "video/")):
            return int(mime.startswith("image/")), int(mime.startswith("video/"))
        values: Any = payload.values()
    elif isinstance(payload, list | tuple):
        values = payload
    else:
        return 0, 0
    images = videos = 0
    for value in values:
        i, v = count_payload_media(value)
        images, videos = images + i, videos + v
    return images, videos


def missing_media(request: Request, media_input: MediaInput, sent: tuple[int, int]) -> str | None:
    """Why a request body is refused before it is sent: the request carries media (frames,
    their JPEGs, or a file for a ``"path"`` backend) and the body holds none (``sent``:
    ``count_media`` of it), so the model would answer blind; ``None`` when all is well."""
    shown = bool(request.frames or request.frame_jpegs)
    if media_input == "path":
        shown = request.video is not None or request.image is not None
    if not shown or sum(sent) > 0:
        return None
    return (
        "the request body holds no image or video for a sample with media (the model "
        "would answer blind); a backend reads a request's media with "
        "models._encode.request_jpegs (Request.frames is empty for a JPEG backend's video)"
    )
