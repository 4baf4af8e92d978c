"""Pure input builders of the ``hf`` backend: chat messages and video metadata.

No torch import: these turn a ``Request`` into what a transformers processor
takes (the multimodal chat messages for ``apply_chat_template``, and the
``VideoMetadata`` fields of a clip's sampled frames).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mmrobust.models.base import Request, place_media


def build_messages(request: Request, n_frames: int, video_input: str) -> list[dict[str, Any]]:
    """Chat messages in the HF multimodal format for one request.

    One ``{"type": "image"}`` part per frame (or one ``{"type": "video"}``
    part when ``video_input == "video"`` and there are 2 or more frames), then the
    prompt text (with ``request.media_offset`` k: ``prompt[:k]``, the media,
    ``prompt[k:]``); a system message first when the request has one. Pure.
    """
    media: list[dict[str, Any]] = []
    if n_frames:
        if video_input == "video" and n_frames > 1:
            media.append({"type": "video"})
        else:
            media.extend({"type": "image"} for _ in range(n_frames))
    parts = place_media(request, media, lambda t: {"type": "text", "text": t})
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": [{"type": "text", "text": request.system}]})
    messages.append({"role": "user", "content": parts})
    return messages


def video_metadata(request: Request, frames: Sequence[np.ndarray]) -> dict[str, Any] | None:
    """transformers ``VideoMetadata`` fields for a request's sampled frames, or ``None``.

    ``fps`` is the source video's frame rate, ``frames_indices`` the sampled
    source frame indices (so a processor's frame times are ``index / fps``
    seconds), ``total_num_frames`` and ``duration`` (seconds) describe the whole
    source clip, ``height``/``width`` the frames as passed. ``None`` when the
    request carries no timing (frames not from a video decoded by the runner).
    """
    if not request.video_fps or not request.frame_indices:
        return None
    if len(request.frame_indices) != len(frames):
        return None
    total = request.video_frame_count or (max(request.frame_indices) + 1)
    h, w = frames[0].shape[:2]
    return {
        "total_num_frames": int(total),
        "fps": float(request.video_fps),
        "duration": total / float(request.video_fps),
        "frames_indices": [int(i) for i in request.frame_indices],
        "height": int(h),
        "width": int(w),
    }


__all__ = ["build_messages", "video_metadata"]
