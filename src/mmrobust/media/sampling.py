"""Frame sampling policy: which frames of a clip a model sees, and whether they cover the window.

One explicit, hashable object (:class:`FramePolicy`) decides; it is part of
the results-store key, so answers obtained with different frames never mix.
All indices are **frame indices** (0-based, decode order), never seconds.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from mmrobust.schema import Window

SamplingMode = Literal["segments", "fps", "dense"]
ShortClips = Literal["once", "repeat"]


@dataclass(frozen=True)
class FramePolicy:
    """How to choose frames.

    Attributes:
        mode: ``segments`` (``n_frames`` segment centres, VLMEvalKit's rule),
            ``fps`` (``fps`` frames per second of video time, at most
            ``max_frames``), or ``dense`` (every frame, for detectors).
        n_frames: frames for ``segments`` mode (default 8, as the benchmark).
        fps: sampling rate in frames per second for ``fps`` mode.
        max_frames: cap for ``fps`` mode; when exceeded, frames are thinned evenly.
        size: ``(W, H)`` to resize decoded frames to, or ``None`` (native size).
        short_clips: ``segments`` mode on a clip with no more frames than
            ``n_frames``: ``once`` (default) sends every frame of the clip once;
            ``repeat`` keeps the segment centres, which repeat frames there, as
            the reference does (official mode). Repeated frames look like the
            "repeated frames" tampering the benchmark asks about.

    Raises:
        ValueError: inconsistent settings (non-positive counts or rates).
    """

    mode: SamplingMode = "segments"
    n_frames: int = 8
    fps: float | None = None
    max_frames: int | None = None
    size: tuple[int, int] | None = None
    short_clips: ShortClips = "once"

    def __post_init__(self) -> None:
        if self.mode not in ("segments", "fps", "dense"):
            raise ValueError(f"unknown sampling mode {self.mode!r}")
        if self.short_clips not in ("once", "repeat"):
            raise ValueError(f"short_clips must be 'once' or 'repeat', not {self.short_clips!r}")
        if self.mode == "segments" and self.n_frames < 1:
            raise ValueError("--frames must be at least 1")
        if self.mode == "fps" and (self.fps is None or self.fps <= 0):
            raise ValueError("--fps must be a positive number")
        if self.max_frames is not None and self.max_frames < 1:
            raise ValueError("--max-frames must be at least 1")

    @classmethod
    def choose(
        cls, frames: int = 8, fps: float | None = None, max_frames: int | None = None
    ) -> FramePolicy:
        """The policy of ``--frames`` / ``--fps`` / ``--max-frames``: ``fps`` mode when ``fps``
        is given (at most ``max_frames``), else ``frames`` segment centres.

        Raises:
            ValueError: ``fps`` not a finite positive number; as the constructor otherwise
                (``frames`` or ``max_frames`` below 1).
        """
        if fps is not None:
            if not math.isfinite(fps):  # inf would send frame 0 only, nan no frame
                raise ValueError(f"--fps must be a finite positive number, not {fps}")
            return cls(mode="fps", fps=fps, max_frames=max_frames)
        return cls(mode="segments", n_frames=frames)

    def describe(self) -> str:
        """Human-readable summary, e.g. ``"8 segment-centre frames"``."""
        if self.mode == "segments":
            if self.short_clips == "repeat":
                return f"{self.n_frames} segment-centre frames (repeated on shorter clips)"
            return f"{self.n_frames} segment-centre frames"
        if self.mode == "fps":
            cap = f", at most {self.max_frames}" if self.max_frames else ""
            return f"{self.fps:g} frames/s{cap}"
        return "every frame"

    def fingerprint(self) -> str:
        """Short hash of the policy (a results-store and frame-cache key part)."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def segment_centres(n_frames: int, n_segments: int) -> list[int]:
    """VLMEvalKit's segment-centre indices (MVBench family, used by MVTamperBench).

    With ``seg = (n_frames - 1) / n_segments``, index ``i`` is
    ``int(seg / 2 + round(seg * i))`` for ``i = 0 .. n_segments - 1``.
    (``round`` is NumPy's round-half-to-even, as in the reference.)

    Args:
        n_frames: frames in the clip (>= 1).
        n_segments: frames wanted.

    Returns:
        Non-decreasing frame indices in ``[0, n_frames - 1]`` (duplicates
        possible when the clip has fewer frames than segments).
    """
    if n_frames < 1:
        return []
    seg = (n_frames - 1) / n_segments
    return [int(seg / 2 + np.round(seg * i)) for i in range(n_segments)]


def frame_indices(n_frames: int, fps: Fraction | float, policy: FramePolicy) -> list[int]:
    """Frame indices a policy selects from a clip.

    Args:
        n_frames: frames in the clip (counted by decoding).
        fps: the clip's frame rate (frames per second).
        policy: the sampling policy.

    Returns:
        Sorted frame indices in ``[0, n_frames)``; empty for an empty clip.
        ``segments`` mode gives ``policy.n_frames`` segment centres; on a clip
        of at most ``policy.n_frames`` frames (where the centres repeat frames)
        it gives every frame once, ``0 .. n_frames - 1``, unless
        ``policy.short_clips == "repeat"`` (the reference's indices, repeats
        kept: 5 frames, 8 wanted -> ``[0, 0, 1, 2, 2, 2, 3, 4]``).
        ``fps`` mode takes the frame shown at each time ``k / policy.fps``
        seconds (``floor(k * fps / policy.fps)``), then thins to
        ``max_frames`` evenly spaced picks.
    """
    if n_frames < 1:
        return []
    if policy.mode == "segments":
        if n_frames <= policy.n_frames and policy.short_clips == "once":
            return list(range(n_frames))
        return segment_centres(n_frames, policy.n_frames)
    if policy.mode == "dense":
        return list(range(n_frames))
    assert policy.fps is not None
    step = float(fps) / policy.fps
    count = max(1, math.ceil(n_frames / step)) if step > 0 else 1
    idx = sorted({min(n_frames - 1, math.floor(k * step)) for k in range(count)})
    if policy.max_frames is not None and len(idx) > policy.max_frames:
        picks = np.linspace(0, len(idx) - 1, policy.max_frames).round().astype(int)
        idx = [idx[i] for i in picks]
    return idx


def window_coverage(
    indices: Sequence[int], window: Window | None, *, dropped: int | None = None
) -> bool | None:
    """Whether the sampled frames let a model see the tampering at all: the window-coverage
    rule (the one definition; the docs, the report and the cards refer to it).

    Args:
        indices: sampled frame indices (output timeline of the clip).
        window: the tamper window in the same timeline, frames ``[start, end)``.
        dropped: for an empty window (a ``dropping`` seam), how many source
            frames were removed there (F), when known.

    Returns:
        ``None`` when there is no window (originals). For a non-empty window,
        whether some index lies in ``[start_frame, end_frame)``. For a seam at
        ``s`` (frames ``s - 1`` and ``s`` were not adjacent in the source), the
        dropped-frame-count rule: the sampled frames nearest the seam on each side,
        ``a < s <= b``, must exist and be at most ``F`` frames apart
        (``b - a <= F``), so the removed stretch at least doubles the apparent motion
        between them (the same density rule as for other windows: with 8 frames,
        clips shorter than about 8 windows). ``F`` unknown counts as 1, the fewest
        frames a drop removes, which asks for ``s - 1`` and ``s`` both sampled.
    """
    if window is None:
        return None
    chosen = set(indices)
    if window.end_frame == window.start_frame:
        s = window.start_frame
        before = [i for i in chosen if i < s]
        after = [i for i in chosen if i >= s]
        gap = 1 if dropped is None else dropped
        return bool(before and after) and min(after) - max(before) <= gap
    return any(window.start_frame <= i < window.end_frame for i in chosen)


__all__ = [
    "FramePolicy",
    "SamplingMode",
    "ShortClips",
    "frame_indices",
    "segment_centres",
    "window_coverage",
]
