"""On-disk cache of decoded frames, keyed by (file content hash, sampling policy).

Cache key: ``sha256(content_sha256(video) + policy.fingerprint())``; the
entry is ``<dir>/<key[:2]>/<key>.npz`` holding ``frames`` ``(K, H, W, 3)
uint8`` and ``indices`` ``(K,) int64`` plus the clip's ``n_frames`` and
``fps``.

Write order: frames are saved to a unique temporary file in the same
folder, then ``os.replace``-d onto the final name. The rename is atomic, so
a reader sees either no entry or a complete one, and several workers (or
processes) writing the same key at once are safe: the last rename wins and
every version is identical. A corrupt or unreadable entry is treated as a
miss and overwritten.

Content hashes are memoised per ``(path, size, mtime_ns)`` so a clip is read
in full only once per process.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mmrobust.media.sampling import FramePolicy

_HASH_MEMO: dict[tuple[str, int, int], str] = {}
_HASH_LOCK = threading.Lock()


def content_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes (streamed), memoised by path, size and mtime.

    Raises:
        OSError: the file cannot be read.
    """
    p = Path(path)
    st = p.stat()
    memo_key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    with _HASH_LOCK:
        hit = _HASH_MEMO.get(memo_key)
    if hit:
        return hit
    h = hashlib.sha256()
    with p.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    digest = h.hexdigest()
    with _HASH_LOCK:
        _HASH_MEMO[memo_key] = digest
    return digest


@dataclass(frozen=True)
class CachedFrames:
    """Decoded frames of one clip under one policy.

    Attributes:
        frames: ``(K, H, W, 3) uint8 RGB``.
        indices: ``(K,)`` source frame indices of ``frames``.
        n_frames: frames in the clip.
        fps: the clip's frame rate (frames per second).
    """

    frames: np.ndarray
    indices: np.ndarray
    n_frames: int
    fps: float


class FrameCache:
    """A folder of decoded-frame entries (see module docstring for key and write order).

    Args:
        root: cache folder; created on first write.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def key(self, video: str | Path, policy: FramePolicy) -> str:
        """Cache key of a clip under a policy (hex sha256)."""
        return hashlib.sha256(
            f"{content_sha256(video)}:{policy.fingerprint()}".encode()
        ).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.npz"

    def get(self, video: str | Path, policy: FramePolicy) -> CachedFrames | None:
        """The cached entry, or ``None`` on a miss (or an unreadable entry)."""
        path = self._path(self.key(video, policy))
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                return CachedFrames(
                    frames=z["frames"],
                    indices=z["indices"],
                    n_frames=int(z["n_frames"]),
                    fps=float(z["fps"]),
                )
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            return None

    def put(self, video: str | Path, policy: FramePolicy, entry: CachedFrames) -> Path:
        """Store an entry atomically; returns its path."""
        path = self._path(self.key(video, policy))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(
                    fh,
                    frames=entry.frames,
                    indices=entry.indices,
                    n_frames=np.int64(entry.n_frames),
                    fps=np.float64(entry.fps),
                )
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path


__all__ = ["CachedFrames", "FrameCache", "content_sha256"]
