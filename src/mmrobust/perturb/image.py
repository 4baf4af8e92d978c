"""Image effects of ``mmrobust perturb``: pure functions of (pixels, severity, rng, context).

Every effect takes an ``(H, W, 3) uint8 RGB`` array and returns one of the same shape, with
the details that place it (the region touched, the angle drawn, the text written). Severities
run 1-5, as in ImageNet-C (Hendrycks & Dietterich, ICLR 2019); each effect's parameter per
severity is in :data:`SEVERITY_TABLE` (the table docs/consistency.md shows). Libraries do the
work: NumPy (noise), OpenCV (blur, resize), Pillow (JPEG, rotation, text).

Randomness comes only from the ``numpy.random.Generator`` passed in, seeded by the caller
(:func:`mmrobust.perturb.plan.media_seed`): the same seed gives the same pixels.

The typographic overlay follows SCAM's synthetic variant (Westerhoff et al., 2025): the text of
a wrong option written onto the image, away from the answer's box when one is given.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

Pixels = np.ndarray
"""``(H, W, 3) uint8`` RGB."""

SEVERITIES = (1, 2, 3, 4, 5)

FONT_NAME = "DejaVuSans.ttf"
"""The overlay's font: DejaVu Sans as shipped inside matplotlib (offline, the same everywhere)."""
TEXT_COLOUR = (255, 0, 0)
"""The overlay's text colour (RGB), drawn with a white outline of :data:`STROKE_FRACTION`."""
STROKE_COLOUR = (255, 255, 255)
STROKE_FRACTION = 0.08
"""Outline width as a share of the font size."""


@dataclass(frozen=True)
class EffectContext:
    """What an image effect may read besides the pixels.

    Attributes:
        rng: the seeded generator of this (image, effect, severity).
        text: for ``typographic``: the text to write (a wrong option's).
        avoid: for ``typographic`` and ``box_mask``: ``(x0, y0, x1, y1)`` pixels to leave
            uncovered (the answer's region), or ``None``.
    """

    rng: np.random.Generator
    text: str = ""
    avoid: tuple[int, int, int, int] | None = None


@dataclass(frozen=True)
class ImageEffect:
    """One image effect: its name, parameter per severity and function.

    Attributes:
        name: the effect's name (``--effects``).
        parameter: what the severity sets, in words with its unit.
        table: severity 1-5 -> parameter value.
        apply: ``(pixels, value, ctx) -> (pixels, details)``.
        doc: one line for ``mmrobust list effects``.
        needs_text: needs ``EffectContext.text`` (a wrong option).
    """

    name: str
    parameter: str
    table: tuple[float, ...]
    apply: Callable[[Pixels, float, EffectContext], tuple[Pixels, dict[str, Any]]]
    doc: str
    needs_text: bool = False

    def value(self, severity: int) -> float:
        """The parameter at ``severity`` (1-5).

        Raises:
            ValueError: severity outside 1-5.
        """
        if severity not in SEVERITIES:
            raise ValueError(f"severity must be 1-5, not {severity}")
        return self.table[severity - 1]


def _noise(px: Pixels, sigma: float, ctx: EffectContext) -> tuple[Pixels, dict[str, Any]]:
    noisy = px.astype(np.float64) / 255.0 + ctx.rng.normal(0.0, sigma, size=px.shape)
    return (np.clip(noisy, 0, 1) * 255).round().astype(np.uint8), {}


def _blur(px: Pixels, sigma: float, ctx: EffectContext) -> tuple[Pixels, dict[str, Any]]:
    import cv2

    return cv2.GaussianBlur(px, (0, 0), sigmaX=sigma, sigmaY=sigma), {}


def _jpeg(px: Pixels, quality: float, ctx: EffectContext) -> tuple[Pixels, dict[str, Any]]:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(px).save(buf, format="JPEG", quality=int(quality), subsampling=2)
    buf.seek(0)
    return np.asarray(Image.open(buf).convert("RGB")), {"jpeg_bytes": buf.getbuffer().nbytes}


