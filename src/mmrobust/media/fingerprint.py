"""Content fingerprints of videos: the same video after a re-encode, a remux or padding.

Two files can hold the same video while their bytes (and sha256) differ: bytes appended
after the last box, another container (mp4 -> mkv), another encoder setting (CRF). A model
sees the same frames, so a split by source, or a check that evaluation data was not trained
on, must treat them as one video. :func:`video_fingerprint` summarises what a viewer sees:

* ``FINGERPRINT_FRAMES`` (16) frames evenly spaced over the whole clip
  (``round(linspace(0, n - 1, 16))`` of the ``n`` decoded frames; repeats when ``n < 16``),
  upright (display rotation applied);
* each as luma, area-downscaled to 72x64 by FFmpeg, then averaged in 8x8 blocks to 9x8;
* per frame a 64-bit **difference hash** (dHash: bit ``(r, c)`` is set when cell
  ``(r, c + 1)`` is brighter than cell ``(r, c)``; Krawetz, "Kind of like that", 2013) and
  the frame's mean luma (0-255, one byte).

:func:`fingerprint_distance` is the share of dHash bits that differ (0 = the same, about 0.5
for unrelated frames); :func:`same_content` says "the same video" when that share is at most
``MAX_BIT_SHARE`` and the mean luma of the frames differs by at most ``MAX_LUMA_DIFF`` on
average (the luma keeps two flat clips of different brightness apart: their dHashes are both
empty). The container, the bytes after the video, the codec settings and the resolution
do not enter; frame order and content do. Content with no structure at 9x8 (pure noise, a
flat field) fingerprints weakly: two noise clips are told apart, a heavy re-encode of one
may not be recognised.

Measured on the bundled clips (``sample_clips``): a re-encode at CRF 40, a remux to .mkv and
64 appended zero bytes are each at most 0.05 from their source (0.0 for remux and padding);
different clips are at least 0.3 apart. ``carphone_distorted`` and ``carphone_pristine``
(one recording, one of them degraded) are the same video by this measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mmrobust.media.decode import iter_frames
from mmrobust.media.errors import MediaError

FINGERPRINT_FRAMES = 16
"""Frames sampled per clip (evenly over the whole clip)."""
MAX_BIT_SHARE = 0.15
"""Largest share of differing dHash bits for "the same video" (unrelated clips: about 0.5)."""
MAX_LUMA_DIFF = 12.0
"""Largest mean absolute difference of the frames' mean luma (0-255) for "the same video"."""
PREFIX = "dhash1:"
"""Every fingerprint starts with this (the method and its version)."""

_CELLS = (9, 8)  # (W, H) of the hashed grid
_DECODE = (72, 64)  # (W, H) FFmpeg downscales to; 8x8 blocks are then averaged
_BYTES = 9  # per frame: 8 bytes of dHash, 1 byte of mean luma


def _hash_frame(gray: np.ndarray) -> bytes:
    """One ``(64, 72) uint8`` luma frame -> 8 bytes of dHash + 1 byte of mean luma."""
    cells = gray.reshape(_CELLS[1], 8, _CELLS[0], 8).astype(np.float32).mean(axis=(1, 3))
    bits = cells[:, 1:] > cells[:, :-1]  # (8, 8)
    luma = round(float(gray.mean()))
    return np.packbits(bits.ravel()).tobytes() + bytes([min(255, max(0, luma))])


def video_fingerprint(path: str | Path, *, frames: int = FINGERPRINT_FRAMES) -> str:
    """The content fingerprint of the video at ``path`` (see the module docstring).

    Decodes the whole clip once (each frame downscaled as it is decoded: memory does not
    grow with the clip's length).

    Returns:
        ``"dhash1:"`` followed by ``frames`` x 9 bytes in hex (8 of dHash, 1 of mean luma
        per sampled frame): a string that JSON stores as it is.

    Raises:
        MediaError: the file cannot be decoded or has no frame.
        ValueError: ``frames < 1``.
    """
    if frames < 1:
        raise ValueError(f"frames must be at least 1, got {frames}")
    tiny = list(iter_frames(path, size=_DECODE, gray=True))
    if not tiny:
        raise MediaError(path, "no video frame to fingerprint")
    picks = np.round(np.linspace(0, len(tiny) - 1, frames)).astype(int)
    return PREFIX + b"".join(_hash_frame(tiny[i]) for i in picks).hex()


def frame_hash(frame: np.ndarray) -> bytes:
    """The per-frame unit of a fingerprint for a picture already decoded: 9 bytes (the
    64-bit dHash of its 9x8 luma cells, then its mean luma), as :func:`video_fingerprint`
    hashes each sampled frame.

    Args:
        frame: ``(H, W)`` luma or ``(H, W, 3)`` BGR, ``uint8``, at least 1 x 1.

    The frame is area-downscaled to 72x64 by OpenCV (``INTER_AREA``) where
    :func:`video_fingerprint` has FFmpeg do it, so a hash of a decoded picture may differ
    from the file's by a few bits: compare such hashes with each other
    (:func:`frames_fingerprint`), not with a file's fingerprint.
    """
    import cv2

    if frame.ndim == 3:
        frame = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    return _hash_frame(cv2.resize(frame, _DECODE, interpolation=cv2.INTER_AREA))


