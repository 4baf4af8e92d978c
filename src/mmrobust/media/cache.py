"""On-disk cache of sampled frames, JPEG-encoded, with a size cap and LRU eviction.

Cache key: ``sha256(content_sha256(video), policy.fingerprint(),
encoding.fingerprint(), FORMAT)``: the clip's bytes, which frames, and how
they are encoded (quality, size). An entry is one file
``<dir>/<key[:2]>/<key>.frames``: a magic line, a JSON header (indices,
frame count, fps, size, the length of each JPEG, and what the entry is: its
own ``key``, the clip's ``video_sha256`` and the ``sha256`` of the JPEG
bytes) and the JPEGs back to back; what a model is sent, 20-100x smaller than
the decoded frames.

An entry is checked on every read (issue 27 item 6): an entry whose recorded
key is not the key asked for (two entries' bytes swapped, or copied under
another name), whose clip hash is not the clip's, or whose JPEG bytes do not
hash to the recorded checksum (zeroed or flipped bytes) is a miss, counted as
``rejected``, and the provider decodes the clip again and rewrites it.

Write order: an entry is written to a unique temporary file in the same
folder, then ``os.replace``-d onto its name. The rename is atomic, so a
reader sees no entry or a complete one, and several threads or processes
writing one key at once are safe (every version is identical). A corrupt
or unreadable entry is a miss and is overwritten.

Size cap and eviction: the cache keeps a running total of its bytes (from
one scan of the folder, then counted per write). When a write takes it past
``max_bytes``, the least recently used entries are deleted until it is
below 90 % of the cap. "Used" is the file's mtime: a hit touches it.

Failures never fail a sample: an entry that cannot be read is a miss; a
cache that cannot be written (full disk, read-only folder) logs one warning
and stops writing for the rest of the run, and the frames are used as they
are. :meth:`FrameCache.stats` (written into ``run.json``) says what happened.

Content hashes are memoised per ``(path, size, mtime_ns)`` so a clip is read
in full only once per process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from fractions import Fraction
from pathlib import Path
from typing import Any

from mmrobust.media.frames import SampledClip
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.media.sampling import FramePolicy

log = logging.getLogger(__name__)

FORMAT = "mmrobust-frames-3"
"""Entry format tag (part of the key: a new format never reads an old entry). Version 2
records the key, the clip's sha256 and a payload checksum in the header; version 3 marks the
decode rules of issue 27 item 12 (a clip those refuse, e.g. an mp4 whose timestamps do not
advance, must not be served from an entry an earlier version wrote)."""
_MAGIC = (FORMAT + "\n").encode()
SUFFIX = ".frames"
LEGACY_SUFFIX = ".npz"
"""Entries of the previous format (raw decoded frames): counted, and evicted first."""
DEFAULT_MAX_BYTES = 10 * 1000**3
"""Default cap: 10 GB (about one full MVTamperBench pass at 8 frames; see docs/evaluation.md)."""
LOW_WATER = 0.9

_HASH_MEMO: dict[tuple[str, int, int], str] = {}
_HASH_LOCK = threading.Lock()
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"10GB"``, ``"500M"``, ``"2GiB"``, ``"0"`` -> bytes.

    Raises:
        ValueError: not a size.
    """
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 10GB, 500MB, 2GiB)")
    unit = (m[2] or "").lower()
    base = 1024 if "i" in unit else 1000
    power = {"": 0, "b": 0, "k": 1, "m": 2, "g": 3, "t": 4}[unit[:1] if unit else ""]
    return int(float(m[1]) * base**power)


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


class EntryMismatch(ValueError):
    """A well-formed entry that is not the one asked for, or whose JPEG bytes changed."""


def dumps_entry(clip: SampledClip, *, key: str = "", video_sha256: str = "") -> bytes:
    """An entry's bytes (see the module docstring).

    Args:
        clip: the sampled frames.
        key: the cache key the entry is stored under (checked on read).
        video_sha256: the clip's content hash (checked on read when the reader knows it).
    """
    header = json.dumps(
        {
            "key": key,
            "video_sha256": video_sha256,
            "sha256": _payload_sha256(clip.jpegs),
            "indices": list(clip.indices),
            "n_frames": clip.n_frames,
            "fps": str(clip.fps),
            "size": list(clip.size),
            "lengths": [len(j) for j in clip.jpegs],
        }
    ).encode()
    return b"".join([_MAGIC, len(header).to_bytes(4, "big"), header, *clip.jpegs])


