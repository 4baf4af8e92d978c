"""The ``--task type|when|leading`` families: questions about tamper clips (docs/tasks.md).

* ``tamper-type``: which kind of tampering, if any (multi-class);
* ``tamper-when``: where the tampering is, in thirds of the clip (multi-class);
* ``tamper-leading``: MMR-style positive / leading question pairs about a clip.

Maths in :mod:`mmrobust.metrics.tasks`; tables and figures in :mod:`mmrobust.report.tasks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from mmrobust.families.base import BenchmarkFamily, CardSection, ScoreOptions, lazy


def _options(o: ScoreOptions) -> dict[str, Any]:
    return {
        "failures": o.failures,
        "n_resamples": o.n_resamples,
        "seed": o.seed,
        "defects": o.defects,
    }


def multiclass_failure_rule(failures: str) -> str:
    """How failed answers count in the accuracies of ``--task type|when``."""
    if failures == "wrong":
        return "parse failures and errors counted wrong (--failures wrong)"
    return "parse failures and errors left out of accuracy and F1, counted in their rates"


def leading_failure_rule(failures: str) -> str:
    """How failed answers count in ``--task leading`` (MMR's rule: not right)."""
    return "a failed answer (parse failure or error) counts as not right, as in MMR"


def _multiclass(task: str, order: int) -> BenchmarkFamily:
    return BenchmarkFamily(
        id=f"tamper-{task}",
        title=f"tamper clips, --task {task}",
        score=lazy(f"mmrobust.metrics.tasks:{task}_metrics"),
        score_options=_options,
        failure_rule=multiclass_failure_rule,
        summary=partial(_summary, task),
        headline=lazy("mmrobust.report.tasks:multiclass_headline"),
        markdown=partial(_markdown, task),
        leaderboards=partial(_leaderboards, task),
        order=order,
        label_suffix=f" (--task {task})",
        card=CardSection(task),
    )


def _summary(task: str, metrics: Mapping[str, Any]) -> list[str]:
    lines: list[str] = lazy("mmrobust.report.tasks:multiclass_summary_lines")(metrics, task)
    return lines


def _markdown(task: str, groups: Any, out: Any, paths: Any) -> list[str]:
    lines: list[str] = lazy("mmrobust.report.task_sections:multiclass_markdown")(
        task, groups, out, paths
    )
    return lines


def _leaderboards(task: str, group: Any, published: bool) -> list[Any]:
    tables: list[Any] = lazy("mmrobust.report.task_sections:multiclass_leaderboards")(task, group)
    return tables


TYPE = _multiclass("type", 10)
"""``--task type``: ``Sample.benchmark == "tamper-type"``."""

WHEN = _multiclass("when", 20)
"""``--task when``: ``Sample.benchmark == "tamper-when"``."""

LEADING = BenchmarkFamily(
    id="tamper-leading",
    title="tamper clips, --task leading",
    score=lazy("mmrobust.metrics.tasks:leading_metrics"),
    score_options=_options,
    failure_rule=leading_failure_rule,
    summary=lazy("mmrobust.report.tasks:leading_summary_lines"),
    headline=lazy("mmrobust.report.mmr:headline"),
    markdown=lazy("mmrobust.report.task_sections:leading_markdown"),
    leaderboards=lazy("mmrobust.report.task_sections:leading_leaderboards"),
    paired=True,
    order=30,
    label_suffix=" (--task leading)",
    card=CardSection("leading"),
)
"""``--task leading``: ``Sample.benchmark == "tamper-leading"``."""

__all__ = ["LEADING", "TYPE", "WHEN", "leading_failure_rule", "multiclass_failure_rule"]
