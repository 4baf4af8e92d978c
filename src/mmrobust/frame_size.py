"""The default size cap on what a model is shown (light: imports nothing).

One constant, read by every place that caps pixels before a model's processor or API
sees them, so their defaults cannot drift apart: ``hf:``'s ``--model-arg
image_max_side`` (``models/hf.py``), ``openai:`` / ``anthropic:``'s (``models/_http.py``)
and ``finetune --image-max-side`` (``finetune/config.py``; ``mmrobust --help`` reads it,
so it lives here rather than in ``media``, whose import pulls in PyAV and OpenCV).
The resize itself is :func:`mmrobust.media.jpeg.cap_frame`.
"""

from __future__ import annotations

DEFAULT_IMAGE_MAX_SIDE = 1024
"""Longer side, in pixels, of every frame or image a model is shown unless set otherwise
(area downscale, never upscaled; one default, so the same model sees the
same pixels on every backend, and in training as at evaluation)."""

__all__ = ["DEFAULT_IMAGE_MAX_SIDE"]
