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
from dataclasses import dataclass, replace
from pathlib import Path

from mmrobust.report import ReportPaths, RunGroup, RunView, build_report, group_runs, run_labels
from mmrobust.report.browser import MAX_THUMBS, THUMB_SECONDS
from mmrobust.report.html import Section, Table, write_html
from mmrobust.report.view import load_run
from mmrobust.schema import Sample

SectionBuilder = Callable[[Sequence[RunView], Sequence[str], Path], "Section | None"]

SECTION_BUILDERS: list[SectionBuilder] = []
"""Extra panels of ``index.html``, in order; a builder returns ``None`` to add nothing."""


@dataclass
class SitePaths:
    """Everything the report wrote: the tables and plots, and ``index.html``."""

    index_html: Path
    tables: ReportPaths


def labels_for(runs: Sequence[RunView]) -> list[str]:
    """Display labels (see :func:`mmrobust.report.run_labels`)."""
    return run_labels(runs)


def leaderboards(
    runs: Sequence[RunView], labels: Sequence[str], *, published: bool = True
) -> list[Table]:
    """The HTML tables of every (benchmark, dataset) group, each from its family
    (``BenchmarkFamily.leaderboards``): Table 7 shape for tamper, Table 2 shape for MMR,
    the ``--task`` tables, a user family's own.

    With ``published``, each tamper table also lists MVTamperBench Table 7's 45
    models and each MMR table MMR Table 2's 19, as grey reference rows sorted in
    with the runs (by Overall F1, by Avg RA).
    """
    tables: list[Table] = []
    for g in group_runs(runs, labels):
        tables += g.family.leaderboards(g, published)
    return tables


def task_leaderboards(g: RunGroup) -> list[Table]:
    """The tables of one ``--task type|when|leading`` group (its family's leaderboards)."""
    tables: list[Table] = g.family.leaderboards(g, False)
    return tables


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
    html_runs = [  # a --task run is named with its task outside its own leaderboard
        replace(r, label=lab + r.family.label_suffix, dataset_label=names.get(id(r), r.dataset))
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
