"""The full report of several runs: Markdown/CSV tables, PNG plots and ``index.html``.

:func:`build_site` is what ``mmrobust report`` and ``mmrobust demo`` call. It
writes the tables and plots with :func:`mmrobust.report.build_report`, then
the self-contained HTML page (:mod:`mmrobust.report.html`) that shows the
same numbers: one leaderboard per dataset (runs on different data are never
ranked together), the plots, the run metadata and the sample browser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mmrobust.report import ReportPaths, RunData, build_report, load_run
from mmrobust.report.html import HtmlRun, Table, frame_to_table, write_html


@dataclass
class SitePaths:
    """Everything the report wrote: the tables and plots, and ``index.html``."""

    index_html: Path
    tables: ReportPaths


def _dataset_key(run: RunData) -> tuple[str, str]:
    ds = run.info.get("dataset", {})
    return str(ds.get("name", "?")), str(ds.get("data_hash", ""))


def labels_for(runs: Sequence[RunData]) -> list[str]:
    """Display labels: the model spec, made unique within a dataset by the run folder name."""
    labels = [r.model for r in runs]
    seen: dict[tuple[tuple[str, str], str], int] = {}
    for r, lab in zip(runs, labels, strict=True):
        seen[(_dataset_key(r), lab)] = seen.get((_dataset_key(r), lab), 0) + 1
    return [
        f"{lab} [{r.run_dir.name}]" if seen[(_dataset_key(r), lab)] > 1 else lab
        for r, lab in zip(runs, labels, strict=True)
    ]


def leaderboards(runs: Sequence[RunData], labels: Sequence[str]) -> list[Table]:
    """One table per (benchmark, dataset): Table 7 shape for tamper, Table 2 shape for MMR."""
    from mmrobust.report.mmr import table2
    from mmrobust.report.tables import per_task_table, table7

    groups: dict[tuple[str, tuple[str, str]], dict[str, RunData]] = {}
    for r, lab in zip(runs, labels, strict=True):
        groups.setdefault((r.benchmark, _dataset_key(r)), {})[lab] = r
    tables: list[Table] = []
    order = {"tamper": 0, "mmr": 1}
    for (bench, (name, digest)), members in sorted(
        groups.items(), key=lambda kv: order.get(kv[0][0], 2)
    ):
        where = f"{name} (data sha256 {digest[:12]})" if digest else name
        metrics = {lab: r.metrics for lab, r in members.items()}
        if bench == "tamper":
            tables.append(
                frame_to_table(
                    table7(metrics),
                    f"Tamper detection F1 on {where} (MVTamperBench Table 7 layout)",
                    note="F1 with tampered = positive class, per type on that type's clips plus "
                    "all originals; Overall = unweighted mean over types (paper section 4.1). "
                    "Overall CI95 = cluster bootstrap over source videos. Window coverage = "
                    "share of tampered clips with a shown frame inside the tamper window. "
                    "Flag always_yes/always_no marks a degenerate predictor (always 'Yes' scores "
                    "F1 2/3 on balanced data).",
                )
            )
            for lab, r in members.items():
                frame = per_task_table(r.metrics)
                if not frame.empty and len(frame) > 1:
                    tables.append(frame_to_table(frame, f"Per task x type F1: {lab}"))
        elif bench == "mmr":
            tables.append(
                frame_to_table(
                    table2(metrics),
                    f"Leading questions on {where} (MMR Table 2 layout)",
                    note="RA = UR / pairs, MR = UF / (UR + UF), in percent (MMR paper section 3, "
                    "eq. 1-2). 'Avg' is over all pairs, as published; the mean of the category "
                    "values is category_mean in metrics.json.",
                    digits=2,
                )
            )
    return tables


def build_site(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    title: str = "mmrobust report",
    audits: Sequence[str | Path] = (),
) -> SitePaths:
    """Write the tables, plots and ``index.html`` for ``run_dirs`` into ``out_dir``.

    Args:
        run_dirs: run folders.
        out_dir: the report folder.
        title: page title.
        audits: ``audit.json`` files (``mmrobust audit --out``) shown as leak-audit panels.

    Raises:
        FileNotFoundError: a folder is not a run folder, or an audit file is missing.
        ValueError: an audit file is not one.
    """
    from mmrobust.report.audit import audit_panel, load_audit

    panels = [audit_panel(load_audit(a), i) for i, a in enumerate(audits)]
    out = Path(out_dir)
    paths = build_report(run_dirs, out)
    runs = [load_run(d) for d in run_dirs]
    labels = labels_for(runs)
    figures: dict[str, str] = {}
    for p in paths.plots:
        figures[p.stem.replace("_", " ")] = p.resolve().relative_to(out.resolve()).as_posix()
    for p in paths.mmr:
        if p.suffix == ".png":
            rel = p.resolve().relative_to(out.resolve()).as_posix()
            figures[f"MMR accuracy on positive vs negative questions: {p.parent.name}"] = rel
    html_runs = [
        HtmlRun(label=lab, benchmark=r.benchmark, run=r.info, metrics=r.metrics, rows=r.rows)
        for lab, r in zip(labels, runs, strict=True)
    ]
    index = write_html(
        out,
        html_runs,
        tables=leaderboards(runs, labels),
        figures=figures,
        title=title,
        panels=panels,
    )
    return SitePaths(index_html=index, tables=paths)


__all__ = ["SitePaths", "build_site", "labels_for", "leaderboards"]
