"""Still images (MMR photos) read as evaluation reads them, before any model sees them.

:func:`read_image` is the one decode of an image file into the pixels a model is shown:
``mmrobust eval`` uses it for each sample's image (``run.process.load_image``) and
``finetune`` for each training image (``finetune/pixels.py``), so both start from the
same array (OpenCV's decoder, EXIF orientation applied, alpha dropped, 16-bit scaled
to 8).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mmrobust.media import limits
from mmrobust.media.errors import MediaError


def read_image(path: str | Path) -> np.ndarray:
    """Read an image as ``(H, W, 3) uint8 RGB``, longer side at most
    ``media.limits.MAX_FRAME_SIDE`` (3584 px; larger images are area-downscaled).

    ``cv2.imdecode(..., IMREAD_COLOR)`` then ``BGR -> RGB``: any format OpenCV reads
    (JPEG, PNG, WebP, BMP, TIFF).

    Raises:
        MediaError: unreadable, not an image, or over ``MAX_FRAME_PIXELS``.
    """
    import cv2

    data = np.fromfile(str(path), dtype=np.uint8) if Path(path).is_file() else None
    img = cv2.imdecode(data, cv2.IMREAD_COLOR) if data is not None and data.size else None
    if img is None:
        raise MediaError(path, "cannot read image")
    reason = limits.too_large(img.shape[1], img.shape[0])
    if reason is not None:
        raise MediaError(path, reason)
    fit = limits.fit_within(img.shape[1], img.shape[0])
    if fit is not None:
        img = cv2.resize(img, fit, interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(cv2.cvtColor(img, cv2.COLOR_BGR2RGB))


__all__ = ["read_image"]
