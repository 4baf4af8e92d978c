"""Primitives of the structure analysis: the candidate type, fuzzy ramps, motion baselines,
discontinuities, continuity across a window, darkness, and the seam signals (displacement
jumps, local and lag seams) that the candidate finders in ``structure.py`` and
``seams.py`` read.

Pure functions over a ``SignalTrace``; moved out of ``structure.py`` unchanged (rules and
thresholds frozen: ``docs/forensic.md``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from mmrobust.forensic.signals import SignalTrace
from mmrobust.forensic.thresholds import DEFAULT, Thresholds

FLIPS = {"rotation": "drot", "hflip": "dhflip", "vflip": "dvflip"}
"""Candidate type -> the signal comparing a frame with its transformed predecessor."""


@dataclass(frozen=True)
class Candidate:
    """One explanation of part of a clip as tampering.

    Attributes:
        kind: "masking", "rotation", "hflip", "vflip", "repetition",
            "substitution" or "dropping".
        start, end: predicted window, frames ``[start, end)`` of the clip as
            decoded (``start == end`` for a dropping seam).
        score: evidence in [0, 1].
        evidence: the measured quantities behind the score (JSON-safe floats).
    """

    kind: str
    start: int
    end: int
    score: float
    evidence: dict[str, float] = field(default_factory=dict)


def ramp(x: float, lo: float, hi: float) -> float:
    """0 at ``x <= lo``, 1 at ``x >= hi``, linear between (``nan`` -> 0)."""
    if not np.isfinite(x):
        return 0.0
    if hi == lo:
        return float(x >= hi)
    return float(np.clip((x - lo) / (hi - lo), 0.0, 1.0))


HOLD_EPS = 0.3
"""``d1`` below this (luma units) is a held frame (animation on twos, a freeze)."""


def _windows(v: np.ndarray, k: int, *, centre: bool = True) -> np.ndarray:
    """``(n, 2k + 1) float64``: row ``t`` holds ``v[t - k : t + k + 1]``, NaN past
    the clip ends and, when ``centre`` is false, at ``t`` itself."""
    pad = np.full(k, np.nan)
    w = np.lib.stride_tricks.sliding_window_view(
        np.concatenate([pad, np.asarray(v, dtype=np.float64), pad]), 2 * k + 1
    )
    if centre:
        return w
    w = w.copy()
    w[:, k] = np.nan
    return w


def _neighbour_max(v: np.ndarray, k: int) -> np.ndarray:
    """``(n,) float64``: the largest of ``v`` over the ``k`` frames before and the
    ``k`` after each frame (not the frame itself); ``inf`` where none exists."""
    return np.nan_to_num(_nan_reduce(np.nanmax, _windows(v, k, centre=False)), nan=np.inf)


def _nan_reduce(fn: Any, w: np.ndarray) -> np.ndarray:
    """``fn(w, axis=1)`` for a NaN-aware reduction; all-NaN rows give NaN silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(fn(w, axis=1))


def tone_kept(hist: Any, th: Thresholds = DEFAULT) -> Any:
    """1 where the histogram change (scalar or array) is at most ``drop_hist``,
    falling to 0 at ``drop_hist + 0.15``: one shot keeps its tones across a
    dropped second, a cut between two similar shots does not."""
    return 1.0 - np.clip((hist - th.drop_hist) / 0.15, 0.0, 1.0)


def motion_baseline(
    trace: SignalTrace, th: Thresholds = DEFAULT, column: str = "d1", *, still: bool = False
) -> np.ndarray:
    """Local motion level: ``(n,) float32``, the median of ``column`` (``d1``
    or ``d1loc``) over the ``2 * baseline_half + 1`` frames around each
    frame, ignoring held frames (``d1 < HOLD_EPS``) so held-frame animation
    keeps the level of its steps. With ``still``, where fewer than a quarter
    of the window's frames move (a still shot: a screen recording, a locked-off
    camera) the median of all its frames is used instead, so that a lone
    change there stands out (the level the spike test needs; the repetition
    tests keep the level of the steps). The window is clipped at the clip ends.
    """
    n = trace.n
    if n == 0:
        return np.zeros(0, np.float32)
    k = th.baseline_half
    d = np.asarray(getattr(trace, column), dtype=np.float64).copy()
    d[:1] = np.nan  # d1[0] is not a distance
    held = d.copy()
    d[trace.d1 < HOLD_EPS] = np.nan
    moving = _windows(d, k)
    base = _nan_reduce(np.nanmedian, moving)
    # a still shot (most frames held) keeps its own, near-zero level: only
    # held-frame animation, where at least a quarter of the frames step, is
    # measured on its steps
    if still:
        few = np.isfinite(moving).sum(axis=1) < (2 * k + 1) / 4
        base = np.where(few, _nan_reduce(np.nanmedian, _windows(held, k)), base)
    return np.nan_to_num(base, nan=0.0).astype(np.float32)


