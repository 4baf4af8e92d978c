"""Native video input for training (``finetune --video-input video``).

With ``--video-input video`` a conversation whose images are the sampled frames of
one clip (a LLaVA record with ``video_metadata``, as ``mmrobust tamper-data`` writes;
2 or more frames) goes to the model as ``hf:`` evaluation sends a clip with
``--model-arg video_input=video`` (``mmrobust/models/hf.py``):

* one ``{"type": "video"}`` part where the frames' ``<image>`` marks were, rendered by
  the model's chat template (``collate.to_messages(video=True)``);
* the processor gets ``videos=[(T, H, W, 3) uint8]``, ``video_metadata`` (the source
  clip's fps, the frames' source indices, its frame count and duration, the frames'
  size) and ``do_sample_frames=False``: the same
  :func:`mmrobust.models._hf_inputs.video_call` and
  :func:`~mmrobust.models._hf_inputs.clip_metadata` as evaluation, so the frame times a
  family writes (Qwen2.5-VL's ``second_per_grid_ts``, Qwen3-VL's ``<t seconds>``,
  SmolVLM2's ``Frame from mm:ss``) are the true ones;
* the frames are decoded as evaluation decodes its cached JPEGs
  (:func:`mmrobust.media.jpeg.decode_jpeg`, OpenCV) and capped at ``--image-max-side``
  as ``hf:`` caps them (:mod:`mmrobust.finetune.pixels`), so the arrays are the same.

Single-image samples and samples without ``video_metadata`` stay images. The video
processor expands the one video placeholder into the clip's tokens; expansion only
inserts tokens, so the assistant-only labels of :mod:`mmrobust.finetune.collate`
align as they do for images.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from mmrobust.finetune.conversation import Conversation, VideoTiming
from mmrobust.frame_size import DEFAULT_IMAGE_MAX_SIDE

VideoInput = Literal["images", "video"]


def is_video(conversation: Conversation, video_input: VideoInput) -> bool:
    """Does this conversation go in as one native video (``video`` mode, timing, 2+ frames)."""
    return (
        video_input == "video" and conversation.video is not None and len(conversation.images) > 1
    )


def data_problem(
    train: Sequence[Conversation],
    held_out: Sequence[Conversation],
    video_input: VideoInput,
    batch: int,
) -> str | None:
    """Why ``--video-input video`` cannot train on this data (one line, with the fix), or ``None``.

    Refused: no training sample is a clip (no ``video_metadata``), or, with ``batch`` > 1
    samples per forward pass, clips and image samples mixed in one set: not every
    processor takes both in one call (SmolVLM2's returns the clips' pixels only, the
    images' are lost), so a mixed batch could train on the wrong pixels.
    """
    if video_input != "video":
        return None
    if not any(is_video(c, video_input) for c in train):
        return (
            "--video-input video: no training sample carries video_metadata (the frames of "
            "one clip with their times); build the data with `mmrobust tamper-data`, or use "
            "--video-input images"
        )
    for name, group in (("training", train), ("evaluation", held_out)):
        clips = sum(is_video(c, video_input) for c in group)
        if batch > 1 and 0 < clips < len(group):
            return (
                f"--video-input video: {clips} of {len(group)} {name} samples are clips, the "
                "others images, and not every processor takes both in one batch: use "
                "--per-device-batch 1 (--global-batch is still reached by accumulation), or "
                "--video-input images"
            )
    return None


def processor_problem(processor: Any, video_input: VideoInput) -> str | None:
    """Why this processor cannot take native video (one line, as ``hf:`` says), or ``None``."""
    if video_input != "video" or getattr(processor, "video_processor", None) is not None:
        return None
    return (
        f"--video-input video needs a processor with a video input; "
        f"{type(processor).__name__} has none (use --video-input images)"
    )


def clip_call(
    clips: Sequence[Sequence[Path]],
    timings: Sequence[VideoTiming],
    max_side: int = DEFAULT_IMAGE_MAX_SIDE,
    pixel_cap: bool | None = None,
) -> dict[str, Any]:
    """Processor keyword arguments for clips of frame files: ``videos``, ``video_metadata``,
    ``do_sample_frames=False`` (:func:`mmrobust.models._hf_inputs.video_call`); each frame
    capped at ``max_side`` pixels (0: none) as ``hf:`` caps it (:func:`mmrobust.finetune.pixels.load_frames`), the
    metadata's frame size the capped one, as evaluation's; ``pixel_cap``: the processor's
    ``cap_pixels_per_frame`` (:func:`mmrobust.models._hf_inputs.video_pixel_cap`), as ``hf:``
    passes it.

    Raises:
        OSError: a frame cannot be read.
    """
    from mmrobust.finetune.pixels import load_frames
    from mmrobust.models._hf_inputs import clip_metadata, video_call

    frames = [load_frames(paths, max_side) for paths in clips]
    metadata = [
        clip_metadata(t.fps, t.frames_indices, t.total_num_frames, f)
        for t, f in zip(timings, frames, strict=True)
    ]
    return video_call(frames, metadata, pixel_cap)


def timing_json(timing: VideoTiming | None) -> str:
    """A timing as a JSON string for a dataset row (``""``: images), see :func:`timing_of`."""
    import json

    if timing is None:
        return ""
    return json.dumps(
        {
            "fps": timing.fps,
            "frames_indices": list(timing.frames_indices),
            "total_num_frames": timing.total_num_frames,
        }
    )


def timing_of(text: str) -> VideoTiming | None:
    """The inverse of :func:`timing_json`."""
    import json

    if not text:
        return None
    raw = json.loads(text)
    return VideoTiming(float(raw["fps"]), tuple(raw["frames_indices"]), raw["total_num_frames"])


__all__ = [
    "VideoInput",
    "clip_call",
    "data_problem",
    "is_video",
    "processor_problem",
    "timing_json",
    "timing_of",
]
