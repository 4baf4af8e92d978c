"""PNG plots (matplotlib, Agg backend): F1 per tamper type with 95% CIs, task x type heatmap,
MMR accuracy on positive vs negative questions.

Sizing: a figure of ``W`` inches is shown at ``W x 100`` CSS pixels in the
HTML report (:data:`DISPLAY_DPI`) and written at twice that resolution
(:data:`RENDER_DPI`), so 10-point text reads as about 14 px on the page and
stays sharp on high-density screens. :class:`Figure` carries that display
width; the page sets it on the ``<img>``. Legends sit outside the axes, below
the plot, so they never cover data. Values are percentages
(:mod:`mmrobust.report.units`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mmrobust.report.common import (
    DISPLAY_DPI,
    FONT_SIZE,
    PALETTE,
    RENDER_DPI,
    TABLE7_COLUMNS,
    Figure,
    _legend_below,
    _pyplot,
    _save,
    safe_name,
)


def _mark_empty_bars(ax: Any, xs: Any, values: Any, half: float, colour: str) -> None:
    """Tell a bar of 0 (a flat mark and "0") from a missing one ("n/a"), both invisible as bars."""
    for p, v in zip(xs, values, strict=True):
        if np.isnan(v):
            ax.text(p, 1.5, "n/a", ha="center", va="bottom", rotation=90, fontsize=7,
                    color="#667085")  # fmt: skip
        elif v == 0:
            ax.plot([p - half, p + half], [0.4, 0.4], color=colour, linewidth=2.5,
                    solid_capstyle="butt")  # fmt: skip
            ax.text(p, 1.5, "0", ha="center", va="bottom", fontsize=7, color=colour)


def _always_yes(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
    """Always-Yes F1 per type and ``overall`` (fractions) of the first run with clip counts."""
    from mmrobust.metrics.chance import detection_chance_of_metrics

    for m in runs.values():
        levels: dict[str, float | None] = detection_chance_of_metrics(m)["always_yes"]
        if levels.get("overall") is not None:
            return levels
    return {}


def plot_f1_per_type(
    runs: Mapping[str, Mapping[str, Any]], path: str | Path, *, dataset: str = ""
) -> Figure:
    """Grouped bars: F1 (%) per tamper type (Table 7 order, then Overall) for each run.

    Error bars are the bootstrap 95% CIs of ``metrics.json`` (``f1_ci95``). A type
    a run did not score shows ``n/a`` instead of a bar; an F1 of 0 shows a flat
    mark and ``0`` so it cannot be taken for a missing bar. A dashed mark over each type
    and Overall gives the F1 of always answering "Yes" on the same clips
    (:func:`mmrobust.metrics.chance.detection_chance_of_metrics`: 66.7 on a type with as
    many clips as there are originals, more when originals are fewer).
    """
    plt = _pyplot()
    types = [(k, h) for k, h in TABLE7_COLUMNS if any(k in m.get("f1", {}) for m in runs.values())]
    extra = [
        t
        for m in runs.values()
        for t in m.get("f1", {})
        if t != "overall" and t not in dict(TABLE7_COLUMNS)
    ]
    types += [(t, t) for t in dict.fromkeys(extra)]
    types.append(("overall", "Overall"))
    x = np.arange(len(types))
    n = max(1, len(runs))
    width = 0.8 / n
    fig_w = min(12.0, max(6.4, 0.28 * n * len(types) + 1.6))
    fig, ax = plt.subplots(figsize=(fig_w, 4.2), layout="constrained")
    try:
        for i, (label, m) in enumerate(runs.items()):
            colour = PALETTE[i % len(PALETTE)]
            pos = x + i * width - 0.4 + width / 2
            f1 = m.get("f1", {})
            ci = m.get("f1_ci95", {})
            vals = np.array([np.nan if f1.get(k) is None else 100 * f1[k] for k, _ in types])
            lo = [100 * ci[k][0] if ci.get(k) else np.nan for k, _ in types]
            hi = [100 * ci[k][1] if ci.get(k) else np.nan for k, _ in types]
            err = np.array([np.maximum(vals - lo, 0), np.maximum(np.array(hi) - vals, 0)])
            ax.bar(pos, vals, width * 0.92, label=label, color=colour)
            ax.errorbar(
                pos, vals, yerr=np.nan_to_num(err), fmt="none", ecolor="#1d2330", elinewidth=0.9,
                capsize=2,
            )  # fmt: skip
            _mark_empty_bars(ax, pos, vals, width * 0.46, colour)
        yes = _always_yes(runs)
        marks = [(xi, 100 * v) for xi, (k, _) in zip(x, types, strict=True)
                 if (v := yes.get(k)) is not None]  # fmt: skip
        for j, (xi, level) in enumerate(marks):
            ax.hlines(level, xi - 0.45, xi + 0.45, color="#667085", linestyle="--", linewidth=1,
                      label='always "Yes" (chance)' if j == 0 else None)  # fmt: skip
        ax.set_xticks(x, [h for _, h in types])
        ax.set_ylim(0, 105)
        ax.set_ylabel("F1 (%), tampered = positive")
        ax.set_title(f"F1 per tamper type{f' on {dataset}' if dataset else ''} (95% CI bars)")
        _legend_below(fig, ax, len(runs) + 1)
    except BaseException:
        plt.close(fig)
        raise
    caption = (
        f"F1 per tamper type{f' on {dataset}' if dataset else ''}, with bootstrap 95% CIs: "
        + ", ".join(runs)
    )
    return _save(plt, fig, path, caption)


def plot_task_heatmap(
    metrics: Mapping[str, Any], path: str | Path, *, label: str = "", dataset: str = ""
) -> Figure:
    """Heatmap of F1 (%) per task (rows) x tamper type (columns) of one run (paper Figure 16)."""
    plt = _pyplot()
    per_task = metrics.get("per_task", {})
    tasks = list(per_task) or ["(no task)"]
    types = [(k, h) for k, h in TABLE7_COLUMNS if any(k in f for f in per_task.values())]
    types.append(("overall", "Overall"))
    grid = np.array(
        [
            [
                np.nan if per_task.get(t, {}).get(k) is None else 100 * per_task[t][k]
                for k, _ in types
            ]
            for t in tasks
        ],
        dtype=float,
    )
    # fixed margins (no layout engine: it redraws the 100+ cell labels several times)
    left = 0.3 + 0.075 * max(len(t) for t in tasks)
    width = max(6.4, left + 0.85 * len(types) + 1.4)
    height = 0.3 * len(tasks) + 1.3
    fig, ax = plt.subplots(figsize=(width, height))
    fig.subplots_adjust(
        left=left / width, right=1 - 1.3 / width, bottom=0.55 / height, top=1 - 0.5 / height
    )
    try:
        im = ax.imshow(grid, vmin=0, vmax=100, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(types)), [h for _, h in types])
        ax.set_yticks(range(len(tasks)), tasks)
        for (r, c), v in np.ndenumerate(grid):
            text = "n/a" if np.isnan(v) else f"{v:.1f}"
            ax.text(c, r, text, ha="center", va="center", fontsize=8,
                    color="white" if np.isnan(v) or v < 60 else "black")  # fmt: skip
        cax = fig.add_axes((1 - 1.1 / width, 0.55 / height, 0.15 / width, 1 - 1.05 / height))
        fig.colorbar(im, cax=cax, label="F1 (%)")
        where = f" on {dataset}" if dataset else ""
        ax.set_title(f"F1 per task x tamper type: {label}{where}" if label else "F1 per task")
    except BaseException:
        plt.close(fig)
        raise
    caption = f"F1 per task and tamper type (paper Figure 16 layout): {label}" + (
        f" on {dataset}" if dataset else ""
    )
    return _save(plt, fig, path, caption)


def mmr_category_labels(
    metrics: Mapping[str, Any], abbreviations: Mapping[str, str] | None = None
) -> list[str]:
    """The x tick labels of :func:`plot_mmr_accuracy`: each category (abbreviated), then
    ``Overall``, each with its pair count (``"Char (n=12)"``); a category without a
    ``pairs`` count gets none."""
    short = dict(abbreviations or {})
    categories: Mapping[str, Mapping[str, Any]] = metrics.get("categories", {})
    items = [(short.get(n, n), c.get("pairs")) for n, c in categories.items()]
    items.append(("Overall", metrics.get("pairs")))
    return [name + ("" if k is None else f" (n={int(k)})") for name, k in items]


def plot_mmr_accuracy(
    metrics: Mapping[str, Any],
    path: str | Path,
    *,
    label: str = "",
    dataset: str = "",
    abbreviations: Mapping[str, str] | None = None,
) -> Figure:
    """Bars of accuracy (%) on positive vs negative (leading) questions per MMR category.

    The per-category view of MMR Figure 5; the last group is over all pairs. Each
    category's tick label carries its pair count (``(n=12)``: ``pairs`` of the category),
    and the title and caption the run's (``24 pairs``), so a bar of 100 over 2 pairs
    is not read as one over 60.
    """
    plt = _pyplot()
    short = dict(abbreviations or {})
    categories: Mapping[str, Mapping[str, Any]] = metrics.get("categories", {})
    names = [*categories, "Overall"]

    def num(v: Any) -> float:
        return float("nan") if v is None else float(v)

    pos = [num(c.get("positive_accuracy")) for c in categories.values()]
    neg = [num(c.get("negative_accuracy")) for c in categories.values()]
    pos.append(num(metrics.get("positive_accuracy")))
    neg.append(num(metrics.get("negative_accuracy")))
    ticks = mmr_category_labels(metrics, short)
    n_pairs = metrics.get("pairs")
    total = "" if n_pairs is None else f" ({int(n_pairs)} pairs)"
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(6.4, 0.62 * len(names) + 1.6), 4.4), layout="constrained")
    try:
        for offset, vals, name, colour in (
            (-0.2, pos, "positive questions", PALETTE[0]),
            (0.2, neg, "negative (leading) questions", PALETTE[1]),
        ):
            ax.bar(x + offset, vals, 0.38, label=name, color=colour)
            _mark_empty_bars(ax, x + offset, vals, 0.17, colour)
        ax.set_xticks(x, ticks, rotation=35, ha="right", rotation_mode="anchor")
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(0, 105)
        where = f" on {dataset}" if dataset else ""
        ax.set_title(
            f"MMR accuracy per category: {label}{where}{total}" if label else f"MMR accuracy{total}"
        )
        _legend_below(fig, ax, 2)
    except BaseException:
        plt.close(fig)
        raise
    caption = (
        f"MMR accuracy on positive vs negative (leading) questions: {label}"
        + (f" on {dataset}" if dataset else "")
        + ("" if n_pairs is None else f", {int(n_pairs)} pairs (n under a category: its pairs)")
    )
    return _save(plt, fig, path, caption)


__all__ = [
    "DISPLAY_DPI",
    "FONT_SIZE",
    "PALETTE",
    "RENDER_DPI",
    "Figure",
    "mmr_category_labels",
    "plot_f1_per_type",
    "plot_mmr_accuracy",
    "plot_task_heatmap",
    "safe_name",
]
