"""The full report of several runs: Markdown/CSV tables, PNG plots and ``index.html``.

:func:`build_site` is what ``mmrobust report`` and ``mmrobust demo`` call. It
loads each run once, writes the tables and plots with
:func:`mmrobust.report.build_report`, then the self-contained HTML page
(:mod:`mmrobust.report.html`) that shows the same numbers: one leaderboard per
dataset (runs on different data are never ranked together) with the papers'
published rows as grey reference rows (toggle in the page; ``published=False``
leaves them out), the plots, any extra panels, the run metadata and the sample
browser.

Adding a panel: append a function ``(runs, labels, out_dir) -> Section | None``
to :data:`SECTION_BUILDERS` (see :class:`mmrobust.report.html.Section`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mmrobust.report import (
    MMR_NOTE,
    ReportPaths,
    RunData,
    RunGroup,
    build_report,
    group_runs,
    load_run,
    run_labels,
)
from mmrobust.report.browser import MAX_THUMBS, THUMB_SECONDS
from mmrobust.report.html import HtmlRun, Section, Table, frame_to_table, write_html
from mmrobust.schema import Sample

SectionBuilder = Callable[[Sequence[RunData], Sequence[str], Path], "Section | None"]

SECTION_BUILDERS: list[SectionBuilder] = []
"""Extra panels of ``index.html``, in order; a builder returns ``None`` to add nothing."""


@dataclass
class SitePaths:
    """Everything the report wrote: the tables and plots, and ``index.html``."""

    index_html: Path
    tables: ReportPaths


def labels_for(runs: Sequence[RunData]) -> list[str]:
    """Display labels (see :func:`mmrobust.report.run_labels`)."""
    return run_labels(runs)


def _published_table7(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str], str]:
    """``frame`` (our runs) with MVTamperBench Table 7's rows, sorted by Overall; row classes."""
    from mmrobust.report.published import load_published, table7_metrics
    from mmrobust.report.tables import table7

    published = table7(table7_metrics())
    both = pd.concat([frame.assign(_src="run"), published.assign(_src="published")])
    both = both.sort_values("Overall", ascending=False, na_position="last", kind="stable")
    classes = both.pop("_src").tolist()
    both["n"] = both["n"].astype("Int64")
    src = load_published("mvtamperbench_table7")
    note = (
        f" Grey rows: {src.citation}, as published (F1 x 100), {src.source['protocol']} "
        "A run here is comparable with them only on that data with that protocol "
        "(mmrobust eval --official on the released benchmark)."
    )
    return both.reset_index(drop=True), classes, note


def _published_table2(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str], str]:
    """``frame`` (our runs, Table 2 shape) with MMR Table 2's rows, by Avg RA; row classes."""
    from mmrobust.report.mmr import table2
    from mmrobust.report.published import load_published, table2_errata, table2_metrics

    published = table2(table2_metrics())
    both = pd.concat([frame.assign(_src="run"), published.assign(_src="published")])
    ra = both.xs("RA", level="Metric")["Avg"]
    order = ra.sort_values(ascending=False, kind="stable").index.tolist()
    both = pd.concat([both.loc[[m]] for m in dict.fromkeys(order)])
    classes = both.pop("_src").tolist()
    src = load_published("mmr_table2")
    errata = "; ".join(
        f"{e['model']}'s {e['category']} {e['metric']} is printed {e['printed']:.2f}, "
        f"the rest of its row implies {e['consistent']:.2f} (shown as printed)"
        for e in table2_errata()
    )
    note = (
        f" Grey rows: {src.citation}, as published, {src.source['protocol']} "
        f"Comparable with a run here only on that data. {errata}."
    )
    return both, classes, note


