"""MMR report: a table shaped like the paper's Table 2 and a positive-vs-negative accuracy plot.

Input is the ``metrics.json`` dict of an MMR run
(:func:`mmrobust.metrics.mmr.mmr_metrics`). Table 2 of arXiv:2406.10638 has
one RA row and one MR row per model, with the twelve categories as columns
(abbreviated) and ``Avg`` = the value over all pairs (not the mean of the
columns; that mean is ``category_mean`` in ``metrics.json``). The plot is the
per-category view of the paper's Figure 5 (accuracy on positive vs negative
questions).

The family seam (:mod:`mmrobust.families.mmr`) calls :func:`summary_lines`,
:func:`headline`, :func:`markdown_section` (``mmr_table2.csv`` for the first MMR
dataset, ``mmr_table2_<dataset>.csv`` for further ones, and each run's
``mmr/<label>/``) and :func:`leaderboards` (with MMR Table 2's 19 published models
as grey reference rows when asked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrobust.atomicfile import write_text, write_with
from mmrobust.datasets.hub import MMR_SHA256 as RELEASED_SHA256  # re-exported (the pin)
from mmrobust.report.common import safe_name
from mmrobust.report.plots import Figure, plot_mmr_accuracy
from mmrobust.report.units import (
    MISSING,
    PERCENT_DIGITS,
    pct_sign,
    percent_interval,
    percent_sign,
)
from mmrobust.report.view import ReportPaths, RunGroup

if TYPE_CHECKING:  # pandas and the page's html (jinja2) are imported where tables are built
    import pandas as pd

    from mmrobust.report.html import Table

MMR_NOTE = (
    "RA = UR / pairs (higher is better), MR = UF / (UR + UF) (lower is better), in percent "
    "(MMR section 3, eq. 1-2). Avg is over all pairs, as published; the mean of the category "
    "values is category_mean in metrics.json. – marks an MR with no pair whose positive "
    "question was answered right."
)
"""The caption of every Table 2 shaped table."""

ABBREVIATIONS: dict[str, str] = {
    "Character/Number": "Char/Num",
    "Presence": "Pres.",
    "Color/Texture": "Color/Tex",
    "Number": "Num.",
    "Shape": "Shape",
    "Posture": "Posture",
    "Position": "Pos.",
    "Abstract Knowledge": "Abstract.",
    "Concrete Knowledge": "Concrete.",
    "Expertise": "Expert.",
    "Activity": "Act.",
    "Relationships": "Rel.",
}
"""Category display name -> the column heading of the paper's Table 2."""


