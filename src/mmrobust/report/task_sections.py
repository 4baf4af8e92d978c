"""The ``--task type|when|leading`` families' report sections: Markdown, CSV, plots, HTML tables.

Called through the family seam (:mod:`mmrobust.families.tasks`). Per group (one task
on one dataset; ``index`` > 0, a further dataset, suffixes the file names):

* ``type`` / ``when``: ``task_<task>.csv`` (accuracy, balanced accuracy, macro-F1,
  recall per class, chance row), ``task_when_per_type.csv`` (``when``), the confusion
  matrices in Markdown and ``confusion_<task>.png``;
* ``leading``: ``task_leading.csv`` (MMR Table 2 layout per presupposed effect),
  ``task_leading_summary.csv`` (RA, MR and the text-only floor), ``task_leading.png``.

Tables and plots themselves are in :mod:`mmrobust.report.tasks`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path

from mmrobust.atomicfile import write_with
from mmrobust.report import tasks as t
from mmrobust.report.common import safe_name, to_markdown
from mmrobust.report.html import Table, frame_to_table
from mmrobust.report.view import ReportPaths, RunGroup

TITLES = {"type": "Tamper type", "when": "Tamper location (thirds)"}
"""Task -> the heading of its leaderboard."""


def _suffix(g: RunGroup, index: int) -> str:
    return "" if index == 0 else f"_{safe_name(g.dataset)}"


def multiclass_markdown(
    task: str, groups: Sequence[RunGroup], out: Path, paths: ReportPaths
) -> list[str]:
    """Write the ``--task type|when`` groups' CSVs and confusion plots; return Markdown lines."""
    md: list[str] = []
    for i, g in enumerate(groups):
        runs, suffix = g.metrics(), _suffix(g, i)
        frame = t.multiclass_table(runs)
        p = out / f"task_{task}{suffix}.csv"
        write_with(p, partial(frame.to_csv, index=False))
        paths.task_csv.append(p)
        md += [f"## {TITLES[task]} on {g.where} (--task {task}, %)", "", to_markdown(frame)]
        md += [t.TYPE_NOTE if task == "type" else t.WHEN_NOTE, ""]
        if task == "when":
            per_type = t.accuracy_per_type_table(runs)
            p = out / f"task_when_per_type{suffix}.csv"
            write_with(p, partial(per_type.to_csv, index=False))
            paths.task_csv.append(p)
            md += [f"### Accuracy per tamper type (%) on {g.dataset}", "", to_markdown(per_type)]
            for w in dict.fromkeys(w for m in runs.values() for w in m.get("warnings", [])):
                md += [f"Warning: {w}", ""]
        for label, m in runs.items():
            md += [f"### Confusion matrix: {label} on {g.dataset}", "", t.confusion_markdown(m)]
        paths.figures.append(
            t.plot_confusions(runs, out / f"confusion_{task}{suffix}.png", dataset=g.dataset)
        )
    return md


def leading_markdown(groups: Sequence[RunGroup], out: Path, paths: ReportPaths) -> list[str]:
    """Write the ``--task leading`` groups' CSVs and plots; return Markdown lines."""
    md: list[str] = []
    for i, g in enumerate(groups):
        runs, suffix = g.metrics(), _suffix(g, i)
        text_only = {lab: r.text_only for lab, r in g.runs.items()}
        table = t.leading_table2(runs)
        summary = t.leading_summary(runs, text_only)
        for name, frame in (("task_leading", table), ("task_leading_summary", summary)):
            p = out / f"{name}{suffix}.csv"
            write_with(p, partial(frame.to_csv, index=False))
            paths.task_csv.append(p)
        md += [
            f"## Leading questions on {g.where} (--task leading, MMR Table 2 layout, %)",
            "",
            to_markdown(table, digits=2),
            t.LEADING_NOTE,
            "",
            f"### RA, MR and the text-only floor on {g.dataset}",
            "",
            to_markdown(summary, digits=2),
            t.LEADING_SUMMARY_NOTE + t.floor_note(runs, text_only),
            "",
        ]
        paths.figures.append(
            t.plot_leading(runs, out / f"task_leading{suffix}.png", dataset=g.dataset)
        )
    return md


def multiclass_leaderboards(task: str, g: RunGroup) -> list[Table]:
    """The HTML tables of one ``--task type|when`` group; the uniform guess is a grey
    reference row."""
    metrics = g.metrics()
    frame = t.multiclass_table(metrics)
    classes = ["run"] * len(g.runs) + ["reference"] * (len(frame) - len(g.runs))
    out = [
        frame_to_table(
            frame,
            f"{TITLES[task]} on {g.where} (--task {task}, %)",
            note=t.TYPE_NOTE if task == "type" else t.WHEN_NOTE,
            row_classes=classes,
            group=g.benchmark,
        )
    ]
    if task == "when":
        warnings = dict.fromkeys(w for m in metrics.values() for w in m.get("warnings", []))
        out.append(
            frame_to_table(
                t.accuracy_per_type_table(metrics),
                f"Tamper location: accuracy per tamper type (%) on {g.dataset}",
                note=" ".join(f"Warning: {w}." for w in warnings),
                group=g.benchmark,
            )
        )
    return out


def leading_leaderboards(g: RunGroup, published: bool = False) -> list[Table]:
    """The HTML tables of one ``--task leading`` group (no published rows: none exist)."""
    metrics = g.metrics()
    text_only = {lab: r.text_only for lab, r in g.runs.items()}
    table2 = t.leading_table2(metrics)
    return [
        frame_to_table(
            table2,
            f"Leading questions on {g.where} (--task leading, MMR Table 2 layout, %)",
            note=t.LEADING_NOTE,
            digits=2,
            row_classes=["run"] * (2 * len(g.runs))
            + ["reference"] * (len(table2) - 2 * len(g.runs)),
            group=g.benchmark,
        ),
        frame_to_table(
            t.leading_summary(metrics, text_only),
            f"Leading questions: RA, MR and the text-only floor on {g.dataset} (%)",
            note=t.LEADING_SUMMARY_NOTE + t.floor_note(metrics, text_only),
            digits=2,
            row_classes=["run"] * len(g.runs),
            group=g.benchmark,
        ),
    ]


__all__ = [
    "TITLES",
    "leading_leaderboards",
    "leading_markdown",
    "multiclass_leaderboards",
    "multiclass_markdown",
]
