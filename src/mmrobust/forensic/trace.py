"""The per-frame signals of a clip as arrays (:class:`SignalTrace`) and the snapshots kept at
abrupt changes (:class:`Event`), as ``signals.SignalExtractor`` produces them.

Moved out of ``signals.py`` unchanged (``mmrobust.forensic.signals`` re-exports both).
Units: luma values are 0-255; distances are mean absolute differences of thumbnails in
luma units; frame indices count decoded frames from 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Event:
    """Snapshot kept at a frame whose picture changed abruptly.

    Attributes:
        frame: index ``t`` of the first frame after the change.
        prev_thumb: thumbnail of frame ``t - 1``, ``(18, 32) float32`` luma.
        thumb: thumbnail of frame ``t``, ``(18, 32) float32`` luma.
        profile: ``(max_lag,) float32``; ``profile[L - 1]`` is the distance of
            frame ``t`` to frame ``t - L`` (``nan`` before the clip start).
        prev_profile: the same for frame ``t - 1``.
        prev_fine, fine: frames ``t - 1`` and ``t`` at ``FINE_SIZE``, ``(36, 64) float32``.
    """

    frame: int
    prev_thumb: np.ndarray
    thumb: np.ndarray
    profile: np.ndarray
    prev_profile: np.ndarray
    prev_fine: np.ndarray
    fine: np.ndarray

    def lag_distance(self, lag: int) -> float:
        """Distance of frame ``t`` to frame ``t - lag`` (``nan`` if unknown)."""
        if lag < 1 or lag > self.profile.shape[0]:
            return float("nan")
        return float(self.profile[lag - 1])

    def prev_lag_distance(self, lag: int) -> float:
        """Distance of frame ``t - 1`` to frame ``t - 1 - lag`` (``nan`` if unknown)."""
        if lag < 1 or lag > self.prev_profile.shape[0]:
            return float("nan")
        return float(self.prev_profile[lag - 1])


@dataclass
class SignalTrace:
    """Per-frame signals of one clip (each array has shape ``(n,) float32``).

    Attributes:
        n: number of frames decoded.
        mean: mean luma of the frame.
        dark: fraction of pixels with luma <= ``DARK_LEVEL`` (masking).
        d1: thumbnail distance to the previous frame (cuts, seams); ``d1[0] = 0``.
        d1loc: local change: the mean of the largest ``LOCAL_FRACTION`` of the
            per-pixel thumbnail differences to the previous frame (a seam in a
            still scene where only a small region moves); ``d1loc[0] = 0``.
        hist: histogram distance to the previous frame, total variation in [0, 1].
        drot: distance of the frame to the previous frame rotated 180 degrees.
        dhflip: distance to the previous frame flipped left-right.
        dvflip: distance to the previous frame flipped top-bottom.
        rep_d: distance to the most similar frame 2..max_lag frames back (repetition).
        rep_lag: that lag in frames (0 where no frame that far back exists).
        noise: Immerkaer's noise sigma estimate (luma units).
        dx, dy: global displacement of the frame from the previous one, in
            ``FINE_SIZE`` pixels (phase correlation; camera motion); 0 at frame 0.
        resp: phase-correlation peak of that displacement (about 1 when the
            frame is the previous one shifted, under 0.3 across a cut); 0 at frame 0
            and for flat frames.
        lag_fit: how well the frame's lag profile (its distance to each of the
            ``LAG_FIT_SPAN`` frames before it) equals the previous frame's
            profile shifted by ``lag_jump`` frames (``lag_profile_fit``):
            mean absolute mismatch over the mean of the profile (0 = exact).
            A dropped window of ``F`` frames makes frame ``t`` the shot ``F``
            frames on, so its profile is the previous frame's shifted by
            about ``F``; in a continuous shot the best shift is 0. NaN while
            the ring is too short.
        lag_fit0: the same mismatch at shift 0 (no frames missing).
        lag_jump: the best shift in frames (1..``LAG_FIT_MAX``; 0 where unknown).
        far: the frame's median distance to the frames 32-64 back (how far the
            shot has drifted in one to two seconds); NaN while the ring holds
            fewer than 40 frames.
        events: snapshots at abrupt changes, in frame order.
        max_lag: ring-buffer length in frames.
        offset: frame index (in the clip) of element 0 of the arrays; event
            frames are clip indices.
        clip_start, clip_end: whether the arrays reach the clip's first / last frame
            (a chunk of a longer clip has one or both false).
    """

    n: int
    mean: np.ndarray
    dark: np.ndarray
    d1: np.ndarray
    d1loc: np.ndarray
    hist: np.ndarray
    drot: np.ndarray
    dhflip: np.ndarray
    dvflip: np.ndarray
    rep_d: np.ndarray
    rep_lag: np.ndarray
    noise: np.ndarray
    dx: np.ndarray
    dy: np.ndarray
    resp: np.ndarray
    lag_fit: np.ndarray
    lag_fit0: np.ndarray
    lag_jump: np.ndarray
    far: np.ndarray
    events: list[Event] = field(default_factory=list)
    max_lag: int = 64
    offset: int = 0
    clip_start: bool = True
    clip_end: bool = True

    def event_at(self, t: int) -> Event | None:
        """The event snapshot at local index ``t`` (clip frame ``offset + t``), if one was kept."""
        frame = self.offset + t
        for ev in self.events:
            if ev.frame == frame:
                return ev
        return None


__all__ = ["Event", "SignalTrace"]
