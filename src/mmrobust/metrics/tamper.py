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

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from mmrobust.metrics.chance import detection_chance, expected_f1
from mmrobust.metrics.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, cluster_bootstrap
from mmrobust.records import ScoredRecord
from mmrobust.schema import CANONICAL_TYPES, TAMPER_ORIGINAL, TYPE_ALIASES, normalise_type
from mmrobust.status import Status

FailurePolicy = Literal["exclude", "wrong"]

# CANONICAL_TYPES, TYPE_ALIASES and normalise_type: the shared vocabulary (mmrobust.schema).

DEGENERATE_THRESHOLD = 0.99


def truth_positive(rec: ScoredRecord) -> bool:
    """Whether the clip is tampered (ground truth of the positive class)."""
    ttype = normalise_type(rec.tamper_type)
    if ttype is not None:
        return ttype != TAMPER_ORIGINAL
    return rec.answer_text.strip().lower() == "yes"


def _ordered_types(types: set[str]) -> list[str]:
    known = [t for t in CANONICAL_TYPES if t in types]
    return known + sorted(types - set(known))


def _scored(rec: ScoredRecord, failures: FailurePolicy) -> tuple[bool, bool] | None:
    """``(truth, prediction)`` for a row that enters the confusion matrix, else ``None``."""
    truth = truth_positive(rec)
    if rec.status is Status.OK and rec.predicted is not None:
        return truth, truth if rec.predicted == rec.answer else not truth
    if failures == "wrong":  # any status but ok: parse failure, empty reply, every error
        return truth, not truth
    return None


guess_f1 = expected_f1
"""Expected F1 of a guess on one type (``n_tampered``, ``n_original``, ``yes_rate``): the
older name of :func:`mmrobust.metrics.chance.expected_f1`, where every chance level lives."""


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


def _window_span(w: Mapping[str, Any] | Any) -> tuple[int, int] | None:
    if w is None:
        return None
    if isinstance(w, Mapping):
        return int(w["start_frame"]), int(w["end_frame"])
    return int(w.start_frame), int(w.end_frame)


def window_iou(pred: tuple[int, int], true: tuple[int, int]) -> float:
    """Intersection over union of two frame intervals ``[start, end)``.

    An empty true window (a ``dropping`` seam at frame ``s`` in the output
    timeline) has no area, so both windows are first widened by one frame on
    each side: the true one becomes ``[s - 1, s + 1)`` and the predicted one
    ``[start - 1, end + 1)``. This convention is ours (the paper does not
    localise).
    """
    (ps, pe), (ts, te) = pred, true
    if te == ts:
        ts, te, ps, pe = ts - 1, te + 1, ps - 1, pe + 1
    inter = max(0, min(pe, te) - max(ps, ts))
    union = max(pe, te) - min(ps, ts) if inter > 0 else (pe - ps) + (te - ts)
    return inter / union if union > 0 else 0.0


def _localisation(records: Sequence[ScoredRecord], failures: FailurePolicy) -> dict[str, Any]:
    """Type accuracy and window IoU on tampered clips predicted tampered (detector extras)."""
    type_hits: list[bool] = []
    ious: list[float] = []
    for rec in records:
        scored = _scored(rec, failures)
        if scored is None or not (scored[0] and scored[1]):
            continue
        if "pred_type" in rec.extra and rec.extra["pred_type"] is not None:
            type_hits.append(
                normalise_type(rec.extra["pred_type"]) == normalise_type(rec.tamper_type)
            )
        pred_w = _window_span(rec.extra.get("pred_window"))
        true_w = _window_span(rec.window)
        if pred_w is not None and true_w is not None:
            ious.append(window_iou(pred_w, true_w))
    out: dict[str, Any] = {}
    if type_hits:
        out["type_accuracy"] = float(np.mean(type_hits))
        out["type_n"] = len(type_hits)
    if ious:
        out["iou_median"] = float(np.median(ious))
        out["iou_mean"] = float(np.mean(ious))
        out["iou_n"] = len(ious)
    return out


