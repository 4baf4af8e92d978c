"""Synthetic test videos whose every frame carries its own index.

``make_synthetic_video`` draws moving textured shapes on a textured
background and, across the top band of the frame, the frame index in binary
as large black/white blocks framed by two marker blocks (white at the left,
black at the right). ``read_frame_code`` reads the index back; the blocks are
big enough to survive lossy encoding (x264 crf 18, mpeg4, vp9). A frame whose
band is blacked out, rotated or otherwise destroyed reads back as ``None``.

Shared by the media, tamper and forensic-detector tests; ``make_audio_only``
writes the "file with no video stream" of the bad-input tests.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np

from mmrobust.media import VideoWriter

CODE_BITS = 10
"""Index bits: up to 1023 frames."""


def _band_height(height: int) -> int:
    return max(8, height // 6)


def synthetic_frame(index: int, width: int, height: int, *, seed: int = 0) -> np.ndarray:
    """Frame ``index`` of the synthetic clip: ``(height, width, 3) uint8 RGB``.

    Deterministic in ``(index, width, height, seed)``; ``seed`` changes the
    colours and the background texture so two clips made with different seeds
    differ everywhere.
    """
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    base = rng.integers(40, 200, size=3)
    bg = np.empty((height, width, 3), np.uint8)
    for c in range(3):  # static low-frequency texture
        bg[..., c] = np.clip(
            base[c] + 40 * np.sin(xx / (5 + 3 * c + seed % 4) + c) * np.cos(yy / (7 + c)), 0, 255
        ).astype(np.uint8)
    frame = bg
    # moving checkerboard rectangle
    rw, rh = max(4, width // 4), max(4, height // 4)
    x0 = (3 * index) % max(1, width - rw)
    y0 = _band_height(height) + (2 * index) % max(1, height - rh - _band_height(height))
    cell = max(2, rw // 4)
    checker = (((yy[:rh, :rw] // cell) + (xx[:rh, :rw] // cell)) % 2).astype(bool)
    patch = frame[y0 : y0 + rh, x0 : x0 + rw]
    colour = rng.integers(0, 256, size=3).astype(np.uint8)
    patch[checker[: patch.shape[0], : patch.shape[1]]] = colour
    # moving circle
    cx = width - 1 - (5 * index) % width
    cy = height // 2 + int((height // 4) * np.sin(index / 5))
    cv2.circle(frame, (cx, cy), max(2, min(width, height) // 8), (255, 220, 0), -1)
    _draw_code(frame, index)
    return frame


def _draw_code(frame: np.ndarray, index: int) -> None:
    height, width = frame.shape[:2]
    band = _band_height(height)
    n_blocks = CODE_BITS + 2
    edges = np.linspace(0, width, n_blocks + 1).astype(int)
    bits = [1] + [(index >> b) & 1 for b in range(CODE_BITS - 1, -1, -1)] + [0]
    for k, bit in enumerate(bits):
        frame[:band, edges[k] : edges[k + 1]] = 255 if bit else 0


def read_frame_code(frame: np.ndarray) -> int | None:
    """Index encoded in ``frame`` (RGB or gray), or ``None`` when the band is unreadable.

    Each block is judged by the mean of its central half; a block between
    64 and 192 counts as unreadable.
    """
    gray = frame if frame.ndim == 2 else frame.mean(axis=2)
    height, width = gray.shape[:2]
    band = _band_height(height)
    n_blocks = CODE_BITS + 2
    edges = np.linspace(0, width, n_blocks + 1).astype(int)
    bits: list[int] = []
    for k in range(n_blocks):
        x0, x1 = edges[k], edges[k + 1]
        q = max(1, (x1 - x0) // 4)
        qy = max(1, band // 4)
        v = float(gray[qy : band - qy, x0 + q : x1 - q].mean())
        if 64 <= v <= 192:
            return None
        bits.append(1 if v > 128 else 0)
    if bits[0] != 1 or bits[-1] != 0:
        return None
    value = 0
    for b in bits[1:-1]:
        value = (value << 1) | b
    return value


def make_synthetic_video(
    path: str | Path,
    n_frames: int,
    fps: Fraction | float | int = 25,
    size: tuple[int, int] = (160, 96),
    *,
    seed: int = 0,
    codec: str = "libx264",
    crf: int | None = 18,
    pix_fmt: str = "yuv420p",
    rotation: int | None = None,
    colorspace: int | None = None,
    color_range: int | None = None,
) -> Path:
    """Write a synthetic clip of ``n_frames`` frames of ``size = (W, H)`` at ``fps``.

    The container follows the suffix of ``path``. ``rotation`` (degrees
    counter-clockwise) adds display-matrix side data; ``colorspace`` /
    ``color_range`` (FFmpeg codes) set the YUV matrix and range. Returns ``path``.
    """
    width, height = size
    p = Path(path)
    with VideoWriter(
        p,
        fps,
        width,
        height,
        codec=codec,
        crf=crf,
        pix_fmt=pix_fmt,
        colorspace=colorspace,
        color_range=color_range,
    ) as w:
        if rotation is not None:
            w._stream.set_display_rotation(rotation)
        for i in range(n_frames):
            w.write(synthetic_frame(i, width, height, seed=seed))
    return p


def synthetic_frames(n_frames: int, size: tuple[int, int], *, seed: int = 0) -> np.ndarray:
    """The exact (unencoded) frames ``make_synthetic_video`` writes: ``(N, H, W, 3) uint8``."""
    width, height = size
    return np.stack([synthetic_frame(i, width, height, seed=seed) for i in range(n_frames)])


__all__ = [
    "CODE_BITS",
    "make_synthetic_video",
    "read_frame_code",
    "synthetic_frame",
    "synthetic_frames",
]


def make_audio_only(path: str | Path, n_frames: int = 10) -> Path:
    """Write an mp4 holding only ``n_frames`` silent AAC frames (1024 samples, 16 kHz, mono)."""
    p = Path(path)
    with av.open(str(p), "w") as c:
        s = c.add_stream("aac", rate=16000)
        for i in range(n_frames):
            f = av.AudioFrame.from_ndarray(
                np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
            )
            f.sample_rate, f.pts = 16000, i * 1024
            for pkt in s.encode(f):
                c.mux(pkt)
        for pkt in s.encode(None):
            c.mux(pkt)
    return p