def leaderboards(
    runs: Sequence[RunData], labels: Sequence[str], *, published: bool = True
) -> list[Table]:
    """One table per (benchmark, dataset): Table 7 shape for tamper, Table 2 shape for MMR.

    With ``published``, each tamper table also lists MVTamperBench Table 7's 45
    models and each MMR table MMR Table 2's 19, as grey reference rows sorted in
    with the runs (by Overall F1, by Avg RA).
    """
    from mmrobust.report.mmr import table2
    from mmrobust.report.tables import TABLE7_NOTE, per_task_table, table7

    layouts = {  # benchmark -> (Table frame, published rows, caption, title, decimals)
        "tamper": (table7, _published_table7, TABLE7_NOTE,
                   "Tamper detection F1 (%) on {} (MVTamperBench Table 7 layout)", 1),
        "mmr": (table2, _published_table2, MMR_NOTE,
                "Leading questions on {} (MMR Table 2 layout, %)", 2),
    }  # fmt: skip
    tables: list[Table] = []
    for g in group_runs(runs, labels):
        if g.benchmark not in layouts:
            tables += task_leaderboards(g)
            continue
        shape, add_published, note, title, digits = layouts[g.benchmark]
        frame = shape({lab: r.metrics for lab, r in g.runs.items()})
        classes = ["run"] * len(frame)
        if published:
            frame, classes, extra = add_published(frame)
            note += extra
        tables.append(
            frame_to_table(
                frame,
                title.format(g.where),
                note=note,
                digits=digits,
                row_classes=classes,
                group=g.benchmark,
            )
        )
        if g.benchmark == "tamper":
            for lab, r in g.runs.items():
                per_task = per_task_table(r.metrics)
                if not per_task.empty and len(per_task) > 1:
                    tables.append(
                        frame_to_table(per_task, f"Per task x type F1 (%): {lab} on {g.dataset}")
                    )
    return tables


def task_leaderboards(g: RunGroup) -> list[Table]:
    """The tables of one ``--task type|when|leading`` group (``mmrobust.report.tasks``);
    the uniform-guess row is a grey reference row."""
    from mmrobust.report import tasks as t

    metrics = {lab: r.metrics for lab, r in g.runs.items()}
    task = g.benchmark.removeprefix("tamper-")
    if task in ("type", "when"):
        frame = t.multiclass_table(metrics)
        classes = ["run"] * len(g.runs) + ["reference"] * (len(frame) - len(g.runs))
        title = "Tamper type" if task == "type" else "Tamper location (thirds)"
        out = [
            frame_to_table(
                frame,
                f"{title} on {g.where} (--task {task}, %)",
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
    if task != "leading":
        return []
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


def build_site(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    title: str = "mmrobust report",
    published: bool = True,
    max_thumbs: int = MAX_THUMBS,
    thumb_seconds: float | None = THUMB_SECONDS,
    audits: Sequence[str | Path] = (),
) -> SitePaths:
    """Write the tables, plots and ``index.html`` for ``run_dirs`` into ``out_dir``.

    Args:
        run_dirs: run folders written by ``mmrobust eval``.
        out_dir: the report folder (created).
        title: the page title.
        published: show the papers' published rows in the leaderboards (toggle in the page).
        max_thumbs: samples that get a thumbnail strip in the sample browser.
        thumb_seconds: time budget for drawing them (``None``: none); a second report
            into the same folder reuses the strips already drawn.
        audits: ``audit.json`` files (``mmrobust audit --out``), each shown as a leak-audit panel.

    Raises:
        FileNotFoundError: a folder is not a run folder, or an audit file is missing.
        ValueError: an audit file is not one.
    """
    from mmrobust.report.audit import audit_section, load_audit

    audit_sections = [audit_section(load_audit(a), i) for i, a in enumerate(audits)]
    out = Path(out_dir)
    shared: dict[str, Sample] = {}  # runs of one dataset parse each sample once
    runs = [load_run(d, samples=shared) for d in run_dirs]
    labels = run_labels(runs)
    paths = build_report(runs, out)
    names = {id(r): g.dataset for g in group_runs(runs, labels) for r in g.runs.values()}
    html_runs = [
        HtmlRun(  # a --task run is named with its task outside its own leaderboard
            label=lab
            + (f" (--task {r.benchmark[7:]})" if r.benchmark.startswith("tamper-") else ""),
            benchmark=r.benchmark,
            run=r.info,
            metrics=r.metrics,
            rows=r.rows,
            dataset=names.get(id(r), r.dataset),
        )
        for lab, r in zip(labels, runs, strict=True)
    ]
    sections = [s for build in SECTION_BUILDERS if (s := build(runs, labels, out)) is not None]
    sections += audit_sections
    index = write_html(
        out,
        html_runs,
        tables=leaderboards(runs, labels, published=published),
        figures=paths.figures,
        sections=sections,
        title=title,
        max_thumbs=max_thumbs,
        thumb_seconds=thumb_seconds,
    )
    return SitePaths(index_html=index, tables=paths)


__all__ = [
    "SECTION_BUILDERS",
    "SectionBuilder",
    "SitePaths",
    "build_site",
    "labels_for",
    "leaderboards",
    "task_leaderboards",
]
