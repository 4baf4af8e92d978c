"""MMR report: a table shaped like the paper's Table 2 and a positive-vs-negative accuracy plot.

Input is the ``metrics.json`` dict of an MMR run
(:func:`mmrobust.metrics.mmr.mmr_metrics`). Table 2 of arXiv:2406.10638 has
one RA row and one MR row per model, with the twelve categories as columns
(abbreviated) and ``Avg`` = the value over all pairs (not the mean of the
columns; that mean is ``category_mean`` in ``metrics.json``). The plot is the
per-category view of the paper's Figure 5 (accuracy on positive vs negative
questions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

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
        a DataFrame indexed by ``(Method, Metric)``; values in percent (``None`` -> ``NaN``).
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
    frame = pd.DataFrame(rows).set_index(["Method", "Metric"])
    return frame.astype(float)


def _fmt(value: float) -> str:
    return "-" if pd.isna(value) else f"{value:.2f}"


def to_markdown(frame: pd.DataFrame) -> str:
    """GitHub Markdown of a :func:`table2` frame (``-`` for undefined values, 2 decimals)."""
    headers = ["Method", "Metric", *frame.columns]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for index, row in frame.iterrows():
        method, metric = str(index[0]), str(index[1])  # type: ignore[index]
        arrow = "↑" if metric == "RA" else "↓"
        cells = [method, f"{metric} {arrow}", *(_fmt(v) for v in row.tolist())]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def summary_markdown(label: str, metrics: Mapping[str, Any]) -> str:
    """Markdown block: Table 2 row pair, counts, accuracies, CIs, failure rates, defects."""
    ci = metrics.get("ci") or {}
    mean = metrics.get("category_mean") or {}
    parts = [
        f"## MMR: {label}\n",
        to_markdown(table2({label: metrics})),
        f"Pairs {metrics['pairs']}: UR {metrics['UR']}, UF {metrics['UF']}, NR {metrics['NR']}, "
        f"NF {metrics['NF']}. RA {_fmt(_num(metrics.get('RA')))} "
        f"(95% CI {_ci(ci.get('RA'))}), MR {_fmt(_num(metrics.get('MR')))} "
        f"(95% CI {_ci(ci.get('MR'))}).",
        f"Mean of the category values (not the paper's Avg): RA {_fmt(_num(mean.get('RA')))}, "
        f"MR {_fmt(_num(mean.get('MR')))}.",
        f"Accuracy on positive questions {_fmt(_num(metrics.get('positive_accuracy')))} %, "
        f"on negative (leading) questions {_fmt(_num(metrics.get('negative_accuracy')))} %.",
        f"Parse failures {100 * metrics.get('parse_fail_rate', 0.0):.2f} % and errors "
        f"{100 * metrics.get('error_rate', 0.0):.2f} % of questions (a failed answer counts as wrong).",
    ]
    defects: Sequence[str] = metrics.get("defects", [])
    if defects:
        parts.append("\nData defects:\n" + "\n".join(f"- {d}" for d in defects))
    return "\n\n".join(parts) + "\n"


def _num(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _ci(bounds: Sequence[float] | None) -> str:
    return "-" if not bounds else f"{bounds[0]:.2f}-{bounds[1]:.2f}"


def plot_accuracy(metrics: Mapping[str, Any], path: str | Path, *, title: str = "MMR") -> Path:
    """Bar chart of positive- vs negative-question accuracy per category (PNG, matplotlib Agg).

    Args:
        metrics: an MMR metrics dict.
        path: output PNG path (parent folders are created).
        title: figure title.

    Returns:
        the written path.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    categories = metrics.get("categories", {})
    names = [*categories, "Overall"]
    pos = [_num(c.get("positive_accuracy")) for c in categories.values()]
    neg = [_num(c.get("negative_accuracy")) for c in categories.values()]
    pos.append(_num(metrics.get("positive_accuracy")))
    neg.append(_num(metrics.get("negative_accuracy")))
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.8 * len(names) + 2), 4.0), dpi=100)
    try:
        ax.bar(x - 0.2, pos, 0.4, label="positive questions", color="#4C72B0")
        ax.bar(x + 0.2, neg, 0.4, label="negative (leading) questions", color="#DD8452")
        ax.set_xticks(x, [ABBREVIATIONS.get(n, n) for n in names], rotation=35, ha="right")
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(0, 100)
        ax.set_title(title)
        ax.legend(loc="upper right", fontsize="small")
        fig.tight_layout()
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, format="png")
    finally:
        plt.close(fig)
    return out


def write_mmr_report(
    metrics: Mapping[str, Any], out_dir: str | Path, *, label: str = "model"
) -> dict[str, Path]:
    """Write ``mmr_table.md``, ``mmr_table.csv`` and ``mmr_accuracy.png`` into ``out_dir``.

    Returns:
        ``{"markdown": ..., "csv": ..., "plot": ...}`` paths.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = out / "mmr_table.md"
    md.write_text(summary_markdown(label, metrics), encoding="utf-8")
    csv = out / "mmr_table.csv"
    table2({label: metrics}).round(2).to_csv(csv)
    plot = plot_accuracy(metrics, out / "mmr_accuracy.png", title=f"MMR: {label}")
    return {"markdown": md, "csv": csv, "plot": plot}


__all__ = [
    "ABBREVIATIONS",
    "plot_accuracy",
    "summary_markdown",
    "table2",
    "to_markdown",
    "write_mmr_report",
]
