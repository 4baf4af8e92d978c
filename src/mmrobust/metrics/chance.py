"""Chance levels: what a guess that never looks at the media scores, by the metric beside it.

The one place mmrobust computes a chance level. The robustness card, the report's
leaderboards, the lines ``eval`` / ``rescore`` print, ``compare``, ``tamper-data`` and the
``chance`` blocks of ``metrics.json`` all call these functions, so a chance level is
always the figure its neighbouring score would take for the guess.

**Expected-count F1.** A guess that answers "positive" with probability ``q``,
independently of the truth, on a group of ``P`` positives and ``N`` negatives expects
``TP = qP``, ``FP = qN`` and ``FN = (1 - q)P``. Its chance F1 is the F1 of these expected
counts (the population value, which the expected F1 of a finite sample approaches):

    F1(q) = 2qP / (2qP + qN + (1 - q)P) = 2qP / (P(1 + q) + qN)

(:func:`expected_f1`). With positive share ``b = P / (P + N)`` this is ``2bq / (b + q)``:
the "uninformative classifier" of Lipton, Elkan and Narayanaswamy, *Optimal Thresholding of
Classifiers to Maximize F1 Measure* (ECML PKDD 2014, arXiv:1402.1892, section 3), whose
best choice is ``q = 1`` (always positive, ``2b / (1 + b)``). Special cases:

* always "Yes" (``q = 1``): ``2P / (2P + N)``; 66.67% when ``P == N``;
* a fair coin (``q = 1/2``): ``2P / (3P + N)``; 50% when ``P == N``;
* a uniform guess over ``K`` options, for one class (``q = 1/K``): ``2p / (Kp + 1)``
  with ``p`` the class's share.

**Per family** (each level is the family's own metric applied to the guess):

* tamper detection (MVTamperBench, arXiv:2412.19794 section 4.1: F1 per tamper type on
  that type's clips **plus all originals**, Overall = the unweighted mean over the types):
  :func:`detection_chance`. The guess's F1 per type uses that type's ``t`` clips and the
  ``o`` originals; Overall is the mean of those, never the F1 of the pooled tampered share
  (which would be 90.91 for always-Yes on 125 tampered clips per 25 originals, not the
  66.67 that ``constant:A`` scores there when each type has 25 clips).
  :func:`detection_chance_of_metrics` reads the counts from a tamper ``metrics.json``
  (``per_type`` ``n_tampered`` / ``n_original``: every clip of the data, whether its
  answer was scored or not), :func:`detection_chance_of_types` from a list of tamper types.
* ``--task type`` / ``when`` (multiple choice, :mod:`mmrobust.metrics.tasks`):
  :func:`uniform_guess_chance`: accuracy and balanced accuracy ``1/K``, macro-F1 the mean
  over the classes present in the truth of the expected-count F1 with ``q = 1/K``, and the
  majority-class accuracy; :func:`guess_detection_f1` the detection F1 derived from the
  answers (a uniform guess says "tampered" with ``q = (K - 1)/K``; never choosing the
  "not tampered" option is ``q = 1``).
* paired questions (``--task leading``, MMR, arXiv:2406.10638 section 3, eqs. 1-2):
  :func:`pair_chance`, a uniform guess on both questions of each pair, independently:
  ``E[UR] = sum 1/(k_pos k_neg)`` and ``E[UF] = sum (1/k_pos)(1 - 1/k_neg)``; RA =
  ``E[UR] / pairs`` and MR = ``E[UF] / E[UR + UF]`` in percent, the ratio of expected
  counts as for F1 (with the same ``k`` in every pair: RA ``1/k^2``, MR ``1 - 1/k``).

Pure functions (no I/O); fractions in [0, 1] except the paired levels, which are in percent
like RA and MR themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mmrobust.schema import CANONICAL_TYPES, TAMPER_ORIGINAL, normalise_type

ALWAYS_YES = 1.0
"""``yes_rate`` of answering "Yes" to every question."""

COIN_FLIP = 0.5
"""``yes_rate`` of a fair coin."""

DETECTION_GUESSES: dict[str, float] = {"always_yes": ALWAYS_YES, "coin_flip": COIN_FLIP}
"""The detection chance levels reported everywhere: name -> ``yes_rate``."""


def expected_f1(positives: int, negatives: int, yes_rate: float = ALWAYS_YES) -> float | None:
    """F1 (fraction) of the expected counts of a guess answering "positive" with probability
    ``yes_rate`` on ``positives`` + ``negatives`` items: ``2qP / (P(1 + q) + qN)`` (see the
    module docstring for the definition and its source).

    Returns:
        The F1, or ``None`` when there is no positive or ``yes_rate`` is 0 (F1 undefined, as
        for a type none of whose tampered clips was scored).

    Raises:
        ValueError: a negative count or ``yes_rate`` outside [0, 1].
    """
    p, n, q = positives, negatives, yes_rate
    if p < 0 or n < 0 or not 0.0 <= q <= 1.0:
        raise ValueError(f"counts must be >= 0 and yes_rate in [0, 1], got {p}, {n}, {q}")
    if p == 0 or q == 0:
        return None
    return 2 * q * p / (p * (1 + q) + q * n)


def guess_detection_f1(
    n_tampered: Mapping[str, int], n_original: int, yes_rate: float
) -> dict[str, float | None]:
    """Detection F1 of a guess with this ``yes_rate``, per tamper type (its ``n_tampered[type]``
    clips scored with the ``n_original`` originals) and ``overall`` (their unweighted mean),
    as :func:`mmrobust.metrics.tamper.tamper_metrics` scores a model (fractions).

    ``overall`` is ``None`` when a type's F1 is (no clip of it), or when there is no type."""
    out: dict[str, float | None] = {
        t: expected_f1(int(k), int(n_original), yes_rate) for t, k in n_tampered.items()
    }
    values = [v for v in out.values() if v is not None]
    out["overall"] = sum(values) / len(values) if values and len(values) == len(out) else None
    return out


