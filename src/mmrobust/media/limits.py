"""Size limits on decoded frames: what a model is shown, and what is too absurd to decode.

* ``MAX_FRAME_SIDE`` = 3584 px: the longer side of every frame or image handed
  to a model (``read_frames``, ``runner.load_image``) is at most this; larger
  ones are downscaled, aspect kept (area interpolation), as each frame is
  decoded, so nothing larger is ever stacked, cached or sent. 3584 is the
  largest input any model family mmrobust runs takes: Qwen2-VL / Qwen2.5-VL's
  default ``max_pixels`` is 12,845,056 = 3584 x 3584 (their processors shrink
  anything larger); OpenAI's API fits images into 2048 x 2048; the ``openai``
  backend sends at most ``image_max_side`` (1024 by default). Eight frames at
  the cap are at most 3584 x 3584 x 3 x 8 = 308 MB.
* ``MAX_FRAME_PIXELS`` = 2**27 (134 M px, about 11585 x 11585; 8K UHD is 33 M):
  a video or image whose frame is larger is refused with a ``MediaError``
  before any frame is decoded for it (one frame at the limit is 400 MB in RGB).
  The tamper builder decodes at full size (frame-exact effects) and has the
  same refusal.
"""

from __future__ import annotations

MAX_FRAME_SIDE = 3584
"""Longer side, in pixels, of any frame or image shown to a model (larger ones are downscaled)."""

MAX_FRAME_PIXELS = 1 << 27
"""Frames with more pixels than this are a ``MediaError`` (not decoded)."""


def fit_within(width: int, height: int, max_side: int | None = None) -> tuple[int, int] | None:
    """``(W, H)`` scaled so the longer side is ``max_side`` (default ``MAX_FRAME_SIDE``),
    or ``None`` when the frame already fits (no resize)."""
    limit = MAX_FRAME_SIDE if max_side is None else max_side
    longer = max(width, height)
    if longer <= limit:
        return None
    scale = limit / longer
    return max(1, round(width * scale)), max(1, round(height * scale))


def too_large(width: int, height: int) -> str | None:
    """The ``MediaError`` reason for a frame over ``MAX_FRAME_PIXELS``, else ``None``."""
    if width * height > MAX_FRAME_PIXELS:
        side = int(MAX_FRAME_PIXELS**0.5)
        return (
            f"frame size {width}x{height} is larger than the {MAX_FRAME_PIXELS:,} pixels "
            f"mmrobust decodes (about {side}x{side})"
        )
    return None


__all__ = ["MAX_FRAME_PIXELS", "MAX_FRAME_SIDE", "fit_within", "too_large"]