def discontinuities(trace: SignalTrace, th: Thresholds = DEFAULT) -> np.ndarray:
    """``spike_strength`` against the still-shot motion level
    (``motion_baseline(..., still=True)``): the abrupt changes every test starts from."""
    return spike_strength(trace, motion_baseline(trace, th, still=True), th)


def spike_strength(trace: SignalTrace, base: np.ndarray, th: Thresholds = DEFAULT) -> np.ndarray:
    """Per-frame evidence in [0, 1] of an abrupt change at frame ``t`` (from ``t - 1``)."""
    ratio = trace.d1 / (base + th.floor)
    s = np.clip((ratio - th.spike_lo) / (th.spike_hi - th.spike_lo), 0.0, 1.0)
    s[trace.d1 < th.jump_abs] = 0.0
    if trace.n:
        s[0] = 0.0
    return np.asarray(s, dtype=np.float32)


_HANN: dict[tuple[int, int], np.ndarray] = {}


def shift_match(a: np.ndarray, b: np.ndarray) -> float:
    """Phase-correlation peak between two ``(H, W) float32`` frames, about 1 when
    ``b`` is ``a`` shifted (one shot, camera moved) and under 0.3 for unrelated
    pictures (a cut). ``cv2.phaseCorrelate`` with a Hanning window."""
    key = (a.shape[1], a.shape[0])
    if key not in _HANN:
        _HANN[key] = cv2.createHanningWindow(key, cv2.CV_32F)
    if float(a.std()) < 1.0 or float(b.std()) < 1.0:
        return 0.0  # flat frames (black) carry no shift
    w = _HANN[key]
    _, response = cv2.phaseCorrelate(a * w, b * w)  # window applied here (deterministic)
    return float(response)


def _continuity(
    trace: SignalTrace, cuts: np.ndarray, a: int, b: int, th: Thresholds
) -> tuple[float, float, float]:
    """Do frames ``a - 1`` and ``b`` continue each other across the segment ``[a, b)``?

    Returns ``(cross, ratio, match)``: ``cross`` is the distance between frames
    ``a - 1`` and ``b``; ``ratio`` divides it by the distance frame ``a - 1``
    has to the frame the same span earlier *within its own shot* (the lag is
    shortened to stay after the previous discontinuity in ``cuts``). ``nan``
    where the ring did not reach that far or the shot before is too short.
    ``match`` is ``shift_match`` of the two frames (0 when unknown).
    """
    ev_end, ev_start = trace.event_at(b), trace.event_at(a)
    if ev_end is None or ev_start is None:
        return float("nan"), float("nan"), 0.0
    match = shift_match(ev_start.prev_fine, ev_end.fine)
    span = b - a + 1
    cross = ev_end.lag_distance(span)
    before = cuts[cuts <= a - 1]
    shot_start = int(before[-1]) if before.size else 0
    lag = min(span, a - 1 - shot_start)
    if lag < 2:
        return cross, float("nan"), match
    ref = ev_start.prev_lag_distance(lag)
    if not np.isfinite(ref):
        return cross, float("nan"), match
    return cross, cross / (ref + th.floor), match


FLAT_BLACK = 2.0
"""Mean luma at or below which a frame whose pixels are all dark is flat black."""

ABRUPT_LUMA = 6.0
"""Smallest one-frame change of mean luma at a masking edge (a fade's last steps are smaller)."""


def flat_black(trace: SignalTrace) -> np.ndarray:
    """``(n,) bool``: flat black frames (mean luma <= ``FLAT_BLACK`` and black
    fraction >= 0.99), what masking writes; a dark night scene is not flat."""
    return np.asarray((trace.mean <= FLAT_BLACK) & (trace.dark >= 0.99))


