"""Regenerate docs/consistency-effects.jpg: every image effect of ``mmrobust perturb`` at
severities 1-5 beside the clean photo (scikit-image's ``chelsea``, as ``mmr-demo`` ships it).

    python docs/consistency_images.py

The same functions and seeds as ``perturb`` draw the panels
(:func:`mmrobust.perturb.image.apply_image_effect`); the typographic row writes a wrong
answer ("The cat is black.") as a question about the photo would.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from mmrobust.perturb.image import IMAGE_EFFECTS, EffectContext, apply_image_effect
from mmrobust.perturb.plan import media_seed

DOCS = Path(__file__).resolve().parent
PANEL = 150
LABEL = 22


def _label(panel: np.ndarray, text: str) -> np.ndarray:
    bar = np.full((LABEL, panel.shape[1], 3), 255, np.uint8)
    cv2.putText(bar, text, (4, 16), cv2.FONT_HERSHEY_SIMPLEX, 0.42, (0, 0, 0), 1, cv2.LINE_AA)
    return np.vstack([bar, panel])


def _small(px: np.ndarray) -> np.ndarray:
    size = (PANEL, round(PANEL * px.shape[0] / px.shape[1]))
    return cv2.resize(px, size, interpolation=cv2.INTER_AREA)


def grid() -> np.ndarray:
    """Rows: effects; columns: clean, severity 1-5 (RGB uint8)."""
    import skimage.data

    photo = np.ascontiguousarray(skimage.data.chelsea())
    rows = []
    for name, effect in IMAGE_EFFECTS.items():
        cells = [_label(_small(photo), f"{name}: clean")]
        for severity in range(1, 6):
            rng = np.random.default_rng(media_seed(0, "docs", name, severity))
            ctx = EffectContext(rng=rng, text="The cat is black.")
            out, _ = apply_image_effect(name, photo, severity, ctx)
            cells.append(_label(_small(out), f"{severity}: {effect.table[severity - 1]:g}"))
        rows.append(np.hstack(cells))
    return np.vstack(rows)


def main() -> None:
    target = DOCS / "consistency-effects.jpg"
    bgr = cv2.cvtColor(grid(), cv2.COLOR_RGB2BGR)
    cv2.imwrite(str(target), bgr, [cv2.IMWRITE_JPEG_QUALITY, 85])
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
