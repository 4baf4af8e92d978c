"""Frames for one model: the frame cache in front of :func:`~mmrobust.media.frames.sample_clip`.

The runner asks a :class:`FrameProvider` for a clip's frames; it looks in
the cache (when there is one), decodes on a miss and stores the result. A
cache entry that turns out unusable (its JPEGs do not decode) is treated as
a miss, and a cache that cannot be read or written never fails the sample.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from mmrobust.media.cache import FrameCache, content_sha256
from mmrobust.media.frames import SampledClip, sample_clip
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.media.sampling import FramePolicy


class FrameProvider:
    """Sampled frames of clips under one policy and encoding, through an optional cache.

    Args:
        policy: which frames.
        encoding: how they are encoded (the model's ``frame_encoding()``).
        cache: the frame cache, or ``None`` (off).
    """

    def __init__(
        self, policy: FramePolicy, encoding: FrameEncoding, cache: FrameCache | None = None
    ) -> None:
        self.policy = policy
        self.encoding = encoding
        self.cache = cache
        self._lock = threading.Lock()
        self._flights: dict[str, threading.Lock] = {}  # one decode per key at once

    def clip(
        self, video: str | Path, *, arrays: bool = False
    ) -> tuple[SampledClip, tuple[np.ndarray, ...]]:
        """The clip's sampled frames, and their decoded arrays when ``arrays``.

        Raises:
            MediaError: the clip cannot be decoded (never for a cache problem).
        """
        key: str | None = None
        sha = ""
        if self.cache is not None:
            try:
                sha = content_sha256(video)  # memoised: key() reuses it
                key = self.cache.key(video, self.policy, self.encoding)
            except OSError:
                key = None  # unreadable file: sample_clip below says why
        if key is None or self.cache is None:
            clip = sample_clip(video, self.policy, self.encoding)
            return clip, clip.arrays() if arrays else ()
        with self._lock:
            flight = self._flights.setdefault(key, threading.Lock())
        with flight:  # two questions on one clip in flight at once: one decode, one hit
            # an entry of another key or clip, or with changed bytes, is a miss (rewritten)
            hit = self.cache.get(key, video_sha256=sha)
            if hit is not None:
                try:
                    return hit, hit.arrays() if arrays else ()
                except ValueError:
                    pass  # a corrupt entry: decode again and overwrite it
            clip = sample_clip(video, self.policy, self.encoding)
            self.cache.put(key, clip, video_sha256=sha)
        return clip, clip.arrays() if arrays else ()


__all__ = ["FrameProvider"]