def _overlaps(a: Sequence[int], b: Sequence[int] | None) -> bool:
    return b is not None and a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _place(
    w: int, h: int, bw: int, bh: int, ctx: EffectContext, tries: int = 50
) -> tuple[int, int, int, int]:
    """A seeded box of ``bw x bh`` inside ``w x h`` that misses ``ctx.avoid`` when it can."""
    box = (0, 0, bw, bh)
    for _ in range(tries):
        x = int(ctx.rng.integers(0, max(1, w - bw + 1)))
        y = int(ctx.rng.integers(0, max(1, h - bh + 1)))
        box = (x, y, x + bw, y + bh)
        if not _overlaps(box, ctx.avoid):
            return box
    return box


def _mask(px: Pixels, area: float, ctx: EffectContext) -> tuple[Pixels, dict[str, Any]]:
    h, w = px.shape[:2]
    side = area**0.5
    bw, bh = max(1, round(w * side)), max(1, round(h * side))
    box = _place(w, h, bw, bh, ctx)
    out = px.copy()
    out[box[1] : box[3], box[0] : box[2]] = 0
    return out, {"region": list(box)}


def _rotate(px: Pixels, degrees: float, ctx: EffectContext) -> tuple[Pixels, dict[str, Any]]:
    from PIL import Image

    angle = float(degrees) * (1 if ctx.rng.integers(0, 2) else -1)
    img = Image.fromarray(px).rotate(angle, resample=Image.Resampling.BILINEAR, fillcolor=(0, 0, 0))
    return np.asarray(img), {"angle": angle}


def _brightness(px: Pixels, shift: float, ctx: EffectContext) -> tuple[Pixels, dict[str, Any]]:
    import cv2

    hsv = cv2.cvtColor(px, cv2.COLOR_RGB2HSV).astype(np.float64)
    hsv[..., 2] = np.clip(hsv[..., 2] + shift * 255.0, 0, 255)
    return cv2.cvtColor(hsv.round().astype(np.uint8), cv2.COLOR_HSV2RGB), {}


def _contrast(px: Pixels, factor: float, ctx: EffectContext) -> tuple[Pixels, dict[str, Any]]:
    x = px.astype(np.float64)
    mean = x.mean(axis=(0, 1), keepdims=True)
    return np.clip((x - mean) * factor + mean, 0, 255).round().astype(np.uint8), {}


def _crop(px: Pixels, keep: float, ctx: EffectContext) -> tuple[Pixels, dict[str, Any]]:
    import cv2

    h, w = px.shape[:2]
    cw, ch = max(1, round(w * keep)), max(1, round(h * keep))
    x = int(ctx.rng.integers(0, w - cw + 1))
    y = int(ctx.rng.integers(0, h - ch + 1))
    out = cv2.resize(px[y : y + ch, x : x + cw], (w, h), interpolation=cv2.INTER_LINEAR)
    return out, {"region": [x, y, x + cw, y + ch]}


@cache
def font_path() -> Path:
    """DejaVu Sans from matplotlib's own fonts (no network, no system font lookup)."""
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf" / FONT_NAME


