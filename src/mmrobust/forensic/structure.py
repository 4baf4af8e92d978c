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

Scores are fuzzy ANDs (minimum) of linear ramps in [0, 1]. The primitives (``Candidate``,
ramps, baselines, seam signals) live in ``primitives.py`` and the seam-based finders in
``seams.py``; this module keeps masking, flips, repetition, :func:`analyse` and
:func:`summary` and re-exports the rest, so ``mmrobust.forensic.structure`` names every
piece as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mmrobust.forensic.primitives import (
    ABRUPT_LUMA,
    FLAT_BLACK,
    FLIPS,
    Candidate,
    _continuity,
    blackness,
    discontinuities,
    displacement_jumps,
    flat_black,
    lag_seams,
    local_seams,
    motion_baseline,
    ramp,
    spike_strength,
)
from mmrobust.forensic.seams import (
    dropping_candidates,
    paired_seam_candidates,
    seam_repetition_candidates,
    substitution_candidates,
)
from mmrobust.forensic.signals import SignalTrace
from mmrobust.forensic.thresholds import DEFAULT, Thresholds


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
