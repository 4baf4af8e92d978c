"""Helpers every report module shares: Markdown tables, the figure file format, effect headings.

One module below ``tables``, ``plots``, ``tasks``, ``tamper`` and ``mmr`` so none of them
imports another for a helper (the old ``plots -> tables -> tasks -> plots`` cycle).

Sizing of figures: a figure of ``W`` inches is shown at ``W x 100`` CSS pixels in the
HTML report (:data:`DISPLAY_DPI`) and written at twice that resolution
(:data:`RENDER_DPI`), so 10-point text reads as about 14 px on the page and stays
sharp on high-density screens. :class:`Figure` carries that display width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrobust.atomicfile import write_with
from mmrobust.report.units import MISSING
from mmrobust.schema import TABLE7_LABELS

if TYPE_CHECKING:  # pandas is imported by the code that builds frames, not here
    import pandas as pd

TABLE7_COLUMNS: tuple[tuple[str, str], ...] = TABLE7_LABELS
"""Our effect names -> the column headings of the paper's Table 7, in its order
(``mmrobust.schema``)."""

DISPLAY_DPI = 100
"""CSS pixels per figure inch in the page."""

RENDER_DPI = 200
"""PNG pixels per figure inch (2x the display size)."""

FONT_SIZE = 10
"""Base font size in points (about 14 CSS px at the display size)."""

PALETTE = ("#3559e0", "#e07b35", "#2a9d8f", "#c8102e", "#7b61c9", "#8a6d3b", "#d45d9b", "#5f6b7a")
"""Series colours (colour-blind-friendly enough for up to 8 runs; then they repeat)."""


@dataclass(frozen=True)
class Figure:
    """A written plot: its file, the caption to show under it and its display width in px."""

    path: Path
    caption: str
    width: int


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "font.size": FONT_SIZE,
            "axes.titlesize": FONT_SIZE + 1,
            "axes.labelsize": FONT_SIZE,
            "xtick.labelsize": FONT_SIZE - 1,
            "ytick.labelsize": FONT_SIZE - 1,
            "legend.fontsize": FONT_SIZE - 1,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


def _save(plt: Any, fig: Any, path: str | Path, caption: str) -> Figure:
    """Write ``path`` as PNG at :data:`RENDER_DPI`, close the figure, return the :class:`Figure`."""
    try:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_with(out, partial(fig.savefig, format="png", dpi=RENDER_DPI))
        width = round(fig.get_figwidth() * DISPLAY_DPI)
    finally:
        plt.close(fig)
    return Figure(path=out, caption=caption, width=width)


def _legend_below(fig: Any, ax: Any, n_items: int) -> None:
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(max(1, n_items), 4))


def _cell(v: Any, digits: int) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def to_markdown(frame: pd.DataFrame, *, digits: int = 1) -> str:
    """Render a frame as a GitHub Markdown table (floats to ``digits`` decimals, – if missing)."""
    if frame.empty:
        return "_(no rows)_\n"
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for rec in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v, digits) for v in rec) + " |")
    return "\n".join(lines) + "\n"


def safe_name(text: str) -> str:
    """A file-name-safe form of a label (``constant:A [x]`` -> ``constant_A__x_``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


__all__ = [
    "DISPLAY_DPI",
    "FONT_SIZE",
    "PALETTE",
    "RENDER_DPI",
    "TABLE7_COLUMNS",
    "Figure",
    "safe_name",
    "to_markdown",
]
