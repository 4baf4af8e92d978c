"""Metrics of the tasks ``type``, ``when`` and ``leading`` (pure functions over ``ScoredRecord``).

A task question's record carries ``extra["task_question"]`` (``mmrobust.tasks``):
``keys`` (option text -> key), ``truth`` (the key of the correct option) and,
for ``leading``, the presupposed effect and the clip's own. Answers are scored
by their key, never their letter, so any option order scores the same.

``type`` and ``when`` (multi-class; ours, standard definitions as in
scikit-learn's ``classification_report``):

* confusion matrix, truth (rows) x prediction (columns), classes in a fixed
  order (``type``: ``none`` then the effects in MVTamperBench Table 7 order;
  ``when``: beginning, middle, end, nowhere);
* accuracy; balanced accuracy = mean recall over the classes present in the
  truth; macro-F1 = mean F1 over the same classes; per-class precision,
  recall, F1 (the per-type recall of ``type``); ``when`` adds accuracy per tamper type;
* 95% CIs: percentile bootstrap over source videos (``ScoredRecord.group``), seeded;
* ``detection``: the binary detection scores derived from the answers (any
  answer but ``none`` / ``nowhere`` counts as "Yes"), computed by
  :func:`mmrobust.metrics.tamper.tamper_metrics`, so they read exactly like
  the ``detect`` task's F1 per type and macro F1 on the same clips;
* ``chance``: what a uniform random guess over the ``K`` options scores in
  expectation (accuracy and balanced accuracy ``1/K``; per-class F1
  ``2 p / (K p + 1)`` for a class of share ``p``; the derived detection F1,
  :func:`chance_detection_f1`), and the majority-class accuracy; every level from
  :mod:`mmrobust.metrics.chance`.

Failed answers follow the tamper convention: by default (``failures="exclude"``)
left out of the matrices and reported as ``parse_fail_rate`` / ``error_rate``;
``failures="wrong"`` counts a parse failure as a wrong answer (column ``no_answer``).

``leading`` pairs are scored by MMR's own code (:mod:`mmrobust.metrics.mmr`,
MMR section 3, eqs. 1-2): UR/UF/NR/NF, RA and MR in percent, overall, per
presupposed effect, per clip effect and per (clip effect x presupposed effect);
a failed answer counts as not right, as in MMR.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from mmrobust.metrics.chance import (
    detection_counts,
    guess_detection_f1,
    pair_chance,
    uniform_guess_chance,
)
from mmrobust.metrics.mmr import Pair, mmr_metrics, pair_records, summarize
from mmrobust.metrics.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, cluster_bootstrap
from mmrobust.metrics.tamper import (
    CANONICAL_TYPES,
    FailurePolicy,
    normalise_type,
    tamper_metrics,
)
from mmrobust.records import ScoredRecord
from mmrobust.schema import TAMPER_ORIGINAL
from mmrobust.status import Status

INFO_KEY = "task_question"
NO_ANSWER = "no_answer"
"""Prediction column of a parse failure counted as wrong (``failures="wrong"``)."""

WHEN_ORDER: tuple[str, ...] = ("beginning", "middle", "end", "nowhere")
DEGENERATE_SHARE = 0.99
DEGENERATE_MIN_N = 10


def task_info(rec: ScoredRecord) -> Mapping[str, Any]:
    """The record's task description (``extra["task_question"]``), ``{}`` if none."""
    info = rec.extra.get(INFO_KEY)
    return info if isinstance(info, Mapping) else {}


def predicted_key(rec: ScoredRecord) -> str | None:
    """The key of the option the model chose, or ``None`` (no answer, or not an option)."""
    text = rec.predicted_text
    if rec.status is not Status.OK or text is None:
        return None
    key = task_info(rec).get("keys", {}).get(text)
    return None if key is None else str(key)


def scored_pair(rec: ScoredRecord, failures: FailurePolicy) -> tuple[str, str] | None:
    """``(truth key, predicted key)`` for a record that enters the matrix, else ``None``."""
    truth = task_info(rec).get("truth")
    if truth is None:
        return None
    pred = predicted_key(rec)
    if pred is not None:
        return str(truth), pred
    if rec.status is Status.PARSE_FAIL and failures == "wrong":
        return str(truth), NO_ANSWER
    return None


def class_order(keys: set[str], task: str) -> list[str]:
    """Classes in report order: ``when`` time order; ``type`` ``none`` then Table 7 order."""
    if task == "when":
        return [k for k in WHEN_ORDER if k in keys] + sorted(keys - set(WHEN_ORDER))
    known = [k for k in ("none", *CANONICAL_TYPES) if k in keys]
    return known + sorted(keys - set(known))


