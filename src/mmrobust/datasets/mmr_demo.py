"""The built-in MMR demo set (``--data mmr-demo``): 24 pairs about photos shipped in scikit-image."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import numpy as np

from mmrobust.atomicfile import write_bytes

DEMO_NAME = "mmr-demo"
"""Pass this as ``path`` to load the built-in demo set (images from ``skimage.data``)."""


DEMO_IMAGES: dict[str, str] = {
    "astronaut.jpg": "astronaut",
    "camera.jpg": "camera",
    "chelsea.jpg": "chelsea",
    "coffee.jpg": "coffee",
    "coins.jpg": "coins",
    "horse.jpg": "horse",
    "hubble_deep_field.jpg": "hubble_deep_field",
    "immunohistochemistry.jpg": "immunohistochemistry",
    "motorcycle.jpg": "stereo_motorcycle",
    "page.jpg": "page",
    "rocket.jpg": "rocket",
}
"""Demo image file -> the ``skimage.data`` function whose photo it is (all ship in the wheel)."""


def _demo_image(function: str) -> np.ndarray:
    """The photo as ``(H, W, 3)`` or ``(H, W)`` uint8 (the horse silhouette: black on white)."""
    import skimage.data

    image = getattr(skimage.data, function)()
    if function == "stereo_motorcycle":
        image = image[0]
    if image.dtype == bool:
        image = image.astype(np.uint8) * 255
    return np.asarray(image, dtype=np.uint8)


def materialize_demo(dest: str | Path) -> Path:
    """Write the demo set (annotation JSON and JPEG photos) under ``dest``; return the JSON path.

    The 24 pairs (two per category) are ours, in the MMR format, about photos
    that ship inside scikit-image (``skimage.data``; public domain or CC0, see
    ``mmrobust/data/mmr_demo/README.md``). Images are written once to
    ``dest/images/`` (atomic renames; existing files are kept), so the demo
    works offline on a fresh install.
    """
    import cv2

    dest = Path(dest)
    images = dest / "images"
    images.mkdir(parents=True, exist_ok=True)
    for name, function in DEMO_IMAGES.items():
        target = images / name
        if target.exists():
            continue
        pixels = _demo_image(function)
        if pixels.ndim == 3:
            pixels = cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
        ok, jpeg = cv2.imencode(".jpg", pixels, [cv2.IMWRITE_JPEG_QUALITY, 92])
        if not ok:
            raise OSError(f"could not encode {target}")
        write_bytes(target, jpeg.tobytes())
    annotation = dest / "MMR-demo.json"
    source = files("mmrobust") / "data" / "mmr_demo" / "MMR-demo.json"
    data = source.read_bytes()
    if not annotation.exists() or annotation.read_bytes() != data:
        write_bytes(annotation, data)
    return annotation


__all__ = ["DEMO_IMAGES", "DEMO_NAME", "materialize_demo"]
