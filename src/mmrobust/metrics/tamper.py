"""MVTamperBench metrics (arXiv:2412.19794, section 4.1 "Metrics").

Definitions (ours are the paper's and the reference scorer's):

* Positive class = tampered (the "Yes" option). A clip's truth is positive
  when its ``tamper_type`` is not ``"original"``; a prediction is positive
  when the extracted option is the positive one (for a correct answer the
  truth, for a wrong one its opposite), so permuted option orders score
  the same.
* For each tamper type T: precision, recall and F1 on the clips of type T
  **plus all original clips** (section 4.1); ``overall`` = the unweighted
  mean of the per-type F1 over the types present ("macro average").
* Rows that failed (``parse_fail`` and every error status) are counted in
  ``parse_fail_rate`` / ``error_rate`` and, by default
  (``failures="exclude"``), left out of the confusion matrices: a parse
  failure is never scored as the other class. ``failures="wrong"`` counts
  every row that is not ``ok`` (a parse failure, an empty reply, any error
  status) as a wrong answer, as the reference scorer does: an unmatched reply
  scores 0, an API failure -1 and an empty cell is never scored, and its F1
  step turns all three into the opposite class. A type whose clips all failed
  then has F1 0, as in the reference, not ``None``.
* ``official=True`` adds ``official_accuracy``: the reference's accuracy
  ratings by task, tamper type and task x type (VLMEvalKit
  ``get_dimension_rating``), which count a failed row as *right* (its score
  -1 or empty is truthy); documented, reproduced, not recommended.
* 95% confidence intervals: percentile bootstrap over clusters
  (``ScoredRecord.group``: the source video, so a source's original and its
  tampered clips are resampled together), seeded.
* Degenerate predictors: a ``yes_rate`` of at least 0.99 (or at most 0.01)
  is flagged. Always answering "Yes" on balanced data gives precision 0.5,
  recall 1, F1 = 2/3 per type; several published models sit exactly there.
* ``chance``: the F1 per type and Overall of always answering "Yes" and of a fair
  coin on the same clips (:func:`mmrobust.metrics.chance.detection_chance`, the one
  definition of a chance level; from every clip of the data, scored or not).
* ``per_type`` ``parse_fail_rate`` / ``error_rate``: over the type's tampered clips
  only (the originals it is scored with are shared by every type); the run's
  ``parse_fail_rate`` / ``error_rate`` are over every row.

Confusion matrices come from scikit-learn; every score is then computed
from the four counts (checked against scikit-learn's functions in the
tests), and the bootstrap works on per-cluster counts in NumPy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from mmrobust.metrics.chance import detection_chance, expected_f1
from mmrobust.metrics.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, cluster_bootstrap
from mmrobust.metrics.tamper_tally import (
    UNSCORED_RULES,
    Filter,
    TamperTally,
    ordered_types,
    truth_positive,
    window_iou,
)
from mmrobust.records import ScoredRecord
from mmrobust.schema import CANONICAL_TYPES, TAMPER_ORIGINAL, TYPE_ALIASES, normalise_type
from mmrobust.status import Status

FailurePolicy = Literal["exclude", "wrong"]

# CANONICAL_TYPES, TYPE_ALIASES and normalise_type: the shared vocabulary (mmrobust.schema).

DEGENERATE_THRESHOLD = 0.99

guess_f1 = expected_f1
"""Expected F1 of a guess on one type (``n_tampered``, ``n_original``, ``yes_rate``): the
older name of :func:`mmrobust.metrics.chance.expected_f1`, where every chance level lives."""


def _of_type(*types: str | None) -> Filter:
    """Rows of the given (normalised) tamper types."""
    return lambda k: k.ntype in types


def _of_task(task: str) -> Filter:
    """Rows of ``task``."""
    return lambda k: k.task == task


def _both(a: Filter, b: Filter) -> Filter:
    """Rows both filters pass."""
    return lambda k: a(k) and b(k)


def binary_scores(y_true: Sequence[bool], y_pred: Sequence[bool]) -> dict[str, Any]:
    """Precision, recall, F1, accuracy, balanced accuracy, MCC, yes-rate and the confusion counts.

    Positive class = ``True`` (tampered). Undefined ratios (no positive
    predictions, no rows) are 0.0, as in the reference (``zero_division=0``), except
    MCC, which is ``None`` where it is 0/0 (see :func:`scores_from_counts`).
    """
    n = len(y_true)
    if n == 0:
        return {
            "n": 0, "precision": 0.0, "recall": 0.0, "f1": 0.0, "accuracy": 0.0,
            "balanced_accuracy": 0.0, "mcc": None, "yes_rate": 0.0,
            "tp": 0, "fp": 0, "fn": 0, "tn": 0,
        }  # fmt: skip
    yt = np.asarray(y_true, dtype=bool)
    yp = np.asarray(y_pred, dtype=bool)
    # The four counts (what sklearn.metrics.confusion_matrix gives, without importing
    # scikit-learn, about 1 s of every eval's start-up, for four sums).
    tp, fp = int(np.sum(yt & yp)), int(np.sum(~yt & yp))
    fn, tn = int(np.sum(yt & ~yp)), int(np.sum(~yt & ~yp))
    return {"n": n, **scores_from_counts(tp, fp, fn, tn)}


def scores_from_counts(tp: int, fp: int, fn: int, tn: int) -> dict[str, Any]:
    """The binary scores of one confusion matrix.

    MCC = (tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)) (Matthews 1975); it is
    0/0, undefined, when a row or column of the matrix is empty (a constant predictor,
    or one class only in the truth), and is then ``None`` (JSON ``null``; scikit-learn's
    ``matthews_corrcoef`` returns 0.0 there), as an undefined F1 is. Precision, recall,
    F1, accuracy and yes-rate are 0.0 where undefined, as in the reference
    (``zero_division=0``); balanced accuracy = mean of the two recalls (0.0 unless both
    classes occur). Elsewhere the values equal scikit-learn's on the underlying labels.
    """
    n = tp + fp + fn + tn

    def ratio(a: float, b: float) -> float:
        return a / b if b else 0.0

    precision = ratio(tp, tp + fp)
    recall = ratio(tp, tp + fn)
    denom = float(np.sqrt(float(tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
    both = (tp + fn) > 0 and (tn + fp) > 0
    return {
        "precision": precision,
        "recall": recall,
        "f1": ratio(2 * tp, 2 * tp + fp + fn),
        "accuracy": ratio(tp + tn, n),
        "balanced_accuracy": (recall + ratio(tn, tn + fp)) / 2 if both else 0.0,
        "mcc": (tp * tn - fp * fn) / denom if denom else None,
        "yes_rate": ratio(tp + fp, n),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
    }


def _f1_from_counts(counts: np.ndarray) -> np.ndarray:
    """``(R, K, 4)`` counts ``[tp, fp, fn, tn]`` -> ``(R, K + 1)`` F1 per type plus macro mean."""
    tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
    denom = 2 * tp + fp + fn
    f1 = np.divide(2 * tp, denom, out=np.zeros_like(tp, dtype=np.float64), where=denom > 0)
    return np.concatenate([f1, f1.mean(axis=-1, keepdims=True)], axis=-1)


DEGENERATE_MIN_N = 10
"""Fewer scored answers than this never get a degenerate-predictor flag."""


def _degenerate(yes_rate: float, n: int) -> str | None:
    if n < DEGENERATE_MIN_N:
        return None
    if yes_rate >= DEGENERATE_THRESHOLD:
        return "always_yes"
    if yes_rate <= 1 - DEGENERATE_THRESHOLD:
        return "always_no"
    return None


def _scores(counts: Sequence[int]) -> dict[str, Any]:
    """:func:`binary_scores` of the confusion counts ``[tp, fp, fn, tn]``."""
    n = sum(counts)
    if n == 0:
        return binary_scores([], [])
    return {"n": n, **scores_from_counts(*counts)}


def _rates(tally: TamperTally, where: Filter) -> tuple[float, float]:
    n = tally.count(where)
    if n == 0:
        return 0.0, 0.0
    pf = tally.count(_both(where, lambda k: k.status is Status.PARSE_FAIL)) / n
    err = tally.count(_both(where, lambda k: k.status.is_error)) / n
    return pf, err


def _coverage(tally: TamperTally, where: Filter) -> float | None:
    n = tally.count(_both(where, lambda k: k.covered is not None))
    return tally.count(_both(where, lambda k: bool(k.covered))) / n if n else None


def _per_type_f1(
    tally: TamperTally, types: list[str], where: Filter = lambda k: True
) -> dict[str, float | None]:
    """F1 per type and ``overall`` (their mean), over the rows ``where`` selects.

    With ``failures="exclude"``, a type none of whose tampered clips was scored
    (all failed or unparsed) has F1 ``None``, not 0.0, so a broken run never
    looks like ``constant:B``; ``overall`` is then ``None`` too (a mean over
    fewer types is not comparable). With ``failures="wrong"`` every row is
    scored, so such a type has F1 0.0 and stays in the mean, as in the reference.
    """
    f1: dict[str, float | None] = {}
    for t in types:
        tp, fp, fn, tn = tally.confusion(_both(where, _of_type(t, TAMPER_ORIGINAL)))
        f1[t] = None if tp + fn == 0 else _scores([tp, fp, fn, tn])["f1"]
    if types:
        values = [v for t in types if (v := f1[t]) is not None]
        f1["overall"] = float(np.mean(values)) if len(values) == len(types) else None
    return f1


def _localisation(tally: TamperTally) -> dict[str, Any]:
    """Type accuracy and window IoU on tampered clips predicted tampered (detector extras)."""
    out: dict[str, Any] = {}
    if tally.type_n:
        out["type_accuracy"] = tally.type_hits / tally.type_n
        out["type_n"] = tally.type_n
    if tally.ious:
        ious = np.frombuffer(tally.ious, dtype=np.float64)
        out["iou_median"] = float(np.median(ious))
        out["iou_mean"] = float(np.mean(ious))
        out["iou_n"] = len(ious)
    return out


def _official(tally: TamperTally) -> dict[str, dict[str, dict[str, Any]]]:
    boards: dict[str, dict[str, list[int]]] = {
        "task_type": {},
        "tamper_type": {},
        "task_tamper_type": {},
    }
    for k, n in tally.keys.items():
        task, ttype = k.task or "none", k.raw_type or "none"
        for board, key in (
            ("task_type", task),
            ("tamper_type", ttype),
            ("task_tamper_type", f"{task}_{ttype}"),
        ):
            cell = boards[board].setdefault(key, [0, 0])
            cell[0] += n * k.ref_hit
            cell[1] += n
    correct = tally.count(lambda k: k.ref_hit)

    def entry(c: int, n: int) -> dict[str, Any]:
        return {"correct": c, "total": n, "accuracy": round(100.0 * c / n, 2) if n else None}

    return {
        board: {
            **{k: entry(*cells[k]) for k in sorted(cells)},
            "overall": entry(correct, tally.n),
        }
        for board, cells in boards.items()
    }


def official_accuracy(records: Iterable[ScoredRecord]) -> dict[str, dict[str, dict[str, Any]]]:
    """VLMEvalKit's accuracy ratings for MVTamperBench, quirk included.

    ``get_dimension_rating`` (``vlmeval/dataset/utils/tamperbench.py``, same at
    commits eb58e9e and e8e78f0) counts a row as right when its score is truthy:
    1 (right), but also -1 (API failure) and an empty score (a reply never
    scored, such as an empty one). So every failed row counts as right here; the
    F1 counts it wrong. Keys are task names, tamper-type names as stored and
    ``<task>_<type>``; each board has an ``overall`` entry.

    Returns:
        ``{"task_type": {key: {"correct", "total", "accuracy"}}, "tamper_type": ...,
        "task_tamper_type": ...}``; ``accuracy`` in percent, 2 decimals (the
        reference prints ``"xx.xx%"``).
    """
    tally = TamperTally("exclude")
    for rec in records:
        tally.add(rec)
    return _official(tally)


def tamper_metrics(
    records: Iterable[ScoredRecord],
    *,
    failures: FailurePolicy = "exclude",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    official: bool = False,
) -> dict[str, Any]:
    """Score tamper-detection answers (arXiv:2412.19794 section 4.1).

    ``records`` are read once (:class:`mmrobust.metrics.tamper_tally.TamperTally`): a
    generator of a run's rows streamed from its store scores in memory that does not grow
    with the rows (but for the bootstrap's group numbers, a few bytes a row).

    Args:
        records: one ``ScoredRecord`` per sample (any order; an iterable, read once).
        failures: ``"exclude"`` (default) leaves failed rows out of the
            confusion matrices; ``"wrong"`` counts every row that is not ``ok`` as a
            wrong answer (reference).
        official: add ``official_accuracy`` (the reference's accuracy ratings).
        n_resamples: bootstrap draws for the confidence intervals (0 disables them).
        seed: bootstrap seed.
        level: confidence level of the intervals.

    Returns:
        A JSON-serialisable dict: ``benchmark`` ("tamper"), ``n_samples``,
        ``f1`` (per type and ``overall``, fractions in [0, 1]), ``f1_ci95``,
        ``per_type`` (precision, recall, f1, accuracy, balanced_accuracy, mcc (``None``
        when undefined), yes_rate, counts, ``n_tampered`` / ``n_original``,
        ``parse_fail_rate`` and ``error_rate`` (over the type's tampered clips only),
        window_coverage, ci95), ``all`` (the same scores over every row), ``chance``
        (the always-Yes and coin-flip F1 per type and ``overall`` on the same clips:
        :func:`mmrobust.metrics.chance.detection_chance`), ``per_task``
        (task -> type -> F1), ``parse_fail_rate``, ``error_rate``,
        ``status_counts``, ``window_coverage`` (type -> rate or null),
        ``degenerate`` ("always_yes" | "always_no" | null), ``localisation``
        (detector extras, when present), ``failures``, ``bootstrap``,
        ``frames_repeated`` (rows shown a frame more than once), and with
        ``official`` ``official_accuracy``.
    """
    tally = TamperTally(failures, groups=n_resamples > 0)
    for rec in records:
        tally.add(rec)
    types = ordered_types({k.ntype for k in tally.keys if k.ntype and k.ntype != TAMPER_ORIGINAL})
    n_original = tally.count(_of_type(TAMPER_ORIGINAL))
    f1 = _per_type_f1(tally, types)

    per_type: dict[str, dict[str, Any]] = {}
    for t in types:
        scores = _scores(tally.confusion(_of_type(t, TAMPER_ORIGINAL)))
        own = _of_type(t)
        pf, err = _rates(tally, own)
        if f1[t] is None:
            scores["f1"] = None
        scores.update(
            n_tampered=tally.count(own),
            n_original=n_original,
            parse_fail_rate=pf,
            error_rate=err,
            window_coverage=_coverage(tally, own),
        )
        per_type[t] = scores

    overall_scores = _scores(tally.confusion(lambda k: True))
    pf, err = _rates(tally, lambda k: True)

    # Cluster bootstrap of per-type F1 and their mean.
    f1_ci: dict[str, list[float] | None] = {}
    if n_resamples > 0 and types and tally.n:
        low, high = cluster_bootstrap(
            tally.group_counts(types), _f1_from_counts, n_resamples=n_resamples, seed=seed,
            level=level,
        )  # fmt: skip
        for i, name in enumerate([*types, "overall"]):
            # no interval around an undefined F1 (no tampered clip of the type scored)
            f1_ci[name] = None if f1.get(name) is None else [float(low[i]), float(high[i])]
        for t in types:
            per_type[t]["ci95"] = f1_ci[t]

    per_task: dict[str, dict[str, float | None]] = {}
    for task in sorted({k.task for k in tally.keys if k.task}):
        of_task = _of_task(task)
        task_types = [t for t in types if tally.count(_both(of_task, _of_type(t)))]
        per_task[task] = _per_type_f1(tally, task_types, of_task)

    out: dict[str, Any] = {
        "benchmark": "tamper",
        "n_samples": tally.n,
        "n_scored": overall_scores["n"],
        "f1": f1,
        "f1_ci95": f1_ci,
        "chance": detection_chance({t: per_type[t]["n_tampered"] for t in types}, n_original),
        "per_type": per_type,
        "all": overall_scores,
        "per_task": per_task,
        "parse_fail_rate": pf,
        "error_rate": err,
        "status_counts": dict(tally.status_counts),
        "window_coverage": {t: per_type[t]["window_coverage"] for t in types},
        "degenerate": _degenerate(overall_scores["yes_rate"], overall_scores["n"]),
        "localisation": _localisation(tally),
        "failures": failures,
        "bootstrap": {"n_resamples": n_resamples, "seed": seed, "level": level, "unit": "group"},
        "frames_repeated": tally.frames_repeated,
    }
    if official:
        out["official_accuracy"] = _official(tally)
    return out


__all__ = [
    "CANONICAL_TYPES",
    "TYPE_ALIASES",
    "UNSCORED_RULES",
    "FailurePolicy",
    "binary_scores",
    "guess_f1",
    "normalise_type",
    "official_accuracy",
    "tamper_metrics",
    "truth_positive",
    "window_iou",
]
