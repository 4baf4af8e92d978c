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


def clip_metadata(
    fps: float | None,
    frame_indices: Sequence[int],
    total_frames: int | None,
    frames: Sequence[np.ndarray],
) -> dict[str, Any] | None:
    """transformers ``VideoMetadata`` fields of sampled frames, or ``None`` (pure).

    Args:
        fps: the source video's frame rate (frames per second).
        frame_indices: the sampled source frame index of each entry of ``frames``.
        total_frames: frames in the whole source video (``None``: last index + 1).
        frames: the frames as passed, each ``(H, W, 3) uint8``.

    Returns:
        ``fps``, ``frames_indices`` (so a processor's frame times are ``index / fps``
        seconds), ``total_num_frames`` and ``duration`` (seconds) of the whole source
        clip, ``height``/``width`` of the frames as passed; ``None`` without a frame
        rate or indices, or when the indices do not match the frames one to one.
        The one definition ``hf:`` evaluation and ``finetune --video-input video`` share.
    """
    if not fps or not frame_indices or not frames or len(frame_indices) != len(frames):
        return None
    total = total_frames or (max(frame_indices) + 1)
    h, w = frames[0].shape[:2]
    return {
        "total_num_frames": int(total),
        "fps": float(fps),
        "duration": total / float(fps),
        "frames_indices": [int(i) for i in frame_indices],
        "height": int(h),
        "width": int(w),
    }


def video_metadata(request: Request, frames: Sequence[np.ndarray]) -> dict[str, Any] | None:
    """:func:`clip_metadata` of a request's sampled frames, or ``None``.

    ``None`` when the request carries no timing (frames not from a video decoded by
    the runner).
    """
    return clip_metadata(
        request.video_fps, request.frame_indices, request.video_frame_count, frames
    )


def video_pixel_cap(processor: Any) -> bool | None:
    """The ``cap_pixels_per_frame`` setting the processor's own configuration implies.

    Qwen2-VL-family video processors (transformers >= 5.21: Qwen2-VL / Qwen2.5-VL,
    Qwen3-VL and their derivatives) take ``cap_pixels_per_frame``: ``True`` bounds each
    frame by an even share of a whole-video pixel budget (``max_video_tokens``), as the
    reference ``qwen-vl-utils`` does; ``False`` sizes each frame by the configuration's
    ``size`` (min/max pixels) alone. Left unset, the library warns on every video and
    falls back to a default announced to change, so the same checkpoint would give other
    token counts after a library upgrade. The value used here: the one the model's video
    processor configuration states (``video_preprocessor_config.json``, or
    ``processor_kwargs``), else ``False``: the behaviour every configuration written
    before the option existed was made for, and that earlier transformers releases
    (and ``hf:`` runs) applied.

    Returns:
        the value to pass, or ``None`` for a processor without the option (nothing is passed).
    """
    video = getattr(processor, "video_processor", None)
    kwargs = getattr(getattr(video, "valid_kwargs", None), "__annotations__", {})
    if video is None or "cap_pixels_per_frame" not in kwargs:
        return None
    stated = getattr(video, "cap_pixels_per_frame", None)
    return bool(stated) if isinstance(stated, bool) else False


def video_call(
    clips: Sequence[Sequence[np.ndarray]],
    metadata: Sequence[dict[str, Any] | None],
    pixel_cap: bool | None = None,
) -> dict[str, Any]:
    """The processor keyword arguments of clips given as native video (pure).

    ``videos``: one ``(T, H, W, 3) uint8`` array per clip; ``video_metadata``: the
    clips' :func:`clip_metadata`, only when every clip has it (else the processor
    guesses the times); ``do_sample_frames=False``: mmrobust's frame policy already
    chose the frames, the processor must neither re-sample them nor invent their times;
    ``cap_pixels_per_frame``: ``pixel_cap`` (:func:`video_pixel_cap`) unless ``None``.
    """
    call: dict[str, Any] = {"videos": [np.stack(list(f)) for f in clips]}
    if metadata and all(m is not None for m in metadata):
        call["video_metadata"] = list(metadata)
    call["do_sample_frames"] = False
    if pixel_cap is not None:
        call["cap_pixels_per_frame"] = pixel_cap
    return call


__all__ = ["build_messages", "clip_metadata", "video_call", "video_metadata", "video_pixel_cap"]