def _wrap(text: str, font: Any, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and font.getlength(f"{lines[-1]} {word}") <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines or [""]


def _typographic(px: Pixels, size: float, ctx: EffectContext) -> tuple[Pixels, dict[str, Any]]:
    from PIL import Image, ImageDraw, ImageFont

    h, w = px.shape[:2]
    points = max(8, round(h * size))
    font = ImageFont.truetype(str(font_path()), points)
    stroke = max(1, round(points * STROKE_FRACTION))
    text = "\n".join(_wrap(ctx.text, font, int(w * 0.9)))
    img = Image.fromarray(px)
    draw = ImageDraw.Draw(img)
    left, top, right, bottom = draw.multiline_textbbox((0, 0), text, font=font, stroke_width=stroke)
    bw, bh = min(w, right - left), min(h, bottom - top)
    box = _place(w, h, bw, bh, ctx)
    draw.multiline_text(
        (box[0] - left, box[1] - top),
        text,
        font=font,
        fill=TEXT_COLOUR,
        stroke_width=stroke,
        stroke_fill=STROKE_COLOUR,
    )
    details = {
        "text": ctx.text,
        "font": FONT_NAME,
        "font_size": points,
        "colour": list(TEXT_COLOUR),
        "stroke": {"width": stroke, "colour": list(STROKE_COLOUR)},
        "region": list(box),
        "avoided": list(ctx.avoid) if ctx.avoid else None,
    }
    return np.asarray(img), details


IMAGE_EFFECTS: dict[str, ImageEffect] = {
    e.name: e
    for e in (
        ImageEffect(
            "gaussian_noise",
            "noise sigma (share of 255)",
            (0.08, 0.12, 0.18, 0.26, 0.38),
            _noise,
            "additive Gaussian noise per pixel and channel (ImageNet-C)",
        ),
        ImageEffect(
            "gaussian_blur",
            "blur sigma (pixels)",
            (1, 2, 3, 4, 6),
            _blur,
            "Gaussian blur (OpenCV; ImageNet-C's sigmas)",
        ),
        ImageEffect(
            "jpeg",
            "JPEG quality",
            (25, 18, 15, 10, 7),
            _jpeg,
            "JPEG re-compression (Pillow; ImageNet-C's qualities)",
        ),
        ImageEffect(
            "box_mask",
            "masked share of the area",
            (0.05, 0.1, 0.2, 0.3, 0.5),
            _mask,
            "a black box at a seeded place (away from the answer's box when given)",
        ),
        ImageEffect(
            "tilt",
            "angle (degrees, seeded sign)",
            (5, 10, 15, 25, 35),
            _rotate,
            "rotation by a small angle about the centre, corners black (Pillow)",
        ),
        ImageEffect(
            "brightness",
            "value shift (share of 255)",
            (0.1, 0.2, 0.3, 0.4, 0.5),
            _brightness,
            "brighter: HSV value raised (ImageNet-C)",
        ),
        ImageEffect(
            "contrast",
            "contrast factor",
            (0.4, 0.3, 0.2, 0.1, 0.05),
            _contrast,
            "lower contrast: pixels pulled to the channel mean (ImageNet-C)",
        ),
        ImageEffect(
            "crop_resize",
            "kept share of each side",
            (0.9, 0.8, 0.7, 0.6, 0.5),
            _crop,
            "a seeded crop, resized back to the full size (OpenCV)",
        ),
        ImageEffect(
            "typographic",
            "font size (share of the image height)",
            (0.04, 0.06, 0.08, 0.1, 0.12),
            _typographic,
            "a wrong option's text written on the image (SCAM's synthetic attack)",
            needs_text=True,
        ),
    )
}
"""The image effects by name, in the order of docs/consistency.md."""

SEVERITY_TABLE: dict[str, tuple[float, ...]] = {n: e.table for n, e in IMAGE_EFFECTS.items()}
"""effect -> its parameter at severities 1-5."""


def apply_image_effect(
    name: str, pixels: Pixels, severity: int, ctx: EffectContext
) -> tuple[Pixels, dict[str, Any]]:
    """Apply effect ``name`` at ``severity`` to ``pixels``.

    Returns:
        ``(pixels, details)``: an ``(H, W, 3) uint8`` array like the input and a JSON-ready
        dict with ``parameter`` and ``value`` plus what the effect placed (``region``,
        ``angle``, the overlay's ``text``, ``font``, ``font_size``, ``colour``).

    Raises:
        KeyError: no such effect. ValueError: severity outside 1-5.
    """
    effect = IMAGE_EFFECTS[name]
    value = effect.value(severity)
    out, details = effect.apply(np.ascontiguousarray(pixels), value, ctx)
    return out, {"parameter": effect.parameter, "value": value, **details}


__all__ = [
    "FONT_NAME",
    "IMAGE_EFFECTS",
    "SEVERITIES",
    "SEVERITY_TABLE",
    "TEXT_COLOUR",
    "EffectContext",
    "ImageEffect",
    "apply_image_effect",
    "font_path",
]
