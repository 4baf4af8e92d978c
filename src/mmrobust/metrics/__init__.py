"""Metrics: pure functions over stored, scored rows (``ScoredRecord``).

``compute_metrics(records, benchmark, **kw)`` scores with the family registered as
``benchmark`` (:mod:`mmrobust.families`, ``BenchmarkFamily.score``): MVTamperBench F1
(:mod:`mmrobust.metrics.tamper`), MMR RA/MR (:mod:`mmrobust.metrics.mmr`), the
``--task type|when|leading`` questions (:mod:`mmrobust.metrics.tasks`) and, for
``generic``, :func:`generic_metrics` (accuracy with parse-fail and error rates).

``metrics`` never imports ``models`` or ``store``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from mmrobust.families import get_family
from mmrobust.records import ScoredRecord
from mmrobust.status import Status


def generic_metrics(records: Iterable[ScoredRecord], **_: Any) -> dict[str, Any]:
    """Accuracy over all rows (failures count as wrong), plus accuracy over answered rows.

    ``records`` are read once (a generator streamed from the store will do).

    Returns:
        ``benchmark`` ("generic"), ``n_samples``, ``accuracy``, ``accuracy_answered``,
        ``parse_fail_rate``, ``error_rate``, ``status_counts``.
    """
    n = answered = correct = parse_fail = errors = 0
    counts: Counter[str] = Counter()
    for r in records:
        n += 1
        answered += r.status is Status.OK
        correct += r.correct
        parse_fail += r.status is Status.PARSE_FAIL
        errors += r.status.is_error
        counts[r.status.value] += 1
    return {
        "benchmark": "generic",
        "n_samples": n,
        "accuracy": correct / n if n else 0.0,
        "accuracy_answered": correct / answered if answered else 0.0,
        "parse_fail_rate": parse_fail / n if n else 0.0,
        "error_rate": errors / n if n else 0.0,
        "status_counts": dict(counts),
    }


def compute_metrics(records: Iterable[ScoredRecord], benchmark: str, **kw: Any) -> dict[str, Any]:
    """Score ``records`` with the metric family of ``benchmark``.

    Args:
        records: one ``ScoredRecord`` per sample: a sequence, or any iterable when the
            family ``streams`` (read once).
        benchmark: a registered family (``"tamper"``, ``"mmr"``, ``"generic"``, a task
            family ``"tamper-type"``, ``"tamper-when"``, ``"tamper-leading"``, or one a
            user registered with :func:`mmrobust.families.register_family`).
        **kw: passed to the family's scorer (``BenchmarkFamily.score_options`` builds
            them; tamper and the tasks: ``failures``, ``n_resamples``, ``seed``, ``level``).

    Raises:
        ValueError: unknown benchmark (``UnknownFamilyError``, with "did you mean").
    """
    return get_family(benchmark).score(records, **kw)


__all__ = ["compute_metrics", "generic_metrics"]
