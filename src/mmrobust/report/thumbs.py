"""Thumbnail strips for the HTML sample browser.

A strip is a row of small frames spread evenly over a clip, written once per
clip as a JPEG beside ``index.html`` (``thumbs/<key>.jpg``; an existing file is
reused). Frames inside the tamper window get a red border so the window can be
seen in the pixels; the timeline the page draws under the strip marks the
window and the frames each model was shown.

Cost: one streaming decode of the clip up to its last thumbnail, converting
only the thumbnail frames (about 120 ms for a 5 s 1280x720 MPEG-4 clip on one
core); :func:`write_strips` runs several clips at once in threads (PyAV and
OpenCV release the GIL). Images cost one read and resize.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import av.error
import cv2
import numpy as np

from mmrobust.atomicfile import write_bytes
from mmrobust.media import MediaError, probe
from mmrobust.media._open import decode_video, describe_av_error, open_video
from mmrobust.media.decode import _to_array
from mmrobust.schema import Window

THUMB_HEIGHT = 56
"""Height of one thumbnail in pixels."""

N_THUMBS = 10
"""Thumbnails per clip."""


@dataclass(frozen=True)
class Strip:
    """A written thumbnail strip.

    Attributes:
        file: path of the JPEG relative to the report folder (``thumbs/<key>.jpg``).
        n_frames: frames in the clip (the timeline's length).
        indices: the frame index of each thumbnail, left to right.
        error: one-line reason when the clip could not be read (then ``file`` is "").
    """

    file: str
    n_frames: int
    indices: tuple[int, ...]
    error: str | None = None


@dataclass(frozen=True)
class ThumbJob:
    """One piece of media to draw: a clip (with its window and known length) or an image."""

    path: Path
    kind: str  # "video" | "image"
    window: Window | None = None
    n_frames: int | None = None


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


def _decode_at(video: Path, indices: Sequence[int], height: int) -> dict[int, np.ndarray]:
    """The frames at ``indices``, ``height`` px high, in one pass that converts only those."""
    wanted = set(indices)
    last = max(wanted)
    got: dict[int, np.ndarray] = {}
    with open_video(video) as (container, stream):
        try:
            for i, frame in enumerate(decode_video(container, stream)):
                if i in wanted:
                    got[i] = _fit_height(_to_array(frame, None, False, True), height)
                if i >= last:
                    break
        except av.error.FFmpegError as exc:
            raise MediaError(video, f"decode failed: {describe_av_error(exc)}") from exc
    return got


def write_video_strip(
    video: Path,
    out_dir: Path,
    *,
    window: Window | None = None,
    n_frames: int | None = None,
    n_thumbs: int = N_THUMBS,
    height: int = THUMB_HEIGHT,
) -> Strip:
    """Write the thumbnail strip of ``video`` under ``out_dir/thumbs`` (once; reused if present).

    Args:
        video: the clip.
        out_dir: the report folder.
        window: the tamper window in the clip's timeline; thumbnails inside it get a red border.
        n_frames: the clip's frame count when known (a manifest's ``frames_output``);
            else counted from the container's packets.
        n_thumbs: thumbnails in the strip.
        height: thumbnail height in pixels.

    Returns:
        The strip; on an unreadable clip a ``Strip`` with ``error`` set (never raises ``MediaError``).
    """
    try:
        total = n_frames if n_frames else probe(video, count_frames="demux").frame_count
        idx = strip_indices(total, n_thumbs)
        rel = f"thumbs/{_key(video)}.jpg"
        target = out_dir / rel
        if not target.exists():
            if not idx:
                raise MediaError(video, "no frames")
            got = _decode_at(video, idx, height)
            idx = [i for i in idx if i in got]  # a clip shorter than its metadata says
            if not idx:
                raise MediaError(video, "no frame could be decoded")
            tiles = []
            for i in idx:
                tile = got[i]
                if window is not None and window.start_frame <= i < window.end_frame:
                    tile = _border(tile, (220, 30, 30))
                tiles.append(tile)
            gap = np.full((height, 2, 3), 255, np.uint8)
            row = np.concatenate([t for tile in tiles for t in (tile, gap)][:-1], axis=1)
            _write_jpeg(target, row)
        return Strip(file=rel, n_frames=total, indices=tuple(idx))
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


def write_strips(
    jobs: Sequence[ThumbJob],
    out_dir: Path,
    *,
    workers: int | None = None,
    seconds: float | None = None,
) -> list[Strip]:
    """Draw the jobs (clips and images) with a thread pool; results in the order given.

    Args:
        jobs: what to draw, most wanted first.
        out_dir: the report folder.
        workers: threads (default: the CPU count, at most 8).
        seconds: time budget; a job not started by then is skipped (``Strip`` with
            ``file`` "" and no ``error``). Strips already on disk cost almost nothing,
            so a second report into the same folder adds more.
    """
    deadline = None if seconds is None else time.monotonic() + seconds

    def one(job: ThumbJob) -> Strip:
        if deadline is not None and time.monotonic() > deadline:
            target = out_dir / f"thumbs/{_key(job.path)}.jpg"
            if not target.exists():
                return Strip(file="", n_frames=0, indices=())
        if job.kind == "image":
            return write_image_thumb(job.path, out_dir)
        return write_video_strip(job.path, out_dir, window=job.window, n_frames=job.n_frames)

    if not jobs:
        return []
    n = workers or min(8, os.cpu_count() or 1)
    run: Callable[[ThumbJob], Strip] = one
    if n <= 1 or len(jobs) == 1:
        return [run(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(run, jobs))


def _write_jpeg(target: Path, rgb: np.ndarray) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    ok, buf = cv2.imencode(
        ".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 80]
    )
    if not ok:  # pragma: no cover - OpenCV always encodes a valid uint8 image
        raise RuntimeError(f"could not encode {target}")
    write_bytes(target, buf.tobytes())


__all__ = [
    "N_THUMBS",
    "THUMB_HEIGHT",
    "Strip",
    "ThumbJob",
    "strip_indices",
    "write_image_thumb",
    "write_strips",
    "write_video_strip",
]
