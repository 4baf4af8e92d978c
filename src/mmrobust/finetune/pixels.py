"""Training pixels: each image and video frame as ``hf:`` evaluation hands it to the processor.

Evaluation (``run/process.py`` then ``models/hf.py``) gets a sample's pixels in two ways,
and training reads its files the same way for each input kind:

* a **photo** (an MMR image; also a frame given as an image, ``--video-input images``) is
  read with :func:`mmrobust.media.image.read_image` (OpenCV, EXIF orientation applied,
  longer side at most ``media.limits.MAX_FRAME_SIDE``), as ``run.process.load_image``
  reads ``Sample.image``; for a JPEG frame of ``mmrobust tamper-data`` (at most 3584 px,
  as ``sample_clip`` writes them) that is the same array as ``decode_jpeg`` gives;
* a **video frame** of a clip (``--video-input video``) is decoded with
  :func:`mmrobust.media.jpeg.decode_jpeg`, as the runner decodes a clip's cached JPEGs
  (``SampledClip.arrays``);

then each array is capped with :func:`mmrobust.media.jpeg.cap_frame` at ``max_side``
(``finetune --image-max-side``, default ``frame_size.DEFAULT_IMAGE_MAX_SIDE`` as
``hf:``'s ``image_max_side``; area downscale, never upscaled; 0: uncapped), the resize
``hf:`` applies to ``Request.frames``; images become PIL images (``Image.fromarray``, as
``hf:`` does), video frames stay arrays (``videos=[(T, H, W, 3)]``). Before this a
training sample was read at its on-disk size (PIL for photos), so a model trained on
4K frames saw other pixels, and far more tokens, than at evaluation (issue 31 item 6).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrobust.frame_size import DEFAULT_IMAGE_MAX_SIDE

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def load_images(paths: Sequence[Path], max_side: int = DEFAULT_IMAGE_MAX_SIDE) -> list[Any]:
    """Images as RGB PIL images, read and capped as ``hf:`` evaluation shows a photo.

    Args:
        paths: image files (any format OpenCV reads).
        max_side: cap on the longer side in pixels (0: as read).

    Raises:
        OSError: a file cannot be read or decoded, or is over ``MAX_FRAME_PIXELS``.
    """
    from PIL import Image

    from mmrobust.media import MediaError
    from mmrobust.media.image import read_image
    from mmrobust.media.jpeg import cap_frame

    out = []
    for path in paths:
        try:
            array = read_image(path)
        except MediaError as exc:
            raise OSError(str(exc)) from None
        out.append(Image.fromarray(cap_frame(array, max_side)))
    return out


def load_frames(paths: Sequence[Path], max_side: int = DEFAULT_IMAGE_MAX_SIDE) -> list[np.ndarray]:
    """Video frames as ``(H, W, 3) uint8 RGB`` arrays, decoded as evaluation decodes a
    clip's JPEGs and capped as ``hf:`` caps ``Request.frames``.

    Args:
        paths: the clip's frame files, in time order.
        max_side: cap on the longer side in pixels (0: as decoded).

    Raises:
        OSError: a file cannot be read or decoded.
    """
    from mmrobust.media.jpeg import cap_frame, decode_jpeg

    frames = []
    for path in paths:
        try:
            frames.append(cap_frame(decode_jpeg(Path(path).read_bytes()), max_side))
        except ValueError:
            raise OSError(f"{path}: not a decodable image") from None
    return frames


__all__ = ["load_frames", "load_images"]
