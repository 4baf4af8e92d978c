"""Structure analysis: turn per-frame signals into scored tamper candidates.

Pure functions over a ``SignalTrace``. Each paper type (MVTamperBench section
3.2) is recognised by the structure it leaves, which natural editing does not:

* masking: a black run that starts and ends abruptly, whose two sides
  continue each other (a natural cut through black joins two different shots,
  a fade is gradual);
* rotation (and flips): a segment whose edges are discontinuities that vanish
  when the previous frame is rotated (flipped);
* repetition: a run of frames that duplicate the frames exactly ``L`` earlier,
  about ``L`` frames long (periodic motion repeats for much longer);
* substitution: two discontinuities bracketing a segment unlike both sides,
  whose two sides continue each other;
* dropping: a lone discontinuity inside one continuous shot: the frame after
  the seam is closer to recent frames than to older ones (the shot recedes
  behind it), where a hard cut to a new shot is equally far from all of them.

Scores are fuzzy ANDs (minimum) of linear ramps in [0, 1].
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


def masking_candidates(
    trace: SignalTrace, cuts: np.ndarray, th: Thresholds = DEFAULT
) -> list[Candidate]:
    """Black runs with abrupt edges whose sides continue each other.

    Blackness is the black fraction ``dark``, except that a flat black frame
    (mean luma <= ``FLAT_BLACK``, every pixel dark: what masking writes) counts
    1 and any other frame at most 0.5, so a masked run stands out of a dark
    night scene as well. Both edges must also be one step of mean luma of at
    least ``ABRUPT_LUMA``, over 3x the step before the onset (after the end):
    a fade reaches black in a ramp of steps. A run longer than ``max_len``
    (up to ``mask_max_len``: a masked second at a high frame rate) is beyond
    the ring of earlier frames, so its sides must match by phase correlation
    (``shift_match``); the distance ratio is unknown there.
    """
    dark = blackness(trace)
    n = trace.n
    if n < 3:
        return []
    jumps = np.flatnonzero(np.abs(np.diff(dark)) >= th.dark_jump) + 1
    step = np.diff(trace.mean.astype(np.float64), prepend=np.nan, append=np.nan)
    # step[t] = mean[t] - mean[t - 1]; an edge is one large step after (before) a flat stretch

    def abrupt(t: int, other: int) -> bool:
        s_t, s_o = abs(float(step[t])), abs(float(step[other]))
        return s_t >= ABRUPT_LUMA and not s_o * 3.0 > s_t

    out: list[Candidate] = []
    for i, a in enumerate(jumps):
        if dark[a] - dark[a - 1] < th.dark_jump or not abrupt(int(a), int(a) - 1):
            continue  # not an onset, or the end of a fade
        for b in jumps[i + 1 :]:
            length = int(b - a)
            if length > th.mask_max_len:
                break
            if dark[b - 1] - dark[b] < th.dark_jump or not abrupt(int(b), int(b) + 1):
                continue
            inside = float(np.median(dark[a:b]))
            gain = inside - max(float(dark[a - 1]), float(dark[b]))
            if length < th.min_len or gain < th.dark_gain:
                continue
            cross, ratio, match = _continuity(trace, cuts, int(a), int(b), th)
            if np.isfinite(ratio):
                cont = 1.0 - ramp(ratio, th.cont_lo, th.cont_hi)
            else:  # unknown: neutral within the ring, no evidence beyond it
                cont = 0.5 if length <= th.max_len else 0.0
            cont = max(cont, ramp(match, th.match_lo, th.match_hi))
            score = min(ramp(gain, th.dark_gain, th.dark_gain + 0.25), cont)
            out.append(
                Candidate(
                    "masking",
                    int(a),
                    int(b),
                    score,
                    {"gain": gain, "cross": cross, "cont_ratio": ratio, "match": match},
                )
            )
            break
    return out


def flip_candidates(
    trace: SignalTrace, base: np.ndarray, spikes: np.ndarray, th: Thresholds = DEFAULT
) -> list[Candidate]:
    """Segments whose edges are continuous once the previous frame is rotated/flipped."""
    out: list[Candidate] = []
    n = trace.n
    cuts = np.flatnonzero(spikes > 0)
    for kind, col in FLIPS.items():
        dt = getattr(trace, col)
        edge = np.minimum(
            spikes,
            np.clip((trace.d1 / (dt + th.floor) - th.flip_lo) / (th.flip_hi - th.flip_lo), 0, 1),
        )
        idx = [int(t) for t in np.flatnonzero(edge > 0)]
        used: set[int] = set()
        for i, a in enumerate(idx):
            for b in idx[i + 1 :]:
                if b - a > th.max_len:
                    break
                if b - a >= th.min_len:
                    s = float(min(edge[a], edge[b]))
                    out.append(
                        Candidate(
                            kind, a, b, s, {"edge_a": float(edge[a]), "edge_b": float(edge[b])}
                        )
                    )
                    used.update((a, b))
                    break
        for t in idx:
            if t in used:
                continue
            # a lone edge: the other edge fell on a natural cut, a still stretch
            # or the clip's start or end. Natural footage never continues as its
            # predecessor rotated or flipped, so the edge alone is evidence; the
            # window runs to the nearest discontinuity min_len..max_len away,
            # else to the clip's start or end when that is in range
            gap = np.abs(cuts - t)
            near = cuts[(gap >= th.min_len) & (gap <= th.max_len)]
            e = float(edge[t])
            if near.size:
                o = int(near[np.argmin(np.abs(near - t))])
                a, b, ev = min(t, o), max(t, o), {"edge": e, "lone": 1.0}
            elif trace.clip_start and th.min_len <= t <= th.max_len:
                a, b, ev = 0, t, {"edge": e, "one_sided": 1.0}
            elif trace.clip_end and th.min_len <= n - t <= th.max_len:
                a, b, ev = t, n, {"edge": e, "one_sided": 1.0}
            else:
                a, b, ev = t, t, {"edge": e, "lone": 1.0}
            out.append(Candidate(kind, a, b, 0.9 * e, ev))
    return out


def _same_period(lag: int, period: int) -> bool:
    """One lag is the other or a multiple of it, within one frame per multiple."""
    lo, hi = min(lag, period), max(lag, period)
    if lo < 1:
        return False
    k = max(1, round(hi / lo))
    return abs(hi - k * lo) <= k


def repetition_candidates(
    trace: SignalTrace, base: np.ndarray, th: Thresholds = DEFAULT
) -> list[Candidate]:
    """Runs of frames duplicating the frames one constant lag ``L`` back, about ``L`` long.

    Repetition (MVTamperBench section 3.2) replays one window once, so the
    clip has a single such run. A run is rejected as periodic motion (a
    looped animation) when, continued both ways while the best lag is a
    multiple or divisor of ``L``, it lasts much longer than ``L``; and when its
    frames are not 2-4x closer to the frames ``L`` back than to the frames
    32-64 back (``far``): in a still stretch every frame matches every
    earlier one.
    """
    n = trace.n
    rep = (trace.rep_d <= th.rep_ratio * np.maximum(base, 0.0) + 0.25) & (base >= th.rep_motion)
    rep &= np.isfinite(trace.rep_d)
    lag = trace.rep_lag.astype(np.int64)
    out: list[Candidate] = []
    t = 0
    while t < n:
        if not rep[t] or lag[t] < th.min_len:
            t += 1
            continue
        L = int(lag[t])
        e = t + 1
        while e < n and rep[e] and abs(int(lag[e]) - L) <= 1:
            e += 1
        # a loop matches at every multiple of its period: measured that way
        # its run goes on for much longer than one period
        loop, back = e, t
        while loop < n and rep[loop] and _same_period(int(lag[loop]), L):
            loop += 1
        while back > 0 and rep[back - 1] and _same_period(int(lag[back - 1]), L):
            back -= 1
        cover = (e - t) / L
        # a still stretch (a screen recording) matches every earlier frame, a
        # repeat matches the frame L back far better than frames 32-64 back
        far = trace.far[t:e]
        far = far[np.isfinite(far)]
        specific = (
            float(np.median(far)) / (float(np.median(trace.rep_d[t:e])) + 0.02)
            if far.size
            else float("nan")
        )
        s = min(
            ramp(cover, th.rep_cover_lo - 0.2, th.rep_cover_lo),
            1.0 - ramp(max(cover, (loop - back) / L), th.rep_cover_hi, th.rep_cover_hi + 0.3),
            ramp(specific, 2.0, 4.0) if np.isfinite(specific) else 1.0,
        )
        if s > 0:
            med = float(np.median(trace.rep_d[t:e] / (base[t:e] + 1e-3)))
            # the run is the second copy; the window spans both copies (manifest convention)
            out.append(
                Candidate(
                    "repetition",
                    max(0, t - L),
                    min(n, t + L),
                    s,
                    {"lag": float(L), "run": float(e - t), "rep_ratio": med},
                )
            )
        t = e
    return out


def seam_repetition_candidates(
    trace: SignalTrace, base: np.ndarray, spikes: np.ndarray, th: Thresholds = DEFAULT
) -> list[Candidate]:
    """A lone backward jump: the frame after a seam equals the frame ``L`` earlier.

    Repetition (MVTamperBench section 3.2) plays ``[a, a + L)`` twice, so the
    clip has exactly one seam, at ``t = a + L``, where frame ``t`` is a copy
    of frame ``t - L`` (its lag profile has a deep minimum at ``L``) and the
    jump ``d1[t]`` is the shot's own change over ``L - 1`` frames. This holds
    in slow scenes where the run test of ``repetition_candidates`` fails. A
    return to a shot after a cutaway (A-B-A editing) has another seam inside
    ``[t - L, t)``, an insert of earlier footage (substitution) one inside
    ``(t, t + L]``; a repetition has neither.
    """
    out: list[Candidate] = []
    cuts = np.flatnonzero(spikes > 0)
    for ev in trace.events:
        t = ev.frame - trace.offset
        if t < 1 or t >= trace.n:
            continue
        # a weaker edge than a cut suffices: the copy test below is strict
        edge = max(float(spikes[t]), ramp(float(trace.d1[t]) / (base[t] + th.floor), 2.0, 2.5))
        if edge <= 0 or trace.dark[t] >= 0.5 or trace.dark[t - 1] >= 0.5:
            continue
        prof = ev.profile
        lags = np.arange(1, prof.shape[0] + 1)
        ok = (lags >= th.min_len) & np.isfinite(prof)
        if not ok.any():
            continue
        cand = np.where(ok, prof, np.inf)
        L = int(lags[int(np.argmin(cand))])
        dmin = float(prof[L - 1])
        ratio = dmin / (float(trace.d1[t]) + 1e-3)
        if np.any((cuts >= t - L) & (cuts < t)) or _is_flip_edge(trace, t, th):
            continue  # a cut inside the copied run: A-B-A editing or a flipped segment
        if np.any((cuts > t) & (cuts <= t + L + 1)):
            continue  # the copy ends in a second seam: an insert (substitution), not a replay
        same = ev.prev_lag_distance(L - 1)
        shot = float(trace.d1[t]) / (same + th.floor) if np.isfinite(same) else float("nan")
        s = min(
            edge,
            1.0 - ramp(ratio, th.seam_rep_lo, th.seam_rep_hi),
            1.0 - ramp(shot, th.cont_lo, th.cont_hi) if np.isfinite(shot) else 0.5,
        )
        if s > 0:
            out.append(
                Candidate(
                    "repetition",
                    max(0, t - L),
                    min(trace.n, t + L),
                    s,
                    {"lag": float(L), "seam_ratio": ratio, "shot_ratio": shot},
                )
            )
    return out


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


def substitution_candidates(
    trace: SignalTrace, spikes: np.ndarray, th: Thresholds = DEFAULT
) -> list[Candidate]:
    """Two cuts bracketing a segment unlike both sides, whose two sides continue each other."""
    cuts = np.flatnonzero(spikes > 0)
    idx = [int(t) for t in cuts if not _is_flip_edge(trace, int(t), th)]
    out: list[Candidate] = []
    for i, a in enumerate(idx):
        for b in idx[i + 1 :]:
            length = b - a
            if length > th.max_len:
                break
            if length < th.min_len:
                continue
            if trace.dark[a - 1] >= 0.6 or trace.dark[b] >= 0.6:
                continue  # black on a side: a title or fade, not two sides of one shot
            cross, ratio, match = _continuity(trace, cuts, a, b, th)
            if not np.isfinite(cross):
                continue
            edge = min(float(trace.d1[a]), float(trace.d1[b]))
            unlike = 1.0 - ramp(cross / max(edge, 1e-3), th.cross_cut_lo, th.cross_cut_hi)
            cont = 1.0 - ramp(ratio, th.cont_lo, th.cont_hi) if np.isfinite(ratio) else 0.0
            cont = max(cont, ramp(match, th.match_lo, th.match_hi))
            s = min(float(spikes[a]), float(spikes[b]), unlike, cont)
            if s > 0:
                out.append(
                    Candidate(
                        "substitution",
                        a,
                        b,
                        s,
                        {"cross": cross, "cont_ratio": ratio, "match": match, "edge": edge},
                    )
                )
    return out


def dropping_candidates(
    trace: SignalTrace,
    spikes: np.ndarray,
    exclude: set[int],
    th: Thresholds = DEFAULT,
    jumps: np.ndarray | None = None,
    local: np.ndarray | None = None,
    lag: np.ndarray | None = None,
) -> list[Candidate]:
    """Lone discontinuities inside one shot.

    Four kinds of evidence, the largest wins at a frame: a thumbnail
    discontinuity whose after-frame recedes from the past or is the
    before-frame shifted; a camera displacement jump against the motion
    extrapolated from both sides (``displacement_jumps``), which also fires
    in slow pans where the thumbnail change stays small; a still-shot seam
    (``local_seams``); and a lag seam (``lag_seams``).
    """
    out: list[Candidate] = []
    cuts = np.flatnonzero(spikes > 0)
    cut_set = set(cuts.tolist())
    lag_ev = lag if lag is not None else np.zeros(trace.n, np.float32)
    black = flat_black(trace)

    def next_to_black(t: int) -> bool:
        """Frame ``t`` or ``t - 1`` is flat black: the edge of a black run (masking,
        a fade through black) is never a dropping seam; a dark night scene is not
        flat and keeps its seams."""
        return bool(black[t]) or bool(black[t - 1])

    def blocked(t: int, *, flip: bool = True) -> bool:
        """Explained already, a discontinuity (scored below), a flip edge or next to black."""
        return (
            t in exclude
            or t in cut_set
            or (flip and _is_flip_edge(trace, t, th))
            or next_to_black(t)
        )

    if lag is not None:
        for t in (int(x) for x in np.flatnonzero(lag > 0)):
            if blocked(t):
                continue
            if (jumps is not None and jumps[t] > 0) or (local is not None and local[t] > 0):
                continue  # the paths below take the larger evidence
            out.append(
                Candidate(
                    "dropping",
                    t,
                    t,
                    float(lag[t]),
                    {"lag_fit": float(trace.lag_fit[t]), "lag_jump": float(trace.lag_jump[t])},
                )
            )
    if local is not None:
        for t in (int(x) for x in np.flatnonzero(local > 0)):
            if blocked(t, flip=False):
                continue
            if jumps is not None and jumps[t] > 0:
                continue  # the displacement test below speaks for it
            out.append(
                Candidate(
                    "dropping",
                    t,
                    t,
                    max(float(local[t]), float(lag_ev[t])),
                    {"local": float(local[t]), "d1loc": float(trace.d1loc[t])},
                )
            )
    if jumps is not None:
        for t in (int(x) for x in np.flatnonzero(jumps > 0)):
            if blocked(t):
                continue
            # a cut between two similar shots (a city montage) shifts well but not in tone
            hist_ok = float(tone_kept(float(trace.hist[t]), th))
            out.append(
                Candidate(
                    "dropping",
                    t,
                    t,
                    max(min(float(jumps[t]), hist_ok), float(lag_ev[t])),
                    {
                        "jump": float(jumps[t]),
                        "resp": float(trace.resp[t]),
                        "hist": float(trace.hist[t]),
                    },
                )
            )
    for t in (int(x) for x in cuts):
        if t in exclude or _is_flip_edge(trace, t, th) or next_to_black(t):
            continue
        ev = trace.event_at(t)
        if ev is None:
            continue
        before = cuts[cuts < t]
        in_shot = t - int(before[-1]) if before.size else t  # lags that stay in the shot before t
        prof = ev.profile[: min(in_shot, ev.profile.shape[0])]
        prof = prof[np.isfinite(prof)]
        if prof.size < 2:
            continue
        far = float(np.median(prof[len(prof) // 2 :]))
        recede = far / max(float(trace.d1[t]), 1e-3)
        match = shift_match(ev.prev_fine, ev.fine)
        same_shot = max(
            ramp(recede, th.drop_recede_lo, th.drop_recede_hi),
            ramp(match, th.match_lo, th.match_hi),
        )
        hist_ok = float(tone_kept(float(trace.hist[t]), th))
        # in a still shot the local change may stand in for the whole-picture spike
        abrupt = max(float(spikes[t]), float(local[t]) if local is not None else 0.0)
        s = min(abrupt, same_shot, hist_ok)
        if jumps is not None:
            s = max(s, min(float(jumps[t]), hist_ok))
        s = max(s, float(lag_ev[t]))
        if s > 0:
            out.append(
                Candidate(
                    "dropping",
                    t,
                    t,
                    s,
                    {"recede": recede, "match": match, "hist": float(trace.hist[t])},
                )
            )
    return out


def paired_seam_candidates(
    trace: SignalTrace, cuts: np.ndarray, drops: list[Candidate], th: Thresholds = DEFAULT
) -> list[Candidate]:
    """Two in-shot seams ``min_len..max_len`` apart whose outer sides continue each other.

    A substitution whose insert comes from similar footage (the same scene
    at another time) looks like two dropping seams; the frames before the
    first and after the second still continue each other, which two
    independent seams would not (MVTamperBench section 3.2, substitution).
    """
    seams = sorted((c for c in drops if c.score > 0), key=lambda c: c.start)
    out: list[Candidate] = []
    for i, x in enumerate(seams):
        for y in seams[i + 1 :]:
            length = y.start - x.start
            if length > th.max_len:
                break
            if length < th.min_len:
                continue
            cross, ratio, match = _continuity(trace, cuts, x.start, y.start, th)
            cont = 1.0 - ramp(ratio, th.cont_lo, th.cont_hi) if np.isfinite(ratio) else 0.0
            cont = max(cont, ramp(match, th.match_lo, th.match_hi))
            # the weaker seam only has to exist; the pair is scored by the stronger
            s = min(max(x.score, y.score), cont) if min(x.score, y.score) >= 0.1 else 0.0
            if s > 0:
                out.append(
                    Candidate(
                        "substitution",
                        x.start,
                        y.start,
                        s,
                        {"cross": cross, "cont_ratio": ratio, "match": match, "paired": 1.0},
                    )
                )
    return out


def analyse(trace: SignalTrace, th: Thresholds = DEFAULT) -> list[Candidate]:
    """All candidates of a clip, best first.

    Edges explained by a two-sided candidate (masking, flips, substitution)
    are not offered again as dropping seams.
    """
    if trace.n < 3:
        return []
    base = motion_baseline(trace, th)
    still = motion_baseline(trace, th, still=True)
    spikes = spike_strength(trace, still, th)  # = discontinuities(trace, th)
    cands: list[Candidate] = []
    cuts = np.flatnonzero(spikes > 0)
    cands += masking_candidates(trace, cuts, th)
    cands += flip_candidates(trace, base, spikes, th)
    # a replayed window must replay motion: measured on the still-shot level,
    # a still picture whose only steps are small once-per-GOP quality pulses
    # (a fixed keyframe interval) stays still, so exact copies of it (how a
    # re-muxed repeat comes out of x264, not of mp4v) are not a repetition
    cands += repetition_candidates(trace, still, th)
    cands += seam_repetition_candidates(trace, base, spikes, th)
    cands += substitution_candidates(trace, spikes, th)
    explained: set[int] = set()
    for c in cands:
        if c.score >= th.decision and c.kind != "repetition":
            explained.update((c.start, c.end))
        if c.kind == "repetition":
            explained.add(c.start + (c.end - c.start) // 2)
    drops = dropping_candidates(
        trace,
        spikes,
        explained,
        th,
        displacement_jumps(trace, th),
        local_seams(trace, th),
        lag_seams(trace, th),
    )
    cands += paired_seam_candidates(trace, cuts, drops, th) + drops  # pairs win ties
    cands.sort(key=lambda c: -c.score)
    return cands


def summary(trace: SignalTrace, th: Thresholds = DEFAULT) -> dict[str, Any]:
    """A small JSON summary of the clip's signals (stored in ``Response.extra``)."""
    spikes = discontinuities(trace, th)
    return {
        "frames": int(trace.n),
        "median_motion": round(float(np.median(trace.d1)) if trace.n else 0.0, 3),
        "discontinuities": int(np.count_nonzero(spikes > 0)),
        "dark_frames": int(np.count_nonzero(trace.dark >= 0.5)),
        "events": len(trace.events),
    }


__all__ = [
    "FLAT_BLACK",
    "FLIPS",
    "Candidate",
    "analyse",
    "blackness",
    "discontinuities",
    "displacement_jumps",
    "dropping_candidates",
    "flat_black",
    "flip_candidates",
    "lag_seams",
    "local_seams",
    "masking_candidates",
    "motion_baseline",
    "paired_seam_candidates",
    "ramp",
    "repetition_candidates",
    "seam_repetition_candidates",
    "spike_strength",
    "substitution_candidates",
    "summary",
]