def blackness(trace: SignalTrace) -> np.ndarray:
    """``(n,) float32`` in [0, 1]: 1 for a flat black frame (``flat_black``),
    else the black fraction capped at 0.5."""
    return np.where(flat_black(trace), 1.0, np.minimum(trace.dark, 0.5)).astype(np.float32)


def displacement_jumps(trace: SignalTrace, th: Thresholds = DEFAULT) -> np.ndarray:
    """Per-frame evidence in [0, 1] that the camera jumped forward at frame ``t``.

    The global displacement ``(dx, dy)`` from frame ``t - 1`` to ``t`` is
    compared with the motion extrapolated from both sides (the mean of the
    median displacement over the ``jump_side`` frames before and after). A
    dropped window of ``F`` frames in a moving shot makes the seam's
    displacement about ``F + 1`` times the per-frame motion while the
    phase-correlation peak stays high (one shot, shifted). Returns ``(n,) float32``.
    """
    n = trace.n
    out = np.zeros(n, np.float32)
    k = th.jump_side
    if n < 2 * k + 3:
        return out
    dx = trace.dx.astype(np.float64)
    dy = trace.dy.astype(np.float64)
    # held frames (animation on twos/threes, freezes) are left out of the side
    # medians, as in ``motion_baseline``: the steps between them are the motion
    good = (trace.resp >= th.match_lo) & (trace.d1 >= HOLD_EPS)
    vx = np.where(good, dx, np.nan)
    vy = np.where(good, dy, np.nan)
    mag = np.hypot(vx, vy)
    pad = np.full(k, np.nan)

    def side_median(v: np.ndarray, before: bool) -> np.ndarray:
        p = np.concatenate([pad, v, pad])
        w = np.lib.stride_tricks.sliding_window_view(p, k)  # w[i] = p[i : i + k]
        med = _nan_reduce(np.nanmedian, w)
        # before: frames [t - k, t - 1] = p[t : t + k]; after: [t + 1, t + k] = p[t + k + 1 : ...]
        return med[:n] if before else med[k + 1 : k + 1 + n]

    valid = np.isfinite(mag).astype(np.float64)
    enough = np.fmin(side_median(valid, True), side_median(valid, False)) >= 0.5
    bx, by, bm = side_median(vx, True), side_median(vy, True), side_median(mag, True)
    ax, ay, am = side_median(vx, False), side_median(vy, False), side_median(mag, False)
    px, py = (bx + ax) / 2, (by + ay) / 2
    jump = np.hypot(dx - px, dy - py)
    typical = np.fmax(bm, am)
    ratio = jump / (np.nan_to_num(typical, nan=0.0) + th.shift_floor)
    agree = np.hypot(bx - ax, by - ay) / (jump + 1e-3)
    r = np.clip((ratio - th.jump_lo) / (th.jump_hi - th.jump_lo), 0, 1)
    a = np.clip((np.abs(jump) - th.jump_px) / th.jump_px, 0, 1)
    m = np.clip((trace.resp - th.match_lo) / (th.match_hi - th.match_lo), 0, 1)
    c = 1.0 - np.clip((agree - 0.3) / 0.3, 0, 1)
    s = np.fmin(np.fmin(r, a), np.fmin(m, c))
    s = np.where(enough, np.nan_to_num(s, nan=0.0), 0.0)
    s[:k] = 0.0
    s[n - k :] = 0.0
    out[:] = s
    return out


