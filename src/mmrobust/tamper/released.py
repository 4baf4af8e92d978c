"""Tamper windows of released MVTamperBench clips, derived by the released rule.

The released annotations carry no window, but the released generator fixes
it (``../shared/data/mvtamperbench/README.md``, "How the released clips were
generated"): with ``N`` the original's frame count and ``F = int(fps) x
duration``, the window starts at ``N // 2 - F // 2`` (middle), ``0``
(start) or ``N - F`` (end), and the tampered clip is written at ``int(fps)``.
In the tampered clip's own timeline the window is ``[s, s + F)`` for
masking, rotation and substitution, the empty seam ``[s, s)`` for dropping
(``F`` frames removed) and ``[s, s + 2F)`` for repetition (the window
played twice). A derived window is flagged as such wherever it is stored.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from mmrobust.datasets.schema import TAMPER_ORIGINAL, Sample, Window
from mmrobust.tamper.window import WindowError, make_window, parse_position, source_window

RULE = "released: F = int(fps) x duration; start = N//2 - F//2 (middle), 0 (start), N - F (end)"


@dataclass(frozen=True)
class DerivedWindow:
    """A window derived by the released rule.

    Attributes:
        source: the window in the original's timeline (``F`` frames).
        output: the window in the tampered clip's own timeline.
    """

    source: Window
    output: Window

    @property
    def dropped(self) -> int | None:
        """Frames removed at the seam (dropping), else ``None``."""
        return self.source.n_frames if self.output.n_frames == 0 else None

    def as_dict(self) -> dict[str, Any]:
        """The output window's fields plus ``source``, ``rule`` and ``derived: true``."""
        return {
            **self.output.model_dump(),
            "source": self.source.model_dump(),
            "rule": RULE,
            "derived": True,
        }


def released_window(
    effect: str, n_source: int, fps: Fraction | float, position: str, duration: float
) -> DerivedWindow:
    """The released rule for one tampered clip.

    Args:
        effect: ``dropping`` | ``masking`` | ``rotation`` | ``substitution`` | ``repetition``.
        n_source: frames in the original.
        fps: the original's frame rate (truncated to an integer by the rule).
        position: ``start`` | ``middle`` | ``end``.
        duration: window length in seconds.

    Raises:
        WindowError: the original is not longer than the window, or a bad position.
    """
    src = source_window(
        n_source, fps, duration=duration, position=parse_position(position), official_fps=True
    )
    length = {"dropping": 0, "repetition": 2 * src.n_frames}.get(effect, src.n_frames)
    out = make_window(src.start_frame, src.start_frame + length, int(fps))
    return DerivedWindow(source=src, output=out)


class WindowDeriver:
    """Derives windows of released tampered samples; the originals are probed once each.

    A sample qualifies when it has no window, is tampered, and its ``meta``
    carries ``position`` and ``duration_s`` (from the released file name) and
    ``original_video`` (set by the released-layout loader). The original's
    frames are counted from its packets (no decoding). Thread-safe.
    """

    def __init__(self) -> None:
        self._memo: dict[str, tuple[int, Fraction] | None] = {}
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


__all__ = ["RULE", "DerivedWindow", "WindowDeriver", "released_window"]