def table2(runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Table-2-shaped frame: rows ``(model, "RA")`` and ``(model, "MR")``, category columns, ``Avg``.

    Args:
        runs: model label -> MMR metrics dict. Categories are the union over runs,
            in Table 2 order; a category a run lacks is ``NaN``.

    Returns:
        a DataFrame indexed by ``(Method, Metric)``; values in percent rounded to two
        decimals as MMR Table 2 prints them (``None`` -> ``NaN``).
    """
    columns: list[str] = []
    for metrics in runs.values():
        for name in metrics.get("categories", {}):
            if name not in columns:
                columns.append(name)
    rows: list[dict[str, Any]] = []
    for label, metrics in runs.items():
        categories = metrics.get("categories", {})
        for key in ("RA", "MR"):
            row: dict[str, Any] = {"Method": label, "Metric": key}
            for name in columns:
                value = categories.get(name, {}).get(key)
                row[ABBREVIATIONS.get(name, name)] = value
            row["Avg"] = metrics.get(key)
            rows.append(row)
    import pandas as pd

    frame = pd.DataFrame(rows).set_index(["Method", "Metric"])
    return frame.astype(float).round(PERCENT_DIGITS)


def _fmt(value: float) -> str:
    import pandas as pd

    return MISSING if pd.isna(value) else f"{value:.2f}"


def to_markdown(frame: pd.DataFrame) -> str:
    """GitHub Markdown of a :func:`table2` frame (``–`` for undefined values, 2 decimals)."""
    headers = ["Method", "Metric", *frame.columns]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for index, row in frame.iterrows():
        method, metric = str(index[0]), str(index[1])  # type: ignore[index]
        arrow = "↑" if metric == "RA" else "↓"
        cells = [method, f"{metric} {arrow}", *(_fmt(v) for v in row.tolist())]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def summary_markdown(label: str, metrics: Mapping[str, Any], *, table: bool = True) -> str:
    """Markdown block of one run: its Table 2 rows (unless ``table`` is false), counts,
    accuracies, CIs, failure rates, defects. No heading: the caller writes one."""
    ci = metrics.get("ci") or {}
    mean = metrics.get("category_mean") or {}
    parts = [
        *([to_markdown(table2({label: metrics}))] if table else []),
        f"Pairs {metrics['pairs']}: UR {metrics['UR']}, UF {metrics['UF']}, NR {metrics['NR']}, "
        f"NF {metrics['NF']}. RA {_fmt(_num(metrics.get('RA')))}% "
        f"(95% CI {percent_interval(ci.get('RA'))}), MR {_fmt(_num(metrics.get('MR')))}% "
        f"(95% CI {percent_interval(ci.get('MR'))}).",
        f"Mean of the category values (not the paper's Avg): RA {_fmt(_num(mean.get('RA')))}%, "
        f"MR {_fmt(_num(mean.get('MR')))}%.",
        f"Accuracy on positive questions {_fmt(_num(metrics.get('positive_accuracy')))}%, "
        f"on negative (leading) questions {_fmt(_num(metrics.get('negative_accuracy')))}%.",
        f"Parse failures {pct_sign(metrics.get('parse_fail_rate', 0.0))} and errors "
        f"{pct_sign(metrics.get('error_rate', 0.0))} of questions (a failed answer counts as wrong).",
    ]
    defects: Sequence[str] = metrics.get("defects", [])
    if defects:
        parts.append("\nData defects:\n" + "\n".join(f"- {d}" for d in defects))
    return "\n\n".join(parts) + "\n"


def _num(value: Any) -> float:
    return float("nan") if value is None else float(value)


def plot_accuracy(
    metrics: Mapping[str, Any], path: str | Path, *, label: str = "", dataset: str = ""
) -> Figure:
    """Bar chart of positive- vs negative-question accuracy per category (PNG).

    See :func:`mmrobust.report.plots.plot_mmr_accuracy`; categories use Table 2's abbreviations.
    """
    return plot_mmr_accuracy(
        metrics, path, label=label, dataset=dataset, abbreviations=ABBREVIATIONS
    )


def write_mmr_report(
    metrics: Mapping[str, Any],
    out_dir: str | Path,
    *,
    label: str = "model",
    dataset: str = "",
    figures: list[Figure] | None = None,
) -> dict[str, Path]:
    """Write ``mmr_table.md``, ``mmr_table.csv`` and ``mmr_accuracy.png`` into ``out_dir``.

    Args:
        metrics: the run's MMR ``metrics.json``.
        out_dir: folder to write into (created).
        label: the run's display label; dataset: its dataset's name (titles, captions).
        figures: when given, the accuracy plot's :class:`Figure` is appended to it.

    Returns:
        ``{"markdown": ..., "csv": ..., "plot": ...}`` paths.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = out / "mmr_table.md"
    write_text(md, f"## MMR: {label}\n\n{summary_markdown(label, metrics)}")
    csv = out / "mmr_table.csv"
    write_with(csv, table2({label: metrics}).to_csv)
    figure = plot_accuracy(metrics, out / "mmr_accuracy.png", label=label, dataset=dataset)
    if figures is not None:
        figures.append(figure)
    return {"markdown": md, "csv": csv, "plot": figure.path}


def summary_lines(metrics: Mapping[str, Any]) -> list[str]:
    """The ``mmr`` family's line of ``summary_text``: RA and MR with 95% CIs, the pair counts."""
    ci = metrics.get("ci") or {}
    return [
        f"RA {percent_sign(metrics.get('RA'))} (95% CI {percent_interval(ci.get('RA'))})  "
        f"MR {percent_sign(metrics.get('MR'))} (95% CI {percent_interval(ci.get('MR'))})  "
        f"pairs: UR {metrics.get('UR')}, UF {metrics.get('UF')}, NR {metrics.get('NR')}, "
        f"NF {metrics.get('NF')}"
    ]


def headline(metrics: Mapping[str, Any]) -> str:
    """``RA 50.00%  MR 25.00%``: a paired run's score (MMR, ``--task leading``)."""
    return f"RA {percent_sign(metrics.get('RA'))}  MR {percent_sign(metrics.get('MR'))}"


def markdown_section(groups: Sequence[RunGroup], out: Path, paths: ReportPaths) -> list[str]:
    """Write the MMR groups' Table 2 CSVs and each run's ``mmr/<label>/``; return Markdown."""
    md: list[str] = []
    for i, g in enumerate(groups):
        frame = table2(g.metrics())
        p = out / ("mmr_table2.csv" if i == 0 else f"mmr_table2_{safe_name(g.dataset)}.csv")
        write_with(p, frame.to_csv)
        paths.mmr_csv.append(p)
        md += [
            f"## Leading questions on {g.where} (MMR Table 2 layout)",
            "",
            to_markdown(frame),
            MMR_NOTE,
            "",
        ]
        for lab, r in g.runs.items():
            written = write_mmr_report(
                r.metrics,
                out / "mmr" / safe_name(lab),
                label=lab,
                dataset=g.dataset,
                figures=paths.figures,
            )
            paths.mmr += list(written.values())
            md += [f"### {lab} on {g.dataset}", "", summary_markdown(lab, r.metrics, table=False)]
    return md


def published_table2(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str], str]:
    """``frame`` (our runs, Table 2 shape) with MMR Table 2's rows, by Avg RA; row classes."""
    from mmrobust.report.published import load_published, table2_errata, table2_metrics

    published = table2(table2_metrics())
    import pandas as pd

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


def leaderboards(g: RunGroup, published: bool) -> list[Table]:
    """The Table 2 leaderboard of one MMR group (with the published rows when ``published``)."""
    from mmrobust.report.html import frame_to_table

    frame = table2(g.metrics())
    classes = ["run"] * len(frame)
    note = MMR_NOTE
    if published:
        frame, classes, extra = published_table2(frame)
        note += extra
    title = f"Leading questions on {g.where} (MMR Table 2 layout, %)"
    return [
        frame_to_table(frame, title, note=note, digits=2, row_classes=classes, group=g.benchmark)
    ]


def is_released_run(info: Mapping[str, Any]) -> bool:
    """Whether a run (its ``run.json``) was made on the released MMR benchmark (its data hash
    is :data:`RELEASED_SHA256`), so its leaderboard shows Table 2's published rows by default."""
    return str((info.get("dataset") or {}).get("data_hash", "")) == RELEASED_SHA256


__all__ = [
    "ABBREVIATIONS",
    "MMR_NOTE",
    "RELEASED_SHA256",
    "headline",
    "is_released_run",
    "leaderboards",
    "markdown_section",
    "plot_accuracy",
    "published_table2",
    "summary_lines",
    "summary_markdown",
    "table2",
    "to_markdown",
    "write_mmr_report",
]
