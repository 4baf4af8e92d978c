"""Candidates found at seams: repetition at a seam, substitution, dropping, paired seams.

Pure functions over a ``SignalTrace`` and the primitives in ``primitives.py``; moved out of
``structure.py`` unchanged (rules and thresholds frozen: ``docs/forensic.md``).
"""

from __future__ import annotations

import numpy as np

from mmrobust.forensic.primitives import (
    Candidate,
    _continuity,
    _is_flip_edge,
    flat_black,
    ramp,
    shift_match,
    tone_kept,
)
from mmrobust.forensic.signals import SignalTrace
from mmrobust.forensic.thresholds import DEFAULT, Thresholds


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


__all__ = [
    "dropping_candidates",
    "paired_seam_candidates",
    "seam_repetition_candidates",
    "substitution_candidates",
]