def confusion_counts(
    pairs: Sequence[tuple[str, str]], labels: Sequence[str], columns: Sequence[str]
) -> np.ndarray:
    """``(K, C)`` int64 counts: truth ``labels`` (rows) x predicted ``columns``."""
    row = {k: i for i, k in enumerate(labels)}
    col = {k: i for i, k in enumerate(columns)}
    m = np.zeros((len(labels), len(columns)), dtype=np.int64)
    for truth, pred in pairs:
        m[row[truth], col[pred]] += 1
    return m


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)


def matrix_scores(m: np.ndarray) -> np.ndarray:
    """Accuracy, balanced accuracy, macro-F1 of ``(..., K, C)`` counts (``C >= K``: the first
    ``K`` columns are the classes, in the rows' order); ``(..., 3)`` floats, NaN when undefined.

    Balanced accuracy and macro-F1 average over the classes present in the truth.
    """
    m = np.asarray(m, dtype=np.float64)
    k = m.shape[-2]
    idx = np.arange(k)
    diag = m[..., idx, idx]
    rows = m.sum(axis=-1)
    cols = m[..., :, :k].sum(axis=-2)
    n = rows.sum(axis=-1)
    present = rows > 0
    acc = _ratio(diag.sum(axis=-1), n)
    recall = _ratio(diag, rows)
    f1 = _ratio(2 * diag, rows + cols)
    n_present = present.sum(axis=-1)
    bal = _ratio(np.where(present, recall, 0.0).sum(axis=-1), n_present.astype(np.float64))
    macro = _ratio(np.where(present, f1, 0.0).sum(axis=-1), n_present.astype(np.float64))
    return np.stack([acc, bal, macro], axis=-1)


def _num(v: float) -> float | None:
    return None if v is None or not np.isfinite(v) else float(v)


