"""The sampling-stability line of a ``--repeats`` run: console summary, card and report.

One formatter over ``metrics.json``'s ``stability`` block
(:func:`mmrobust.metrics.stability.sampling_stability`), so the three places print the
same numbers; percentages as everywhere (:mod:`mmrobust.report.units`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmrobust.report.units import pct_interval, pct_sign, rounded_pct

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


def stability_text(metrics: Mapping[str, Any]) -> str | None:
    """``5 asks: agreement 62.5% (95% CI 50.0–75.0), ...``, or ``None`` for a run without
    repeats (the report's metadata line)."""
    block = stability_block(metrics)
    if block is None:
        return None
    parts = [
        f"{words} {pct_sign(block.get(key))} (95% CI {pct_interval(block.get(f'{key}_ci95'))})"
        for key, words in LABELS
    ]
    return f"{block['repeats']} asks: " + ", ".join(parts)


def stability_line(metrics: Mapping[str, Any]) -> str | None:
    """``sampling stability (5 asks): agreement 62.5% (95% CI 50.0–75.0), ...``, or
    ``None`` for a run without repeats (console summary, card)."""
    text = stability_text(metrics)
    if text is None:
        return None
    asks, rest = text.split(": ", 1)
    return f"sampling stability ({asks}): {rest}"


def stability_entry(metrics: Mapping[str, Any]) -> dict[str, Any] | None:
    """The block as a card row, in percent (``units.rounded_pct``, as the line's figures):
    ``repeats``, ``n_samples``, each of :data:`LABELS`' keys and its ``_ci95``; ``None``
    for a run without repeats."""
    block = stability_block(metrics)
    if block is None:
        return None
    entry: dict[str, Any] = {"repeats": block["repeats"], "n_samples": block.get("n_samples")}
    for key, _ in LABELS:
        bounds = block.get(f"{key}_ci95")
        entry[key] = rounded_pct(block.get(key))
        entry[f"{key}_ci95"] = [rounded_pct(b) for b in bounds] if bounds else None
    return entry


__all__ = [
    "LABELS",
    "stability_block",
    "stability_entry",
    "stability_line",
    "stability_text",
]
