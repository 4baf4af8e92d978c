"""PNG plots (matplotlib, Agg backend): F1 per tamper type per model, task x type heatmap."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mmrobust.report.tables import TABLE7_COLUMNS


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: str | Path) -> Path:
    """Lay out, write ``path`` as PNG and close the figure."""
    try:
        fig.tight_layout()
        out = Path(path)
        fig.savefig(out, format="png")
    finally:
        plt.close(fig)
    return out


def plot_f1_per_type(runs: Mapping[str, Mapping[str, Any]], path: str | Path) -> Path:
    """Grouped bars: F1 per tamper type (Table 7 order, then Overall) for each run.

    A dashed line marks 2/3, the F1 of always answering "Yes" on balanced data.
    """
    plt = _pyplot()
    types = [(k, h) for k, h in TABLE7_COLUMNS if any(k in m.get("f1", {}) for m in runs.values())]
    types.append(("overall", "Overall"))
    x = np.arange(len(types))
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(types)) + 3, 4), dpi=100)
    try:
        for i, (label, m) in enumerate(runs.items()):
            raw = [m.get("f1", {}).get(k) for k, _ in types]
            vals = [np.nan if v is None else float(v) for v in raw]  # unscored type: no bar
            ax.bar(x + i * width - 0.4 + width / 2, vals, width, label=label)
        ax.axhline(2 / 3, color="grey", linestyle="--", linewidth=1, label='always "Yes" (2/3)')
        ax.set_xticks(x, [h for _, h in types])
        ax.set_ylim(0, 1)
        ax.set_ylabel("F1 (positive = tampered)")
        ax.set_title("MVTamperBench F1 per tamper type")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    except BaseException:
        plt.close(fig)
        raise
    return _save(plt, fig, path)


def plot_task_heatmap(metrics: Mapping[str, Any], path: str | Path, *, title: str = "") -> Path:
    """Heatmap of F1 per task (rows) x tamper type (columns) of one run."""
    plt = _pyplot()
    per_task = metrics.get("per_task", {})
    tasks = list(per_task) or ["(no task)"]
    types = [(k, h) for k, h in TABLE7_COLUMNS if any(k in f for f in per_task.values())]
    types = types or [("overall", "Overall")]
    grid = np.array(
        [[per_task.get(t, {}).get(k, np.nan) for k, _ in types] for t in tasks], dtype=float
    )
    fig, ax = plt.subplots(figsize=(1.2 * len(types) + 3, 0.35 * len(tasks) + 1.5), dpi=100)
    try:
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(types)), [h for _, h in types])
        ax.set_yticks(range(len(tasks)), tasks)
        for (r, c), v in np.ndenumerate(grid):
            if not np.isnan(v):
                ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=7, color="white")
        fig.colorbar(im, ax=ax, label="F1")
        ax.set_title(title or "F1 per task x tamper type")
    except BaseException:
        plt.close(fig)
        raise
    return _save(plt, fig, path)


__all__ = ["plot_f1_per_type", "plot_task_heatmap"]