def _payload_sha256(jpegs: tuple[bytes, ...]) -> str:
    h = hashlib.sha256()
    for j in jpegs:
        h.update(j)
    return h.hexdigest()


def loads_entry(
    data: bytes, *, key: str | None = None, video_sha256: str | None = None
) -> SampledClip:
    """Parse an entry and check it is the one asked for.

    Args:
        data: the entry's bytes.
        key: the key it was read under (``None``: not checked).
        video_sha256: the clip's content hash (``None``: not checked).

    Raises:
        EntryMismatch: the recorded key or clip hash differs from the one given, or
            the JPEG bytes do not match the recorded checksum.
        ValueError: not an entry of this format, or cut short.
    """
    if not data.startswith(_MAGIC):
        raise ValueError("not a frame-cache entry")
    pos = len(_MAGIC)
    n = int.from_bytes(data[pos : pos + 4], "big")
    header = json.loads(data[pos + 4 : pos + 4 + n])
    pos += 4 + n
    jpegs = []
    for length in header["lengths"]:
        jpegs.append(data[pos : pos + length])
        pos += length
    if pos != len(data) or any(len(j) != k for j, k in zip(jpegs, header["lengths"], strict=True)):
        raise ValueError("frame-cache entry is cut short")
    if key is not None and header["key"] != key:
        raise EntryMismatch("frame-cache entry holds another key")
    if video_sha256 is not None and header["video_sha256"] != video_sha256:
        raise EntryMismatch("frame-cache entry holds another clip")
    if header["sha256"] != _payload_sha256(tuple(jpegs)):
        raise EntryMismatch("frame-cache entry's JPEG bytes do not match its checksum")
    return SampledClip(
        jpegs=tuple(jpegs),
        indices=tuple(int(i) for i in header["indices"]),
        n_frames=int(header["n_frames"]),
        fps=Fraction(header["fps"]),
        size=(int(header["size"][0]), int(header["size"][1])),
    )