def _rates(rows: Sequence[ScoredRecord]) -> tuple[float, float]:
    n = len(rows)
    if n == 0:
        return 0.0, 0.0
    pf = sum(r.status is Status.PARSE_FAIL for r in rows) / n
    err = sum(r.status.is_error for r in rows) / n
    return pf, err


def _coverage(rows: Sequence[ScoredRecord]) -> float | None:
    vals = [r.window_covered for r in rows if r.window_covered is not None]
    return float(np.mean(vals)) if vals else None


def _per_type_f1(
    records: Sequence[ScoredRecord], types: list[str], failures: FailurePolicy
) -> dict[str, float | None]:
    """F1 per type and ``overall`` (their mean).

    With ``failures="exclude"``, a type none of whose tampered clips was scored
    (all failed or unparsed) has F1 ``None``, not 0.0, so a broken run never
    looks like ``constant:B``; ``overall`` is then ``None`` too (a mean over
    fewer types is not comparable). With ``failures="wrong"`` every row is
    scored, so such a type has F1 0.0 and stays in the mean, as in the reference.
    """
    originals = [r for r in records if normalise_type(r.tamper_type) == TAMPER_ORIGINAL]
    f1: dict[str, float | None] = {}
    for t in types:
        rows = [r for r in records if normalise_type(r.tamper_type) == t] + originals
        pairs = [p for p in (_scored(r, failures) for r in rows) if p is not None]
        if not any(truth for truth, _ in pairs):
            f1[t] = None
            continue
        f1[t] = binary_scores([p[0] for p in pairs], [p[1] for p in pairs])["f1"]
    if types:
        values = [v for t in types if (v := f1[t]) is not None]
        f1["overall"] = float(np.mean(values)) if len(values) == len(types) else None
    return f1


UNSCORED_RULES: frozenset[str] = frozenset(
    {"official:empty-reply", "official:missing-value", "official:api-failure-text"}
)
"""Extraction rules of replies the reference never scores (an empty cell, its API-failure text)."""


def _reference_failed(rec: ScoredRecord) -> bool:
    """Whether the reference holds no score for this row (-1 or an empty cell)."""
    return rec.status.is_error or rec.rule in UNSCORED_RULES


def official_accuracy(records: Sequence[ScoredRecord]) -> dict[str, dict[str, dict[str, Any]]]:
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
    boards: dict[str, dict[str, list[int]]] = {
        "task_type": {},
        "tamper_type": {},
        "task_tamper_type": {},
    }
    for rec in records:
        hit = int(rec.correct or _reference_failed(rec))
        task, ttype = rec.task or "none", rec.tamper_type or "none"
        for board, key in (
            ("task_type", task),
            ("tamper_type", ttype),
            ("task_tamper_type", f"{task}_{ttype}"),
        ):
            cell = boards[board].setdefault(key, [0, 0])
            cell[0] += hit
            cell[1] += 1
    correct = sum(int(r.correct or _reference_failed(r)) for r in records)

    def entry(c: int, n: int) -> dict[str, Any]:
        return {"correct": c, "total": n, "accuracy": round(100.0 * c / n, 2) if n else None}

    return {
        board: {
            **{k: entry(*cells[k]) for k in sorted(cells)},
            "overall": entry(correct, len(records)),
        }
        for board, cells in boards.items()
    }


