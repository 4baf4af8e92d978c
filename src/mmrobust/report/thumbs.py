"""Thumbnail strips for the HTML sample browser.

A strip is a row of small frames spread evenly over a clip, written once per
clip as a JPEG beside ``index.html`` (``thumbs/<key>.jpg``). Frames inside the
tamper window get a red border so the window can be seen in the pixels; the
timeline drawn under the strip (in the page, as SVG) marks the window and the
frames each model was shown.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from mmrobust.datasets.schema import Window
from mmrobust.media import MediaError, probe, read_frames

THUMB_HEIGHT = 56
"""Height of one thumbnail in pixels."""


@dataclass(frozen=True)
class Strip:
    """A written thumbnail strip.

    Attributes:
        file: path of the JPEG relative to the report folder (``thumbs/<key>.jpg``).
        n_frames: frames in the clip (decode-counted), the timeline's length.
        indices: the frame index of each thumbnail, left to right.
        error: one-line reason when the clip could not be read (then ``file`` is "").
    """

    file: str
    n_frames: int
    indices: tuple[int, ...]
    error: str | None = None


def _key(path: Path) -> str:
    return hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]


def strip_indices(n_frames: int, n_thumbs: int) -> list[int]:
    """``n_thumbs`` frame indices spread evenly over ``[0, n_frames)`` (segment centres).

    Returns fewer indices when the clip is shorter than ``n_thumbs`` frames.
    """
    n = min(n_thumbs, n_frames)
    if n <= 0:
        return []
    seg = n_frames / n
    return [min(n_frames - 1, int(seg * i + seg / 2)) for i in range(n)]


def _fit_height(frame: np.ndarray, height: int) -> np.ndarray:
    h, w = frame.shape[:2]
    width = max(1, round(w * height / h))
    return cv2.resize(frame, (width, height), interpolation=cv2.INTER_AREA)


def _border(frame: np.ndarray, colour: tuple[int, int, int], px: int = 3) -> np.ndarray:
    out = frame.copy()
    out[:px], out[-px:], out[:, :px], out[:, -px:] = colour, colour, colour, colour
    return out


def write_video_strip(
    video: Path,
    out_dir: Path,
    *,
    window: Window | None = None,
    n_thumbs: int = 10,
    height: int = THUMB_HEIGHT,
) -> Strip:
    """Write the thumbnail strip of ``video`` under ``out_dir/thumbs`` (once; reused if present).

    Args:
        video: the clip.
        out_dir: the report folder.
        window: the tamper window in the clip's timeline; thumbnails inside it get a red border.
        n_thumbs: thumbnails in the strip.
        height: thumbnail height in pixels.

    Returns:
        The strip; on an unreadable clip a ``Strip`` with ``error`` set (never raises ``MediaError``).
    """
    try:
        info = probe(video)
        idx = strip_indices(info.frame_count, n_thumbs)
        rel = f"thumbs/{_key(video)}.jpg"
        target = out_dir / rel
        if not target.exists():
            frames = read_frames(video, idx)
            tiles = []
            for i, frame in zip(idx, frames, strict=True):
                tile = _fit_height(frame, height)
                if window is not None and window.start_frame <= i < window.end_frame:
                    tile = _border(tile, (220, 30, 30))
                tiles.append(tile)
            gap = np.full((height, 2, 3), 255, np.uint8)
            row = np.concatenate([t for tile in tiles for t in (tile, gap)][:-1], axis=1)
            _write_jpeg(target, row)
        return Strip(file=rel, n_frames=info.frame_count, indices=tuple(idx))
    except MediaError as exc:
        return Strip(file="", n_frames=0, indices=(), error=str(exc))


def write_image_thumb(image: Path, out_dir: Path, *, height: int = 120) -> Strip:
    """Write a thumbnail of ``image`` under ``out_dir/thumbs``; ``error`` set if unreadable."""
    rel = f"thumbs/{_key(image)}.jpg"
    target = out_dir / rel
    if not target.exists():
        bgr = cv2.imread(str(image), cv2.IMREAD_COLOR)
        if bgr is None:
            return Strip(file="", n_frames=0, indices=(), error=f"{image}: not a readable image")
        _write_jpeg(target, _fit_height(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), height))
    return Strip(file=rel, n_frames=1, indices=(0,))


def _write_jpeg(target: Path, rgb: np.ndarray) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    ok, buf = cv2.imencode(
        ".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 80]
    )
    if not ok:  # pragma: no cover - OpenCV always encodes a valid uint8 image
        raise RuntimeError(f"could not encode {target}")
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(buf.tobytes())
    tmp.replace(target)


__all__ = ["THUMB_HEIGHT", "Strip", "strip_indices", "write_image_thumb", "write_video_strip"]