class FrameCache:
    """A folder of sampled-frame entries with a size cap (see the module docstring).

    Thread-safe. Several processes may share a folder; each keeps its own
    running total and eviction re-scans the folder, so the cap holds up to
    what the others wrote since.

    Args:
        root: cache folder; created on first write.
        max_bytes: size cap in bytes (``0``: nothing is kept).
    """

    def __init__(self, root: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = Path(root)
        self.max_bytes = max(0, int(max_bytes))
        self._lock = threading.Lock()
        self._total: int | None = None
        self._writable = True
        self._counts = {
            "hits": 0,
            "misses": 0,
            "rejected": 0,
            "writes": 0,
            "evicted": 0,
            "write_errors": 0,
        }
        self.write_error: str | None = None

    def key(self, video: str | Path, policy: FramePolicy, encoding: FrameEncoding) -> str:
        """Cache key of a clip under a policy and encoding (hex sha256).

        Raises:
            OSError: the video cannot be read.
        """
        parts = (content_sha256(video), policy.fingerprint(), encoding.fingerprint(), FORMAT)
        return hashlib.sha256(":".join(parts).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{SUFFIX}"

    def _count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self._counts[what] += n

    def get(self, key: str, *, video_sha256: str | None = None) -> SampledClip | None:
        """The entry, or ``None`` on a miss.

        An unreadable or corrupt entry is a miss; so is one whose recorded key, clip
        hash (when ``video_sha256`` is given) or payload checksum does not match
        (counted as ``rejected`` as well; the next ``put`` rewrites it).
        """
        path = self._path(key)
        try:
            clip = loads_entry(path.read_bytes(), key=key, video_sha256=video_sha256)
        except EntryMismatch:
            self._count("rejected")
            self._count("misses")
            return None
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            self._count("misses")
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used
        self._count("hits")
        return clip

    def put(self, key: str, clip: SampledClip, *, video_sha256: str = "") -> bool:
        """Store an entry atomically (recording ``key`` and ``video_sha256``), then evict
        past the cap; never raises.

        Returns:
            Whether the entry was written (``False``: writing is off after a failure,
            or the cap is 0).
        """
        if not self._writable or self.max_bytes == 0:
            return False
        path = self._path(key)
        data = dumps_entry(clip, key=key, video_sha256=video_sha256)
        tmp: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=SUFFIX)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            self._disable(exc)
            return False
        self._count("writes")
        self._grow(len(data))
        return True

    def _disable(self, exc: BaseException) -> None:
        with self._lock:
            self._counts["write_errors"] += 1
            first = self._writable
            self._writable = False
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            self.write_error = self.write_error or reason
        if first:
            log.warning(
                "frame cache %s cannot be written (%s); frames are not cached for the rest "
                "of this run (samples are still evaluated)",
                self.root,
                reason,
            )

    def _entries(self) -> list[tuple[float, int, Path]]:
        """``(mtime, bytes, path)`` of every entry (a vanished file is skipped).

        Entries of the previous format (``.npz``: decoded frames, never read by this
        version) are listed with mtime 0, so eviction deletes them first.
        """
        out: list[tuple[float, int, Path]] = []
        if not self.root.is_dir():
            return out
        for sub in os.scandir(self.root):
            if not sub.is_dir(follow_symlinks=False):
                continue
            for e in os.scandir(sub.path):
                stale = e.name.endswith(LEGACY_SUFFIX)
                if (e.name.endswith(SUFFIX) or stale) and not e.name.startswith("."):
                    try:
                        st = e.stat()
                    except OSError:
                        continue
                    out.append((0.0 if stale else st.st_mtime, st.st_size, Path(e.path)))
        return out

    def size_bytes(self) -> int:
        """Bytes held now (scans the folder)."""
        return sum(size for _, size, _ in self._entries())

    def _grow(self, nbytes: int) -> None:
        with self._lock:
            if self._total is None:
                self._total = self.size_bytes()  # includes the entry just written
            else:
                self._total += nbytes
            if self._total <= self.max_bytes:
                return
            entries = sorted(self._entries())  # oldest use first
            total = sum(size for _, size, _ in entries)
            target = int(self.max_bytes * LOW_WATER)
            evicted = 0
            for _, size, path in entries:
                if total <= target:
                    break
                try:
                    path.unlink()
                except FileNotFoundError:
                    pass
                except OSError:
                    continue
                total -= size
                evicted += 1
            self._total = total
            self._counts["evicted"] += evicted

    def stats(self) -> dict[str, Any]:
        """What the cache did in this process and holds now (for ``run.json``)."""
        with self._lock:
            counts = dict(self._counts)
        entries = self._entries()
        return {
            "dir": str(self.root),
            "max_bytes": self.max_bytes,
            "bytes": sum(size for _, size, _ in entries),
            "entries": len(entries),
            **counts,
            "write_error": self.write_error,
        }


class ScratchFrameCache(FrameCache):
    """A :class:`FrameCache` in a new temporary folder, removed by :meth:`cleanup` (or at the
    end of a ``with`` block): what a run or a suite uses when the persistent cache is off
    (``--cache-dir none``, ``--cache-size 0``), so each clip is still decoded once per
    (policy, encoding) within it, and nothing stays on disk after it.

    Args:
        max_bytes: size cap in bytes (default :data:`DEFAULT_MAX_BYTES`).
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(
            tempfile.mkdtemp(prefix="mmrobust-frames-"), max_bytes or DEFAULT_MAX_BYTES
        )

    def stats(self) -> dict[str, Any]:
        """As :meth:`FrameCache.stats`, with ``dir`` ``None`` and ``scratch`` true (the folder
        is removed after the run)."""
        return {**super().stats(), "dir": None, "scratch": True}

    def cleanup(self) -> None:
        """Remove the folder and every entry in it."""
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ScratchFrameCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


__all__ = [
    "DEFAULT_MAX_BYTES",
    "FORMAT",
    "EntryMismatch",
    "FrameCache",
    "ScratchFrameCache",
    "content_sha256",
    "dumps_entry",
    "loads_entry",
    "parse_size",
]
