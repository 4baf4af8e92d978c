"""Effects beyond the paper (its "future work"): noise, shuffle, blur, flip, speed, partial_mask."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
from pydantic import Field, model_validator

from mmrobust.tamper.effects.base import EFFECTS, Effect, EffectContext
from mmrobust.tamper.effects.paper import black_box


@EFFECTS.register("noise")
class Noise(Effect):
    """Add i.i.d. Gaussian noise to every pixel of the window.

    Args:
        sigma: standard deviation in 8-bit intensity units (default 20).
    """

    name = "noise"
    sigma: float = Field(default=20.0, gt=0, le=255)

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        out = []
        for f in window:
            noisy = f.astype(np.float32) + ctx.rng.normal(0.0, self.sigma, size=f.shape)
            out.append(np.clip(np.rint(noisy), 0, 255).astype(np.uint8))
        return out


@EFFECTS.register("shuffle")
class Shuffle(Effect):
    """Permute the frames inside the window (seeded; never the identity when ``F > 1``)."""

    name = "shuffle"

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        n = len(window)
        order = np.arange(n)
        if n > 1:
            while np.array_equal(order, np.arange(n)):
                order = ctx.rng.permutation(n)
        return [window[int(i)] for i in order]


@EFFECTS.register("blur")
class Blur(Effect):
    """Gaussian-blur the window's frames.

    Args:
        sigma: blur standard deviation in pixels (default 5); kernel is ``6 * sigma + 1``.
    """

    name = "blur"
    sigma: float = Field(default=5.0, gt=0, le=100)

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        k = int(6 * self.sigma) | 1
        return [cv2.GaussianBlur(f, (k, k), self.sigma) for f in window]


@EFFECTS.register("flip")
class Flip(Effect):
    """Mirror the window's frames horizontally (left-right)."""

    name = "flip"

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        return [np.ascontiguousarray(f[:, ::-1]) for f in window]


@EFFECTS.register("speed")
class Speed(Effect):
    """Play the window at ``factor`` times its rate by decimating or duplicating frames.

    The window of ``F`` frames becomes ``round(F / factor)`` frames (at least 1);
    output frame ``j`` is window frame ``floor(j * factor)``. ``factor`` 2 keeps
    every other frame (the clip gets shorter); 0.5 shows each frame twice.

    Args:
        factor: playback rate, in [0.1, 10], not 1.
    """

    name = "speed"
    factor: float = Field(default=2.0, ge=0.1, le=10.0)

    @model_validator(mode="after")
    def _not_one(self) -> Speed:
        if self.factor == 1.0:
            raise ValueError("factor 1 leaves the clip unchanged")
        return self

    def output_length(self, length: int) -> int:
        return max(1, round(length / self.factor))

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        n = self.output_length(len(window))
        idx = np.minimum(np.floor(np.arange(n) * self.factor).astype(int), len(window) - 1)
        return [window[int(i)] for i in idx]


@EFFECTS.register("partial_mask")
class PartialMask(Effect):
    """Black out a rectangle of ``size`` (fraction of width and height) centred at ``(x, y)``.

    The rectangle is clipped to the frame. This is the paper's textual
    description of masking (section 3.2, "a black rectangle").
    """

    name = "partial_mask"
    size: float = Field(default=0.5, gt=0, le=1)
    x: float = Field(default=0.5, ge=0, le=1)
    y: float = Field(default=0.5, ge=0, le=1)

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        half = self.size / 2
        box = (
            max(0.0, self.x - half),
            max(0.0, self.y - half),
            min(1.0, self.x + half),
            min(1.0, self.y + half),
        )
        return [black_box(f, box) for f in window]


__all__ = ["Blur", "Flip", "Noise", "PartialMask", "Shuffle", "Speed"]