def per_class(m: np.ndarray, labels: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Precision, recall, F1 and support of each class (``None`` when undefined)."""
    k = len(labels)
    out = {}
    for i, name in enumerate(labels):
        tp = int(m[i, i])
        support = int(m[i].sum())
        predicted = int(m[:, i].sum()) if i < m.shape[1] else 0
        out[name] = {
            "precision": tp / predicted if predicted else None,
            "recall": tp / support if support else None,
            "f1": 2 * tp / (support + predicted) if support + predicted else None,
            "n": support,
            "n_predicted": predicted,
        }
    assert len(out) == k
    return out


chance = uniform_guess_chance
"""Expected scores of a uniform guess and the majority-class accuracy: the older name of
:func:`mmrobust.metrics.chance.uniform_guess_chance`, where every chance level lives."""


def chance_detection_f1(
    records: Sequence[ScoredRecord], n_options: int, *, always_yes: bool = False
) -> float | None:
    """Derived detection F1 (macro over tamper types) of a uniform guess over ``n_options``
    options, one of which means "not tampered": it says "Yes" with probability
    ``q = (K - 1) / K`` (:func:`mmrobust.metrics.chance.guess_detection_f1` on the records'
    types and originals; ``2(K-1) / (3K - 2)`` when each type has as many clips as there are
    originals: 62.5% for ``K = 6``). With ``always_yes``: never choosing the "not tampered"
    option (``q = 1``)."""
    if n_options < 2:
        return None
    q = 1.0 if always_yes else (n_options - 1) / n_options
    counts, originals = detection_counts(r.tamper_type for r in records)
    return guess_detection_f1(counts, originals, q)["overall"]


def _rates(rows: Sequence[ScoredRecord]) -> dict[str, Any]:
    n = len(rows)
    return {
        "parse_fail_rate": sum(r.status is Status.PARSE_FAIL for r in rows) / n if n else 0.0,
        "error_rate": sum(r.status.is_error for r in rows) / n if n else 0.0,
        "status_counts": dict(Counter(r.status.value for r in rows)),
    }


def _degenerate(pairs: Sequence[tuple[str, str]]) -> str | None:
    if len(pairs) < DEGENERATE_MIN_N:
        return None
    key, count = Counter(p for _, p in pairs).most_common(1)[0]
    return f"always_{key}" if count / len(pairs) >= DEGENERATE_SHARE else None


def detection_view(records: Sequence[ScoredRecord], negative_key: str) -> list[ScoredRecord]:
    """The records as yes/no detection answers: truth "Yes" unless the clip is an original,
    prediction "Yes" for any answer but ``negative_key`` (``none`` / ``nowhere``)."""
    out = []
    for r in records:
        key = predicted_key(r)
        letter = None if key is None else ("B" if key == negative_key else "A")
        truth_yes = normalise_type(r.tamper_type) != TAMPER_ORIGINAL
        out.append(
            replace(
                r,
                benchmark="tamper",
                answer="A" if truth_yes else "B",
                options={"A": "Yes", "B": "No"},
                predicted=letter,
            )
        )
    return out


def _detection(
    records: Sequence[ScoredRecord],
    negative_key: str,
    failures: FailurePolicy,
    n_resamples: int,
    seed: int,
) -> dict[str, Any]:
    m = tamper_metrics(
        detection_view(records, negative_key),
        failures=failures,
        n_resamples=n_resamples,
        seed=seed,
    )
    return {k: m[k] for k in ("f1", "f1_ci95", "all", "degenerate")}


def multiclass_metrics(
    records: Sequence[ScoredRecord],
    *,
    task: str,
    failures: FailurePolicy = "exclude",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    defects: Sequence[str] = (),
) -> dict[str, Any]:
    """Scores of the ``type`` or ``when`` task (see the module docstring).

    Returns:
        ``benchmark``, ``task``, ``n_samples``, ``n_scored``, ``classes``,
        ``accuracy``, ``balanced_accuracy``, ``macro_f1`` (fractions),
        ``ci95`` {those three: [lo, hi]}, ``per_class``, ``confusion``
        {``labels``, ``columns``, ``matrix``}, ``detection`` (derived yes/no F1),
        ``chance``, ``degenerate``, ``parse_fail_rate``, ``error_rate``,
        ``status_counts``, ``failures``, ``bootstrap``, ``defects`` (the loader's,
        verbatim); ``when`` adds
        ``accuracy_per_type``, ``straddling`` and ``warnings``.
    """
    rows = list(records)
    keys: set[str] = set()
    for r in rows:
        keys |= {str(k) for k in task_info(r).get("keys", {}).values()}
        truth = task_info(r).get("truth")
        if truth is not None:
            keys.add(str(truth))
    labels = class_order(keys, task)
    scored = [(r, p) for r in rows if (p := scored_pair(r, failures)) is not None]
    pairs = [p for _, p in scored]
    columns = [*labels, *([NO_ANSWER] if any(p[1] == NO_ANSWER for p in pairs) else [])]
    matrix = confusion_counts(pairs, labels, columns)
    acc, bal, macro = (_num(v) for v in matrix_scores(matrix))
    n_options = max((len(task_info(r).get("keys", {})) for r in rows), default=0)

    ci: dict[str, list[float] | None] = {
        "accuracy": None,
        "balanced_accuracy": None,
        "macro_f1": None,
    }
    if n_resamples > 0 and scored:
        groups = sorted({r.group or r.sample_id for r, _ in scored})
        gidx = {g: i for i, g in enumerate(groups)}
        per_group = np.zeros((len(groups), len(labels), len(columns)), dtype=np.int64)
        row_of = {k: i for i, k in enumerate(labels)}
        col_of = {k: i for i, k in enumerate(columns)}
        for r, (truth, pred) in scored:
            per_group[gidx[r.group or r.sample_id], row_of[truth], col_of[pred]] += 1
        low, high = cluster_bootstrap(
            per_group, matrix_scores, n_resamples=n_resamples, seed=seed, level=level
        )
        for i, name in enumerate(("accuracy", "balanced_accuracy", "macro_f1")):
            lo, hi = _num(low[i]), _num(high[i])
            ci[name] = None if lo is None or hi is None else [lo, hi]

    negative = "nowhere" if task == "when" else "none"
    out: dict[str, Any] = {
        "benchmark": f"tamper-{task}",
        "task": task,
        "n_samples": len(rows),
        "n_scored": len(pairs),
        "classes": labels,
        "accuracy": acc,
        "balanced_accuracy": bal,
        "macro_f1": macro,
        "ci95": ci,
        "per_class": per_class(matrix, labels),
        "confusion": {"labels": labels, "columns": columns, "matrix": matrix.tolist()},
        "detection": _detection(rows, negative, failures, n_resamples, seed),
        "chance": {
            **chance(labels, [int(v) for v in matrix.sum(axis=1)], n_options),
            "detection_f1": chance_detection_f1([r for r, _ in scored], n_options),
            "always_yes_detection_f1": chance_detection_f1(
                [r for r, _ in scored], n_options, always_yes=True
            ),
        },
        "degenerate": _degenerate(pairs),
        **_rates(rows),
        "failures": failures,
        "bootstrap": {"n_resamples": n_resamples, "seed": seed, "level": level, "unit": "group"},
        "defects": list(defects),
    }
    if task == "when":
        out.update(_when_extras(scored, labels))
    return out


def _when_extras(
    scored: Sequence[tuple[ScoredRecord, tuple[str, str]]], labels: Sequence[str]
) -> dict[str, Any]:
    by_type: dict[str, list[bool]] = {}
    straddling = 0
    for r, (truth, pred) in scored:
        name = normalise_type(r.tamper_type) or "unknown"
        by_type.setdefault(name, []).append(truth == pred)
        straddling += bool(task_info(r).get("straddles"))
    order = [t for t in (TAMPER_ORIGINAL, *CANONICAL_TYPES) if t in by_type]
    order += sorted(set(by_type) - set(order))
    parts = {t for _, (t, _) in scored if t != "nowhere"}
    warnings = []
    if len(parts) == 1:
        warnings.append(
            f"every tamper window lies in the {parts.pop()} third: `when` cannot tell a model "
            "that locates tampering from one that always names that third; build with "
            "several positions (mmrobust tamper --position start,middle,end)"
        )
    return {
        "accuracy_per_type": {
            t: {"accuracy": float(np.mean(by_type[t])), "n": len(by_type[t])} for t in order
        },
        "straddling": straddling,
        "warnings": warnings,
    }


def type_metrics(records: Sequence[ScoredRecord], **kw: Any) -> dict[str, Any]:
    """``type`` task scores (:func:`multiclass_metrics` with ``task="type"``)."""
    return multiclass_metrics(records, task="type", **kw)


def when_metrics(records: Sequence[ScoredRecord], **kw: Any) -> dict[str, Any]:
    """``when`` task scores (:func:`multiclass_metrics` with ``task="when"``)."""
    return multiclass_metrics(records, task="when", **kw)


def _by(pairs: Sequence[Pair], key: Any) -> dict[str, list[Pair]]:
    out: dict[str, list[Pair]] = {}
    for p in pairs:
        out.setdefault(key(p), []).append(p)
    return out


def _clip_type(p: Pair) -> str:
    return str(task_info(p.positive).get("clip_type") or normalise_type(p.positive.tamper_type))


def leading_metrics(
    records: Sequence[ScoredRecord],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    defects: Sequence[str] = (),
    **_: Any,
) -> dict[str, Any]:
    """``leading`` task scores: MMR's pair outcomes and RA/MR (MMR section 3, eqs. 1-2).

    Pairs are formed and scored by :mod:`mmrobust.metrics.mmr` itself (the
    records are handed over as MMR records; ``group`` is the clip, ``category``
    the presupposed effect).

    Returns:
        MMR's overall keys (``pairs, UR, UF, NR, NF, RA, MR, positive_accuracy,
        negative_accuracy, parse_fail_rate, error_rate, ci, unpaired, defects``)
        plus ``benchmark`` ("tamper-leading"), ``task``, ``n_samples``,
        ``by_presupposed`` {effect: summary}, ``by_clip_type`` {effect or none:
        summary}, ``cells`` {clip effect: {presupposed effect: summary}},
        ``premise_accepted_rate`` (answered negative questions whose answer
        accepts the premise, fraction) and ``chance`` (RA and MR of a uniform
        random guess, percent).
    """
    mmr_view = [replace(r, benchmark="mmr") for r in records]  # MMR's pairing and counts
    base = mmr_metrics(mmr_view, defects=defects, n_boot=n_resamples, seed=seed)
    pairs, _problems = pair_records(mmr_view)
    by_clip = _by(pairs, _clip_type)
    clip_order = class_order(set(by_clip), "type")
    cells: dict[str, dict[str, Any]] = {}
    for x in clip_order:
        by_y = _by(by_clip[x], lambda p: p.category)
        cells[x] = {y: summarize(by_y[y]) for y in class_order(set(by_y), "type")}
    negatives = [p.negative for p in pairs]
    answered = [k for r in negatives if (k := predicted_key(r)) is not None]
    k_pos = [len(task_info(p.positive).get("keys", {})) for p in pairs]
    k_neg = [len(task_info(p.negative).get("keys", {})) for p in pairs]
    guess = pair_chance(zip(k_pos, k_neg, strict=True))
    out = {k: v for k, v in base.items() if k not in ("categories", "category_mean")}
    out.update(
        benchmark="tamper-leading",
        task="leading",
        n_samples=len(records),
        by_presupposed=base["categories"],
        by_clip_type={x: summarize(by_clip[x]) for x in clip_order},
        cells=cells,
        premise_accepted_rate=(
            round(sum(k != "reject" for k in answered) / len(answered), 4) if answered else None
        ),
        chance={k: None if v is None else round(v, 2) for k, v in guess.items()},
    )
    return out


__all__ = [
    "NO_ANSWER",
    "chance",
    "chance_detection_f1",
    "class_order",
    "confusion_counts",
    "detection_view",
    "leading_metrics",
    "matrix_scores",
    "multiclass_metrics",
    "per_class",
    "predicted_key",
    "scored_pair",
    "task_info",
    "type_metrics",
    "when_metrics",
]
