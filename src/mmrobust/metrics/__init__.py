"""Metrics: pure functions over stored, scored rows (``ScoredRecord``).

``compute_metrics(records, benchmark, **kw)`` dispatches by benchmark:

* ``"tamper"`` -> :func:`mmrobust.metrics.tamper.tamper_metrics` (MVTamperBench F1),
* ``"mmr"`` -> ``mmrobust.metrics.mmr:mmr_metrics`` (MMR RA/MR; imported lazily),
* ``"tamper-type"``, ``"tamper-when"``, ``"tamper-leading"`` -> the tasks of
  ``--task type|when|leading`` (``mmrobust.metrics.tasks``; imported lazily),
* ``"generic"`` -> accuracy with parse-fail and error rates.

``metrics`` never imports ``models`` or ``store``.
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from mmrobust.records import ScoredRecord
from mmrobust.status import Status


def generic_metrics(records: Sequence[ScoredRecord], **_: Any) -> dict[str, Any]:
    """Accuracy over all rows (failures count as wrong), plus accuracy over answered rows.

    Returns:
        ``benchmark`` ("generic"), ``n_samples``, ``accuracy``, ``accuracy_answered``,
        ``parse_fail_rate``, ``error_rate``, ``status_counts``.
    """
    n = len(records)
    answered = [r for r in records if r.status is Status.OK]
    correct = sum(r.correct for r in records)
    return {
        "benchmark": "generic",
        "n_samples": n,
        "accuracy": correct / n if n else 0.0,
        "accuracy_answered": correct / len(answered) if answered else 0.0,
        "parse_fail_rate": sum(r.status is Status.PARSE_FAIL for r in records) / n if n else 0.0,
        "error_rate": sum(r.status.is_error for r in records) / n if n else 0.0,
        "status_counts": dict(Counter(r.status.value for r in records)),
    }


def _tamper(records: Sequence[ScoredRecord], **kw: Any) -> dict[str, Any]:
    from mmrobust.metrics.tamper import tamper_metrics

    return tamper_metrics(records, **kw)


def _mmr(records: Sequence[ScoredRecord], **kw: Any) -> dict[str, Any]:
    fn: Callable[..., dict[str, Any]] = importlib.import_module("mmrobust.metrics.mmr").mmr_metrics
    return fn(records, **kw)


def _task(name: str) -> Callable[..., dict[str, Any]]:
    def score(records: Sequence[ScoredRecord], **kw: Any) -> dict[str, Any]:
        fn: Callable[..., dict[str, Any]] = getattr(
            importlib.import_module("mmrobust.metrics.tasks"), f"{name}_metrics"
        )
        return fn(records, **kw)

    return score


_DISPATCH: dict[str, Callable[..., dict[str, Any]]] = {
    "tamper": _tamper,
    "mmr": _mmr,
    "generic": generic_metrics,
    "tamper-type": _task("type"),
    "tamper-when": _task("when"),
    "tamper-leading": _task("leading"),
}


def compute_metrics(records: Sequence[ScoredRecord], benchmark: str, **kw: Any) -> dict[str, Any]:
    """Score ``records`` with the metric family of ``benchmark``.

    Args:
        records: one ``ScoredRecord`` per sample.
        benchmark: ``"tamper"``, ``"mmr"``, ``"generic"`` or a task family
            (``"tamper-type"``, ``"tamper-when"``, ``"tamper-leading"``).
        **kw: passed to the family's function (tamper and the tasks: ``failures``,
            ``n_resamples``, ``seed``, ``level``).

    Raises:
        ValueError: unknown benchmark.
    """
    if benchmark not in _DISPATCH:
        raise ValueError(f"unknown benchmark {benchmark!r}; expected one of {sorted(_DISPATCH)}")
    return _DISPATCH[benchmark](records, **kw)


__all__ = ["compute_metrics", "generic_metrics"]
