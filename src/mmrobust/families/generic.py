"""The ``generic`` family: multiple-choice questions from any JSONL file.

Accuracy over all rows (a failed answer counts as wrong) and over answered rows
(:func:`mmrobust.metrics.generic_metrics`); no leaderboard of its own.
"""

from __future__ import annotations

from mmrobust.families.base import BenchmarkFamily, lazy


def failure_rule(failures: str) -> str:
    """How failed answers count in generic accuracy."""
    return "a failed answer counts as wrong in accuracy (accuracy_answered leaves it out)"


GENERIC = BenchmarkFamily(
    id="generic",
    title="multiple-choice questions",
    score=lazy("mmrobust.metrics:generic_metrics"),
    failure_rule=failure_rule,
    default_template="plain",
    summary=lazy("mmrobust.report.tables:generic_summary_lines"),
    headline=lazy("mmrobust.report.tables:generic_headline"),
    streams=True,
    order=50,
)
"""Generic JSONL questions: ``Sample.benchmark == "generic"``."""

__all__ = ["GENERIC", "failure_rule"]