def frames_fingerprint(hashes: Sequence[bytes], *, frames: int = FINGERPRINT_FRAMES) -> str:
    """A fingerprint of a clip given as its frames' :func:`frame_hash` values, in order (pure).

    ``frames`` of them are picked evenly (``round(linspace(0, n - 1, frames))``, repeats when
    fewer), as :func:`video_fingerprint` picks from the decoded frames, so two clips sampled
    with the same frame policy compare frame by frame with :func:`same_content`.

    Raises:
        ValueError: no hash, a hash that is not 9 bytes, or ``frames < 1``.
    """
    if frames < 1 or not hashes or any(len(h) != _BYTES for h in hashes):
        raise ValueError("frames_fingerprint needs frames >= 1 and one 9-byte hash per frame")
    picks = np.round(np.linspace(0, len(hashes) - 1, frames)).astype(int)
    return PREFIX + b"".join(hashes[i] for i in picks).hex()


class ContentIndex:
    """Fingerprints to look up by :func:`same_content`, parsed once (for many lookups).

    ``matches(fp)`` lists the indices of the stored fingerprints that :func:`same_content`
    calls the same video as ``fp``; the thresholds are applied to all at once (NumPy), then
    each candidate is confirmed by :func:`same_content` itself.

    Raises:
        ValueError: a malformed fingerprint, or fingerprints of different frame counts.
    """

    def __init__(self, fingerprints: Sequence[str]) -> None:
        self.fingerprints = list(fingerprints)
        parsed = [_parse(f) for f in self.fingerprints]
        if len({bits.shape for bits, _ in parsed}) > 1:
            raise ValueError("fingerprints of different frame counts cannot be compared")
        self._bits = np.stack([b for b, _ in parsed]) if parsed else None  # (N, F, 64)
        self._luma = np.stack([luma for _, luma in parsed]) if parsed else None  # (N, F)

    def matches(self, fingerprint: str) -> list[int]:
        """Indices (ascending) of the stored fingerprints of the same video as ``fingerprint``."""
        if self._bits is None or self._luma is None:
            return []
        bits, luma = _parse(fingerprint)
        if bits.shape != self._bits.shape[1:]:
            raise ValueError("fingerprints of different frame counts cannot be compared")
        share = (self._bits != bits).mean(axis=(1, 2))
        luma_diff = np.abs(self._luma - luma).mean(axis=1)
        near = np.flatnonzero((share <= MAX_BIT_SHARE + 1e-9) & (luma_diff <= MAX_LUMA_DIFF + 1e-9))
        return [int(i) for i in near if same_content(fingerprint, self.fingerprints[i])]


def _parse(fingerprint: str) -> tuple[np.ndarray, np.ndarray]:
    """``(bits (F, 64) bool, luma (F,) float)`` of a fingerprint.

    Raises:
        ValueError: not a fingerprint of :func:`video_fingerprint`.
    """
    if not isinstance(fingerprint, str) or not fingerprint.startswith(PREFIX):
        raise ValueError(f"not a video fingerprint: {str(fingerprint)[:40]!r}")
    try:
        raw = np.frombuffer(bytes.fromhex(fingerprint[len(PREFIX) :]), np.uint8)
    except ValueError:
        raise ValueError(f"not a video fingerprint: {fingerprint[:40]!r}") from None
    if raw.size == 0 or raw.size % _BYTES:
        raise ValueError(f"not a video fingerprint: {fingerprint[:40]!r}")
    rows = raw.reshape(-1, _BYTES)
    return np.unpackbits(rows[:, :8], axis=1).astype(bool), rows[:, 8].astype(np.float64)


def fingerprint_distance(a: str, b: str) -> float:
    """Share of differing dHash bits between two fingerprints, in ``[0, 1]`` (pure).

    Raises:
        ValueError: either is not a fingerprint, or they sample different frame counts.
    """
    bits_a, _ = _parse(a)
    bits_b, _ = _parse(b)
    if bits_a.shape != bits_b.shape:
        raise ValueError("fingerprints of different frame counts cannot be compared")
    return float(np.mean(bits_a != bits_b))


def _luma_diff(a: str, b: str) -> float:
    return float(np.mean(np.abs(_parse(a)[1] - _parse(b)[1])))


def _as_fingerprint(value: str | Path) -> str:
    if isinstance(value, str) and value.startswith(PREFIX):
        return value
    return video_fingerprint(value)


def same_content(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` hold the same video (a re-encode, a remux, padding).

    Each is a fingerprint (a string starting with ``"dhash1:"``) or a video path, which is
    fingerprinted first. True when :func:`fingerprint_distance` is at most ``MAX_BIT_SHARE``
    and the frames' mean luma differs by at most ``MAX_LUMA_DIFF`` on average.

    Raises:
        MediaError: a path that cannot be decoded.
        ValueError: a malformed fingerprint.
    """
    fa, fb = _as_fingerprint(a), _as_fingerprint(b)
    return fingerprint_distance(fa, fb) <= MAX_BIT_SHARE and _luma_diff(fa, fb) <= MAX_LUMA_DIFF


def content_groups(fingerprints: Sequence[str]) -> list[list[int]]:
    """Indices of ``fingerprints`` grouped by :func:`same_content`, transitively (pure).

    ``a ~ b`` and ``b ~ c`` put ``a``, ``b`` and ``c`` in one group even when ``a`` and ``c``
    are further apart. Groups are sorted by their first index, indices ascending.
    """
    parent = list(range(len(fingerprints)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(fingerprints)):
        for j in range(i + 1, len(fingerprints)):
            if root(i) != root(j) and same_content(fingerprints[i], fingerprints[j]):
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(fingerprints)):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


__all__ = [
    "FINGERPRINT_FRAMES",
    "MAX_BIT_SHARE",
    "MAX_LUMA_DIFF",
    "PREFIX",
    "ContentIndex",
    "content_groups",
    "fingerprint_distance",
    "frame_hash",
    "frames_fingerprint",
    "same_content",
    "video_fingerprint",
]