def tamper_metrics(
    records: Sequence[ScoredRecord],
    *,
    failures: FailurePolicy = "exclude",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    official: bool = False,
) -> dict[str, Any]:
    """Score tamper-detection answers (arXiv:2412.19794 section 4.1).

    Args:
        records: one ``ScoredRecord`` per sample (any order).
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
    types = _ordered_types(
        {t for r in records if (t := normalise_type(r.tamper_type)) and t != TAMPER_ORIGINAL}
    )
    originals = [r for r in records if normalise_type(r.tamper_type) == TAMPER_ORIGINAL]
    f1 = _per_type_f1(records, types, failures)

    per_type: dict[str, dict[str, Any]] = {}
    for t in types:
        own = [r for r in records if normalise_type(r.tamper_type) == t]
        pairs = [p for p in (_scored(r, failures) for r in [*own, *originals]) if p is not None]
        scores = binary_scores([p[0] for p in pairs], [p[1] for p in pairs])
        pf, err = _rates(own)
        if f1[t] is None:
            scores["f1"] = None
        scores.update(
            n_tampered=len(own),
            n_original=len(originals),
            parse_fail_rate=pf,
            error_rate=err,
            window_coverage=_coverage(own),
        )
        per_type[t] = scores

    all_pairs = [p for p in (_scored(r, failures) for r in records) if p is not None]
    overall_scores = binary_scores([p[0] for p in all_pairs], [p[1] for p in all_pairs])
    pf, err = _rates(records)

    # Cluster bootstrap of per-type F1 and their mean.
    f1_ci: dict[str, list[float] | None] = {}
    if n_resamples > 0 and types and records:
        groups = sorted({r.group or r.sample_id for r in records})
        gidx = {g: i for i, g in enumerate(groups)}
        counts = np.zeros((len(groups), len(types), 4), dtype=np.int64)
        tidx = {t: i for i, t in enumerate(types)}
        for r in records:
            scored = _scored(r, failures)
            if scored is None:
                continue
            truth, pred = scored
            cell = 0 if truth and pred else 1 if pred else 2 if truth else 3
            ttype = normalise_type(r.tamper_type)
            g = gidx[r.group or r.sample_id]
            if ttype == TAMPER_ORIGINAL:
                counts[g, :, cell] += 1
            elif ttype in tidx:
                counts[g, tidx[ttype], cell] += 1
        low, high = cluster_bootstrap(
            counts, _f1_from_counts, n_resamples=n_resamples, seed=seed, level=level
        )
        for i, name in enumerate([*types, "overall"]):
            # no interval around an undefined F1 (no tampered clip of the type scored)
            f1_ci[name] = None if f1.get(name) is None else [float(low[i]), float(high[i])]
        for t in types:
            per_type[t]["ci95"] = f1_ci[t]

    per_task: dict[str, dict[str, float | None]] = {}
    by_task: dict[str, list[ScoredRecord]] = defaultdict(list)
    for r in records:
        if r.task:
            by_task[r.task].append(r)
    for task in sorted(by_task):
        rows = by_task[task]
        task_types = [t for t in types if any(normalise_type(r.tamper_type) == t for r in rows)]
        per_task[task] = _per_type_f1(rows, task_types, failures)

    out: dict[str, Any] = {
        "benchmark": "tamper",
        "n_samples": len(records),
        "n_scored": len(all_pairs),
        "f1": f1,
        "f1_ci95": f1_ci,
        "chance": detection_chance({t: per_type[t]["n_tampered"] for t in types}, len(originals)),
        "per_type": per_type,
        "all": overall_scores,
        "per_task": per_task,
        "parse_fail_rate": pf,
        "error_rate": err,
        "status_counts": dict(Counter(r.status.value for r in records)),
        "window_coverage": {t: per_type[t]["window_coverage"] for t in types},
        "degenerate": _degenerate(overall_scores["yes_rate"], overall_scores["n"]),
        "localisation": _localisation(records, failures),
        "failures": failures,
        "bootstrap": {"n_resamples": n_resamples, "seed": seed, "level": level, "unit": "group"},
        "frames_repeated": sum(bool(r.extra.get("frames_repeated")) for r in records),
    }
    if official:
        out["official_accuracy"] = official_accuracy(records)
    return out


__all__ = [
    "CANONICAL_TYPES",
    "TYPE_ALIASES",
    "FailurePolicy",
    "binary_scores",
    "guess_f1",
    "normalise_type",
    "official_accuracy",
    "tamper_metrics",
    "truth_positive",
    "window_iou",
]
