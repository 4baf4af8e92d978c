"""Windows of released MVTamperBench clips, derived by the released rule when a run needs them.

The released annotations carry no window (``mmrobust.schema.window``,
:func:`~mmrobust.schema.window.released_window`, states the rule). The
released-layout loader records each tampered clip's original in
``meta["original_video"]`` and its position and duration from the file name;
:class:`WindowDeriver` counts the original's frames (from its packets, no
decoding; once per original) and applies the rule. The runner calls it per
sample and stores the result with the row (``extra["derived_window"]``,
flagged ``derived``); ``StoredRow.window`` and ``ScoredRecord.window`` then
carry it under the one name ``window``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path

from mmrobust.schema import TAMPER_ORIGINAL, DerivedWindow, Sample, WindowError, released_window


class WindowDeriver:
    """Derives windows of released tampered samples; the originals are probed once each.

    A sample qualifies when it has no window, is tampered, and its ``meta``
    carries ``position`` and ``duration_s`` (from the released file name) and
    ``original_video`` (set by the released-layout loader). The original's
    frames are counted from its packets (no decoding). Thread-safe.

    ``known``: ``{original path: (frames, fps)}`` already counted the same way (the audit's
    clip facts), used instead of reading those originals again.
    """

    def __init__(self, known: Mapping[str, tuple[int, Fraction]] | None = None) -> None:
        self._memo: dict[str, tuple[int, Fraction] | None] = dict(known or {})
        self._lock = threading.Lock()

    def _facts(self, original: str) -> tuple[int, Fraction] | None:
        with self._lock:
            if original in self._memo:
                return self._memo[original]
        from mmrobust.media import MediaError
        from mmrobust.media.probe import count_packets

        try:
            counted = count_packets(Path(original))
            facts: tuple[int, Fraction] | None = (counted.frames, counted.fps)
        except (MediaError, OSError):
            facts = None
        with self._lock:
            self._memo[original] = facts
        return facts

    def __call__(self, sample: Sample) -> DerivedWindow | None:
        """The sample's derived window, or ``None`` (not a released tampered clip, or
        its original is missing, unreadable or too short)."""
        meta = sample.meta
        if sample.window is not None or sample.tamper_type in (None, TAMPER_ORIGINAL):
            return None
        position, duration = meta.get("position"), meta.get("duration_s")
        original = meta.get("original_video")
        if not (isinstance(position, str) and duration and isinstance(original, str)):
            return None
        facts = self._facts(original)
        if facts is None:
            return None
        try:
            return released_window(
                str(sample.tamper_type), facts[0], facts[1], position, float(duration)
            )
        except WindowError:
            return None


__all__ = ["WindowDeriver"]
