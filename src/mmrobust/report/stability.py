"""The sampling-stability line of a ``--repeats`` run: console summary, card and report.

One formatter over ``metrics.json``'s ``stability`` block
(:func:`mmrobust.metrics.stability.sampling_stability`), so the three places print the
same numbers; percentages as everywhere (:mod:`mmrobust.report.units`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmrobust.report.units import pct_interval, pct_sign

LABELS = (
    ("agreement_rate", "agreement"),
    ("majority_accuracy", "majority-vote accuracy"),
    ("mean_accuracy", "mean accuracy"),
)
"""Each figure of the block and the words it is shown with, in order."""


def stability_block(metrics: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``stability`` block of a run's metrics, or ``None`` (a run without repeats)."""
    block = metrics.get("stability")
    return block if isinstance(block, Mapping) and block.get("repeats", 1) > 1 else None


def stability_line(metrics: Mapping[str, Any]) -> str | None:
    """``sampling stability (5 asks): agreement 62.5% (95% CI 50.0–75.0), ...``, or
    ``None`` for a run without repeats."""
    block = stability_block(metrics)
    if block is None:
        return None
    parts = [
        f"{words} {pct_sign(block.get(key))} (95% CI {pct_interval(block.get(f'{key}_ci95'))})"
        for key, words in LABELS
    ]
    return f"sampling stability ({block['repeats']} asks): " + ", ".join(parts)


def stability_cells(metrics: Mapping[str, Any]) -> dict[str, str]:
    """The block as table cells: ``asks`` and one ``"62.5% (50.0–75.0)"`` per figure;
    empty for a run without repeats."""
    block = stability_block(metrics)
    if block is None:
        return {}
    cells = {"asks": str(block["repeats"])}
    for key, words in LABELS:
        cells[words] = f"{pct_sign(block.get(key))} ({pct_interval(block.get(f'{key}_ci95'))})"
    return cells


__all__ = ["LABELS", "stability_block", "stability_cells", "stability_line"]