def detection_chance(n_tampered: Mapping[str, int], n_original: int) -> dict[str, Any]:
    """The tamper-detection chance levels of a set: always "Yes" and a fair coin.

    Args:
        n_tampered: tamper type -> clips of that type (types with no clip are left out).
        n_original: original clips (each type is scored with all of them).

    Returns:
        ``{"always_yes": {type: F1, ..., "overall": mean}, "coin_flip": {...}}``, fractions;
        ``overall`` is the figure beside a run's Overall F1 (MVTamperBench section 4.1).
    """
    kept = {t: int(k) for t, k in n_tampered.items() if int(k) > 0}
    return {name: guess_detection_f1(kept, n_original, q) for name, q in DETECTION_GUESSES.items()}


def detection_counts(tamper_types: Iterable[str | None]) -> tuple[dict[str, int], int]:
    """``({type: clips}, originals)`` of clips with these tamper types (any spelling the
    vocabulary normalises: ``rotate`` is ``rotation``); types in MVTamperBench Table 7 order,
    then others sorted; a missing type is skipped."""
    counts = Counter(t for raw in tamper_types if (t := normalise_type(raw)) is not None)
    originals = counts.pop(TAMPER_ORIGINAL, 0)
    order = [t for t in CANONICAL_TYPES if t in counts] + sorted(set(counts) - set(CANONICAL_TYPES))
    return {t: counts[t] for t in order}, originals


def detection_chance_of_types(tamper_types: Iterable[str | None]) -> dict[str, Any]:
    """:func:`detection_chance` of the clips with these tamper types (``original`` = No)."""
    return detection_chance(*detection_counts(tamper_types))


def detection_chance_of_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`detection_chance` from a tamper ``metrics.json``'s per-type counts (``per_type``
    ``n_tampered``, ``n_original``), so it covers files written before the ``chance`` block;
    every level ``None`` when the file holds no counts."""
    per = metrics.get("per_type") or {}
    counts = {t: int(m.get("n_tampered") or 0) for t, m in per.items()}
    originals = max((int(m.get("n_original") or 0) for m in per.values()), default=0)
    return detection_chance(counts, originals)


def uniform_guess_chance(
    labels: Sequence[str], support: Sequence[int], n_options: int
) -> dict[str, Any]:
    """Expected scores of a uniform guess over ``n_options`` options on a truth with
    ``support[i]`` items of ``labels[i]`` (``--task type|when``), and the majority-class
    accuracy: ``n_options``, ``accuracy`` and ``balanced_accuracy`` (``1/K``), ``macro_f1``
    (mean over the classes present of :func:`expected_f1` with ``q = 1/K``: ``2p / (Kp + 1)``),
    ``majority`` (share of the most common class) and ``majority_class``; every level
    ``None`` without an item or an option."""
    n = sum(support)
    if n == 0 or n_options == 0:
        return {"accuracy": None, "balanced_accuracy": None, "macro_f1": None, "majority": None}
    inv = 1.0 / n_options
    f1 = [v for s in support if s > 0 and (v := expected_f1(s, n - s, inv)) is not None]
    best = max(range(len(support)), key=lambda i: support[i])
    return {
        "n_options": n_options,
        "accuracy": inv,
        "balanced_accuracy": inv,
        "macro_f1": sum(f1) / len(f1),
        "majority": support[best] / n,
        "majority_class": labels[best],
    }


def pair_chance(option_counts: Iterable[tuple[int, int]]) -> dict[str, float | None]:
    """RA and MR (percent, unrounded) of a uniform guess on both questions of each pair, from
    ``(k_pos, k_neg)`` (options of the pair's positive and negative question): see the module
    docstring. ``None`` without a pair whose counts are both above 0."""
    pairs = [(kp, kn) for kp, kn in option_counts if kp > 0 and kn > 0]
    if not pairs:
        return {"RA": None, "MR": None}
    ur = sum(1 / (kp * kn) for kp, kn in pairs)
    uf = sum((1 / kp) * (1 - 1 / kn) for kp, kn in pairs)
    return {"RA": 100.0 * ur / len(pairs), "MR": 100.0 * uf / (ur + uf)}


def consistency_chance(option_counts: Iterable[int]) -> dict[str, dict[str, float | None]]:
    """Floors of the consistency figures (fractions), from each pair's option count ``k``.

    ``random``: a uniform guess drawn anew for every image: accuracy ``mean(1/k)``, flip rate
    ``mean((k-1)/k)``, resist rate and typographic attack success ``mean(1/k)`` (the second
    guess is independent of the first). ``constant``: one answer whatever the image: flip
    rate 0, resist rate 1, accuracy drop 0. ``None`` without a pair.
    """
    ks = [k for k in option_counts if k > 0]
    if not ks:
        return {"random": {}, "constant": {}}
    inv = sum(1 / k for k in ks) / len(ks)
    return {
        "random": {
            "accuracy": inv,
            "accuracy_drop": 0.0,
            "flip_rate": 1.0 - inv,
            "resist_rate": inv,
            "attack_success_rate": inv,
        },
        "constant": {"accuracy_drop": 0.0, "flip_rate": 0.0, "resist_rate": 1.0},
    }


__all__ = [
    "ALWAYS_YES",
    "COIN_FLIP",
    "DETECTION_GUESSES",
    "consistency_chance",
    "detection_chance",
    "detection_chance_of_metrics",
    "detection_chance_of_types",
    "detection_counts",
    "expected_f1",
    "guess_detection_f1",
    "pair_chance",
    "uniform_guess_chance",
]