def local_seams(trace: SignalTrace, th: Thresholds = DEFAULT) -> np.ndarray:
    """Per-frame evidence in [0, 1] of a seam in a still shot, from the local change.

    In a locked-off or slow shot (a surveillance camera, a screen, a slow
    model) a dropped second moves only the few regions that move, so the
    whole-picture ``d1`` stays under the cut floor. Here the local change
    ``d1loc`` (the most-changed tenth of the thumbnail) is compared with the
    largest ``d1loc`` of the 3 frames before and the 3 after (+ ``floor_loc``)
    on the ``spike_lo..spike_hi`` ramp: it must stand above every neighbour,
    which jerky held-frame animation does not,
    and the camera must not move on either side: over the 3 frames before
    and the 3 after, the median phase-correlation peak is at least
    ``loc_resp`` and the median global shift under ``loc_shift`` pixels (a
    cut or a pan is left to the other tests); the histogram must stay
    (``drop_hist``). Returns ``(n,) float32``.
    """
    n = trace.n
    out = np.zeros(n, np.float32)
    if n < 3:
        return out
    k = 3
    loc = trace.d1loc.astype(np.float64)
    # the frame itself is not its own neighbour
    base = _neighbour_max(loc, k)
    ratio = loc / (base + th.floor_loc)
    s = np.clip((ratio - th.spike_lo) / (th.spike_hi - th.spike_lo), 0.0, 1.0)
    s[loc < th.jump_abs_loc] = 0.0
    # still camera on both sides of the seam (the seam frame itself is not
    # used: moving people disturb the correlation across a dropped second)
    shift = np.hypot(trace.dx, trace.dy)
    resp_nb = _nan_reduce(np.nanmedian, _windows(trace.resp, k, centre=False))
    shift_nb = _nan_reduce(np.nanmedian, _windows(shift, k, centre=False))
    still = (resp_nb >= th.loc_resp) & (shift_nb < th.loc_shift)
    still[: k + 1] = False  # a full neighbourhood on both sides only
    still[n - k :] = False
    out[:] = np.where(still, np.fmin(s, tone_kept(trace.hist, th)), 0.0)
    out[0] = 0.0
    return out


def lag_seams(trace: SignalTrace, th: Thresholds = DEFAULT) -> np.ndarray:
    """Per-frame evidence in [0, 1] of a dropping seam from the lag-profile fit.

    After ``F`` dropped frames, frame ``t`` is the shot ``F`` frames on, so
    its distances to the frames before it are the previous frame's distances
    ``F`` lags further (``signals.lag_profile_fit``). The evidence is the
    fuzzy AND of: the fit at the best shift beats the fit at no shift by
    ``lag_gain`` (log ratio, ramp to ``lag_gain + 0.5``); the best shift is
    under ``lag_sat`` frames (a cut to an unrelated picture fits best at the
    longest lags, where the old shot has drifted as far as it can); ``d1``
    stands out from the 3 + 3 frames around it (``seam_iso`` times their
    largest, ramp over ``exp(0.4)``) and reaches ``seam_abs`` luma units
    (ramp to 1.5x); the histogram change is at most ``lag_hist`` (ramp to
    ``lag_hist + 0.15``; looser than ``tone_kept``: the fit itself tells one
    shot from a cut). Returns ``(n,) float32``.
    """
    n = trace.n
    out = np.zeros(n, np.float32)
    k = 3
    if n < 2 * k + 2:
        return out
    eps = 0.05
    d1 = trace.d1.astype(np.float64)
    nb = _neighbour_max(d1, k)
    iso = np.log((d1 + eps) / (nb + eps))
    gain = np.log(
        (np.nan_to_num(trace.lag_fit0, nan=1.0) + 0.01)
        / (np.nan_to_num(trace.lag_fit, nan=1.0) + 0.01)
    )
    lo = np.log(th.seam_iso)
    s = np.fmin.reduce(
        [
            np.clip((gain - th.lag_gain) / 0.5, 0.0, 1.0),
            1.0 - np.clip((trace.lag_jump - (th.lag_sat - 4)) / 4.0, 0.0, 1.0),
            np.clip((iso - lo) / 0.4, 0.0, 1.0),
            np.clip((d1 - th.seam_abs) / (0.5 * th.seam_abs), 0.0, 1.0),
            1.0 - np.clip((trace.hist.astype(np.float64) - th.lag_hist) / 0.15, 0.0, 1.0),
        ]
    )
    s[trace.lag_jump < 1] = 0.0
    s[: k + 1] = 0.0
    s[n - k :] = 0.0
    out[:] = s
    return out


def _is_flip_edge(trace: SignalTrace, t: int, th: Thresholds) -> bool:
    return any(
        trace.d1[t] / (float(getattr(trace, c)[t]) + th.floor) >= th.flip_lo for c in FLIPS.values()
    )


__all__ = [
    "ABRUPT_LUMA",
    "FLAT_BLACK",
    "FLIPS",
    "HOLD_EPS",
    "Candidate",
    "blackness",
    "discontinuities",
    "displacement_jumps",
    "flat_black",
    "lag_seams",
    "local_seams",
    "motion_baseline",
    "ramp",
    "shift_match",
    "spike_strength",
    "tone_kept",
]
