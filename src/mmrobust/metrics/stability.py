"""Answer stability under sampling: the ``stability`` block of a ``--repeats K`` run.

Every question is asked ``K`` times (repeats ``0 .. K-1``); the family's own metrics are
computed on repeat 0 (the headline, what a run without repeats reports), and this block
says how far the answer moves between asks. The definitions follow inspect_ai's ``Epochs``
score reducers (``mean_score``, ``mode_score``; its ``at_least``) and lm-evaluation-harness's
``repeats`` with its ``majority_vote`` filter:

* **counted answers** of a sample: with ``failures="exclude"`` its rows with an extracted
  answer (status ``ok``); with ``"wrong"`` all its rows, a failed row being the answer
  "none", which is never correct.
* ``agreement_rate``: of the samples with ``K`` counted answers, the share whose ``K``
  answers are all the same option.
* ``majority_accuracy``: of the samples with at least one counted answer, the share whose
  most frequent answer (a tie goes to the answer given first, the lowest repeat) is the
  right one (``mode_score``; majority vote: Wang et al. 2023, "Self-Consistency Improves
  Chain of Thought Reasoning in Language Models").
* ``mean_accuracy``: the mean over those samples of the share of their counted answers
  that are right (``mean_score``).
* ``accuracy_per_repeat``: repeat ``k``'s accuracy over the samples with a counted answer
  in it.

All values are fractions in ``[0, 1]`` (``None`` with no sample to count); each has a 95%
percentile interval from a cluster bootstrap over sources (``ScoredRecord.group``: the
source video, the MMR pair), as the families' other intervals. Pure; never raises for a
failed row.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from mmrobust.metrics.stats import cluster_bootstrap
from mmrobust.records import ScoredRecord
from mmrobust.status import Status

STABILITY_KEYS = ("agreement_rate", "majority_accuracy", "mean_accuracy")
"""The three headline figures of the block, each with ``<key>_ci95``."""

_NONE = "\0none"  # the answer of a failed row under failures="wrong"


def _answer(record: ScoredRecord) -> str:
    return record.predicted if record.status is Status.OK and record.predicted else _NONE


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _round(value: float | None) -> float | None:
    return None if value is None or np.isnan(value) else round(float(value), 4)


def sampling_stability(
    rows: Sequence[tuple[int, ScoredRecord]],
    *,
    repeats: int,
    failures: str = "exclude",
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """The ``stability`` block over ``(repeat, record)`` pairs (see the module docstring).

    Args:
        rows: every stored row of the run as ``(repeat index, ScoredRecord)``; rows of
            repeats ``>= repeats`` are ignored.
        repeats: ``K``, the asks per sample the run made.
        failures: ``"exclude"`` or ``"wrong"`` (the run's policy for failed rows).
        n_resamples: bootstrap draws (0: no intervals).
        seed: the bootstrap's seed.
        level: the intervals' coverage.

    Returns:
        ``repeats``, ``n_samples`` (samples with a counted answer), ``n_agreement`` (samples
        with ``K`` counted answers), ``n_rows``, the three :data:`STABILITY_KEYS` with their
        ``_ci95`` (``[low, high]`` or ``None``), ``accuracy_per_repeat`` (``K`` values),
        ``failures``, ``unit`` (``"fraction"``), ``n_boot``, ``seed``.
    """
    by_sample: dict[str, dict[int, ScoredRecord]] = defaultdict(dict)
    for k, record in rows:
        if 0 <= k < repeats:
            by_sample[record.sample_id][k] = record
    # per cluster: agree, agree_den, majority_right, n_voted, mean_sum (per-sample shares)
    clusters: dict[str, np.ndarray] = {}
    per_repeat = np.zeros((max(repeats, 0), 2))  # right, counted
    n_rows = 0
    for sid in sorted(by_sample):
        asks = by_sample[sid]
        n_rows += len(asks)
        counted = [
            (k, r) for k, r in sorted(asks.items()) if failures == "wrong" or r.status is Status.OK
        ]
        for k, r in counted:
            per_repeat[k] += (r.correct, 1)
        if not counted:
            continue
        first = counted[0][1]
        answers = [_answer(r) for _, r in counted]
        complete = len(counted) == repeats
        top = Counter(answers).most_common(1)[0][1]
        majority = next(a for a in answers if answers.count(a) == top)  # first among the tied
        counts = np.array(
            [
                complete and len(set(answers)) == 1,
                complete,
                majority == first.answer,
                1.0,
                sum(r.correct for _, r in counted) / len(counted),
            ],
            dtype=np.float64,
        )
        group = first.group or sid
        clusters[group] = clusters.get(group, np.zeros(5)) + counts
    total = np.sum(list(clusters.values()), axis=0) if clusters else np.zeros(5)

    def stats(s: np.ndarray) -> np.ndarray:
        return np.stack(
            [
                _ratio(s[..., 0], s[..., 1]),
                _ratio(s[..., 2], s[..., 3]),
                _ratio(s[..., 4], s[..., 3]),
            ],
            axis=-1,
        )

    point = stats(total)
    out: dict[str, Any] = {
        "repeats": repeats,
        "n_samples": int(total[3]),
        "n_agreement": int(total[1]),
        "n_rows": n_rows,
    }
    cis: list[list[float | None] | None] = [None, None, None]
    if clusters and n_resamples > 0:
        ordered = np.stack([clusters[g] for g in sorted(clusters)])
        low, high = cluster_bootstrap(
            ordered, stats, n_resamples=n_resamples, seed=seed, level=level
        )
        cis = [None if np.isnan(point[i]) else [_round(low[i]), _round(high[i])] for i in range(3)]
    for i, key in enumerate(STABILITY_KEYS):
        out[key] = _round(point[i])
        out[f"{key}_ci95"] = cis[i]
    out["accuracy_per_repeat"] = [_round(v) for v in _ratio(per_repeat[:, 0], per_repeat[:, 1])]
    out.update(failures=failures, unit="fraction", n_boot=n_resamples, seed=seed)
    return out


__all__ = ["STABILITY_KEYS", "sampling_stability"]
