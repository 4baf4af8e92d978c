"""The pixel-only tamper detector's decision: a :class:`Verdict` per clip.

:func:`analyse_video` streams the decoded luma of a clip at ``ANALYSIS_WIDTH``
pixels wide, extracts per-frame signals (``signals.py``), explains them as
tamper candidates (``structure.py``) and calls the clip tampered when the best
candidate's score reaches ``Thresholds.decision``. A library: it knows nothing
of models, prompts or tasks; ``mmrobust.models.forensic`` is the ``Model``
adapter that turns a verdict into an answer (``--model forensic``).

The decision never reads the file name, container, codec, bitrate, fps or
duration metadata: only decoded pixels and the frame size. The fps is read
with ``probe`` *after* deciding, only to express the predicted window in
seconds (``start_s = start_frame / fps``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from mmrobust.forensic.signals import (
    D1_HIST_BINS,
    SignalExtractor,
    SignalTrace,
    analysis_size,
)
from mmrobust.forensic.structure import (
    Candidate,
    analyse,
    discontinuities,
    summary,
)
from mmrobust.forensic.thresholds import DEFAULT, Thresholds

PRIORS = ("none", "middle")

MIN_FRAMES = 8
"""Clips shorter than this many decodable frames are a media error."""

KIND_TO_EFFECT = {
    "masking": "masking",
    "rotation": "rotation",
    "hflip": "flip",
    "vflip": "flip",
    "repetition": "repetition",
    "substitution": "substitution",
    "dropping": "dropping",
}
"""Candidate kind -> effect name reported in ``pred_type``."""


@dataclass(frozen=True)
class Verdict:
    """The detector's decision on one clip (frames in the clip's decoded timeline).

    Attributes:
        tampered: score >= the decision threshold.
        score: evidence in [0, 1] (the best candidate's score, after the prior).
        pred_type: effect name of the best candidate, or ``None`` when not tampered.
        start_frame, end_frame: predicted window ``[start, end)``, or ``None``.
        candidates: the top candidates (best first), for auditing.
        frames: decoded frames.
        signals: small JSON summary of the signals.
    """

    tampered: bool
    score: float
    pred_type: str | None
    start_frame: int | None
    end_frame: int | None
    candidates: tuple[Candidate, ...]
    frames: int
    signals: dict[str, Any]


def prior_weight(c: Candidate, n: int, prior: str) -> float:
    """Location prior (off unless ``prior == "middle"``): 1 for a window centred in the
    middle third of the clip, falling linearly to 0.5 at the clip's ends (the
    paper places every window at the midpoint, section 3.2 "Tampering Location")."""
    if prior != "middle" or n <= 0:
        return 1.0
    centre = (c.start + c.end) / 2 / n
    off = abs(centre - 0.5)
    return 1.0 if off <= 1 / 6 else 1.0 - 0.5 * min(1.0, (off - 1 / 6) / (1 / 3))


def decide(trace: SignalTrace, th: Thresholds = DEFAULT, prior: str = "none") -> Verdict:
    """Decide from a whole clip's signals (pure).

    Raises:
        ValueError: unknown ``prior``.
    """
    return _verdict(analyse(trace, th), trace.n, summary(trace, th), th, prior)


DEFAULT_CHUNK = 512
"""Frames a streaming analysis step owns (memory is O(chunk + 2 * margin))."""


KEEP_CANDIDATES = 16
"""Candidates kept across streaming steps (the best by score)."""


def chunk_margin(th: Thresholds = DEFAULT) -> int:
    """Context in frames analysed on each side of a chunk: every candidate
    (at most ``2 * max_len`` frames long, a masked run at most ``mask_max_len``,
    plus the motion baseline and the displacement sides) that starts inside a
    chunk lies inside its context."""
    longest = max(2 * th.max_len, th.mask_max_len + 2)
    return longest + 2 * th.baseline_half + 2 * th.jump_side + 8


def scan(
    frames: Iterable[np.ndarray],
    th: Thresholds = DEFAULT,
    *,
    chunk: int = DEFAULT_CHUNK,
    max_lag: int | None = None,
) -> tuple[list[Candidate], dict[str, Any], int]:
    """Stream ``frames`` (``(H, W) uint8`` luma or ``(H, W, 3) uint8 RGB``) in
    bounded memory and return ``(candidates, summary, n_frames)``.

    The clip is analysed in steps of ``chunk`` frames, each with
    ``chunk_margin(th)`` frames of context on both sides; a step keeps the
    candidates that start inside its own chunk (frame indices are clip
    indices) and the extractor then forgets the frames no later step needs.
    Only the candidates, a histogram of ``d1`` and a few counters outlive a
    step, so peak memory does not grow with the clip's length. On a clip no
    longer than ``chunk + 2 * margin`` the result equals ``analyse`` on the
    whole trace.

    Raises:
        ValueError: a malformed frame (see ``SignalExtractor.push``) or ``chunk < 1``.
    """
    if chunk < 1:
        raise ValueError("chunk must be >= 1")
    margin = chunk_margin(th)
    ex = SignalExtractor(max_lag=max_lag or th.max_len, half_window=th.baseline_half)
    cands: list[Candidate] = []
    counts = {"discontinuities": 0, "dark_frames": 0}
    own_lo = 0

    def step(lo: int, hi: int, *, final: bool) -> None:
        tr = ex.view(lo - margin, hi + margin, final=final)
        spikes = discontinuities(tr, th)
        a, b = lo - tr.offset, min(hi, tr.offset + tr.n) - tr.offset
        counts["discontinuities"] += int(np.count_nonzero(spikes[a:b] > 0))
        counts["dark_frames"] += int(np.count_nonzero(tr.dark[a:b] >= 0.5))
        for c in analyse(tr, th):
            s0 = c.start + tr.offset
            if lo <= s0 < hi:
                cands.append(replace(c, start=s0, end=c.end + tr.offset))
        cands.sort(key=lambda c: -c.score)
        del cands[KEEP_CANDIDATES:]  # bounded: only the best explanations outlive a step

    for f in frames:
        ex.push(f)
        if ex.decided > own_lo + chunk + margin:
            step(own_lo, own_lo + chunk, final=False)
            own_lo += chunk
            ex.trim(own_lo - margin)
    ex.finish()
    if ex.n > own_lo or own_lo == 0:
        step(own_lo, ex.n, final=True)
    cands.sort(key=lambda c: -c.score)
    hist = ex.d1_hist
    total = int(hist.sum())
    median = 0.0
    if total:
        median = float(np.searchsorted(np.cumsum(hist), (total + 1) / 2)) / 10.0
        median = min(median, (D1_HIST_BINS - 1) / 10.0)
    info = {
        "frames": ex.n,
        "median_motion": round(median, 3),
        **counts,
    }
    return cands, info, ex.n


def _verdict(
    cands: list[Candidate], n: int, signals: dict[str, Any], th: Thresholds, prior: str
) -> Verdict:
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; expected one of {PRIORS}")
    weighted = sorted(
        (
            Candidate(c.kind, c.start, c.end, c.score * prior_weight(c, n, prior), c.evidence)
            for c in cands
        ),
        key=lambda c: -c.score,
    )
    best = weighted[0] if weighted else None
    score = best.score if best else 0.0
    tampered = best is not None and score >= th.decision
    return Verdict(
        tampered=tampered,
        score=float(score),
        pred_type=KIND_TO_EFFECT[best.kind] if tampered and best else None,
        start_frame=best.start if tampered and best else None,
        end_frame=best.end if tampered and best else None,
        candidates=tuple(weighted[:5]),
        frames=n,
        signals=signals,
    )


def decide_stream(
    frames: Iterable[np.ndarray],
    th: Thresholds = DEFAULT,
    prior: str = "none",
    *,
    chunk: int = DEFAULT_CHUNK,
) -> Verdict:
    """Decide on a stream of frames in bounded memory (see ``scan``).

    Raises:
        ValueError: unknown ``prior`` or a malformed frame.
    """
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; expected one of {PRIORS}")
    cands, info, n = scan(frames, th, chunk=chunk)
    return _verdict(cands, n, info, th, prior)


def analysis_frames(path: Path) -> Iterator[np.ndarray]:
    """The clip as the detector reads it: ``(H, W) uint8`` luma frames, scaled by the
    decoder to ``analysis_size`` (160 px wide, aspect kept), streamed.

    Raises:
        MediaError: unreadable or undecodable video.
    """
    from mmrobust.media import iter_frames, probe

    info = probe(path, count_frames=False)
    return iter_frames(path, size=analysis_size(info.width, info.height), gray=True)


VERDICT_CACHE_SIZE = 4096
"""Verdicts kept in memory per process (each a few KiB)."""

_VERDICTS: OrderedDict[tuple[Any, ...], Verdict] = OrderedDict()
_VERDICTS_LOCK = threading.Lock()


def ranked_types(v: Verdict) -> list[str]:
    """Effect names of a verdict, best first: its predicted type, then those of its other
    candidates (an answer to ``--task type`` when the predicted type is not an option)."""
    names = [v.pred_type] if v.pred_type else []
    if v.tampered:
        names += [KIND_TO_EFFECT[c.kind] for c in v.candidates if c.kind in KIND_TO_EFFECT]
    return list(dict.fromkeys(names))


def analyse_video(path: Path, thresholds: Thresholds = DEFAULT, prior: str = "none") -> Verdict:
    """Stream the video at ``path`` and decide.

    The verdict is a pure function of the file's bytes, the thresholds and
    the prior, so it is kept in a process-wide cache (``VERDICT_CACHE_SIZE``
    entries, keyed by the resolved path, size and modification time): the
    questions of several ``--task`` runs, and both questions of a leading
    pair, read each clip once.

    Raises:
        MediaError: unreadable or undecodable video, or fewer than ``MIN_FRAMES`` frames.
        ValueError: unknown ``prior``.
    """
    from mmrobust.media import MediaError

    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; expected one of {PRIORS}")
    try:
        st = path.stat()
        key: tuple[Any, ...] | None = (
            str(path.resolve()), st.st_size, st.st_mtime_ns, thresholds.digest(), prior,
        )  # fmt: skip
    except OSError:
        key = None
    if key is not None:
        with _VERDICTS_LOCK:
            hit = _VERDICTS.get(key)
            if hit is not None:
                _VERDICTS.move_to_end(key)
                return hit
    try:
        cands, signals, n = scan(analysis_frames(path), thresholds)
    except ValueError as exc:
        raise MediaError(path, str(exc)) from exc
    if n < MIN_FRAMES:
        raise MediaError(path, f"only {n} decodable frames (need {MIN_FRAMES})")
    verdict = _verdict(cands, n, signals, thresholds, prior)
    if key is not None:
        with _VERDICTS_LOCK:
            _VERDICTS[key] = verdict
            while len(_VERDICTS) > VERDICT_CACHE_SIZE:
                _VERDICTS.popitem(last=False)
    return verdict


__all__ = [
    "KIND_TO_EFFECT",
    "MIN_FRAMES",
    "PRIORS",
    "VERDICT_CACHE_SIZE",
    "Verdict",
    "analyse_video",
    "analysis_frames",
    "chunk_margin",
    "decide",
    "decide_stream",
    "prior_weight",
    "ranked_types",
    "scan",
]
