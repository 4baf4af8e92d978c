"""The five effects of MVTamperBench (paper section 3.2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import cv2
import numpy as np
from pydantic import Field, field_validator

from mmrobust.tamper.effects.base import EFFECTS, Effect, EffectContext

Box = tuple[float, float, float, float]


def _check_box(box: Box | None) -> Box | None:
    if box is None:
        return None
    x0, y0, x1, y1 = box
    if not (0.0 <= x0 < x1 <= 1.0 and 0.0 <= y0 < y1 <= 1.0):
        raise ValueError(
            f"box must be fractions (x0, y0, x1, y1) with 0 <= x0 < x1 <= 1, got {box}"
        )
    return box


def black_box(frame: np.ndarray, box: Box | None) -> np.ndarray:
    """Copy of ``frame`` with the fractional ``box`` (or everything when ``None``) set to 0."""
    out = frame.copy()
    if box is None:
        out[...] = 0
        return out
    h, w = frame.shape[:2]
    x0, y0, x1, y1 = box
    out[
        round(y0 * h) : max(round(y1 * h), round(y0 * h) + 1),
        round(x0 * w) : max(round(x1 * w), round(x0 * w) + 1),
    ] = 0
    return out


@EFFECTS.register("dropping")
class Dropping(Effect):
    """Remove the window: the clip gets ``F`` frames shorter.

    In the output timeline the window is empty (``[s, s)``): the seam where
    frame ``s - 1`` now meets frame ``s + F`` of the source.
    """

    name = "dropping"
    official_token = "dropping"

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        return []

    def output_length(self, length: int) -> int:
        return 0


@EFFECTS.register("masking")
class Masking(Effect):
    """Black out the window.

    Args:
        box: fractional ``(x0, y0, x1, y1)`` rectangle to black out; ``None``
            (default) blacks out the whole frame, as the released dataset did.
            The paper's text (section 3.2) says "a black rectangle": pass a box
            to follow it.
    """

    name = "masking"
    official_token = "masking"
    box: Box | None = None

    @field_validator("box")
    @classmethod
    def _valid_box(cls, v: Box | None) -> Box | None:
        return _check_box(v)

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        return [black_box(f, self.box) for f in window]


def rotate_frame(frame: np.ndarray, degrees: int) -> np.ndarray:
    """Rotate ``(H, W, 3)`` clockwise by ``degrees`` in {90, 180, 270}, keeping ``(H, W)``.

    180 is exact (pixels reversed on both axes). 90/270 rotate the image, scale
    it to fit (aspect kept, area interpolation) and centre it on black (letterbox).
    """
    if degrees == 180:
        return np.ascontiguousarray(frame[::-1, ::-1])
    h, w = frame.shape[:2]
    turned = np.rot90(frame, k=-1 if degrees == 90 else 1)  # k<0: clockwise
    th, tw = turned.shape[:2]
    scale = min(w / tw, h / th)
    nw, nh = max(1, round(tw * scale)), max(1, round(th * scale))
    small = cv2.resize(np.ascontiguousarray(turned), (nw, nh), interpolation=cv2.INTER_AREA)
    out = np.zeros_like(frame)
    y0, x0 = (h - nh) // 2, (w - nw) // 2
    out[y0 : y0 + nh, x0 : x0 + nw] = small
    return out


@EFFECTS.register("rotation")
class Rotation(Effect):
    """Rotate the window's frames (paper: 180 degrees).

    Args:
        degrees: 180 (default), or 90/270 clockwise with letterboxing so the
            frame size is kept.
    """

    name = "rotation"
    official_token = "rotate"
    degrees: Literal[90, 180, 270] = 180

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        return [rotate_frame(f, self.degrees) for f in window]


@EFFECTS.register("substitution")
class Substitution(Effect):
    """Replace the window with ``F`` consecutive frames of a donor video.

    The builder draws the donor (from the pool: by default the other sources
    of the build) and the offset from a seeded RNG, decodes the donor frames
    resized to the target size and records donor path, sha256 and offset in
    the manifest. Unlike the released generator, donor frames of a different
    size are resized, never dropped.
    """

    name = "substitution"
    official_token = "substitution"
    needs_donor = True

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        if ctx.donor is None or len(ctx.donor) != len(window):
            got = "none" if ctx.donor is None else str(len(ctx.donor))
            raise ValueError(f"substitution needs {len(window)} donor frames, got {got}")
        for d, f in zip(ctx.donor, window, strict=True):
            if d.shape != f.shape:
                raise ValueError(f"donor frame shape {d.shape} != target {f.shape}")
        return [np.array(d, dtype=np.uint8, copy=True) for d in ctx.donor]


@EFFECTS.register("repetition")
class Repetition(Effect):
    """Play the window ``times`` times back to back (default twice): the clip gets ``(times - 1) * F`` frames longer.

    Output frame ``s + F + i`` equals source frame ``s + i``.
    """

    name = "repetition"
    official_token = "repetition"
    times: int = Field(default=2, ge=2, le=10)

    def apply(self, window: Sequence[np.ndarray], ctx: EffectContext) -> list[np.ndarray]:
        return [f for _ in range(self.times) for f in window]

    def output_length(self, length: int) -> int:
        return length * self.times


__all__ = [
    "Dropping",
    "Masking",
    "Repetition",
    "Rotation",
    "Substitution",
    "black_box",
    "rotate_frame",
]
