"""Report of the ``consistency`` family: leaderboard, per-effect table, severity curves, card.

Input is the ``metrics.json`` of a consistency run
(:func:`mmrobust.metrics.consistency.consistency_metrics`); every number shown is read from
it, so a number on the card is the number in the table beside it.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrobust.atomicfile import atomic_write
from mmrobust.report.common import PALETTE, Figure, _pyplot, _save, safe_name
from mmrobust.report.units import pct, pct_interval, pct_sign
from mmrobust.report.view import ReportPaths, RunGroup

if TYPE_CHECKING:
    from mmrobust.report.html import Table
    from mmrobust.report.view import RunView

COLUMNS = (
    ("accuracy_clean", "acc. clean"),
    ("accuracy_perturbed", "acc. perturbed"),
    ("accuracy_drop", "drop"),
    ("flip_rate", "flip rate"),
    ("resist_rate", "resist rate"),
    ("attack_success_rate", "typographic attack"),
)
"""Leaderboard columns (rates in percent)."""

NOTE = (
    "In percent. Drop = accuracy clean minus perturbed over the pairs (95% CI: bootstrap over "
    "sources; p: McNemar exact). Flip rate: answer changed. Resist rate: right on clean and "
    "on perturbed, of those right on clean. Typographic attack: the answer moved to the "
    "option written on the image. A failed answer counts as wrong."
)


def summary_lines(metrics: Mapping[str, Any]) -> list[str]:
    """What ``eval`` prints for a consistency run."""
    p = (metrics.get("mcnemar") or {}).get("p_value")
    lines = [
        f"Pairs {metrics.get('pairs')}: accuracy clean {pct_sign(metrics.get('accuracy_clean'))}, "
        f"perturbed {pct_sign(metrics.get('accuracy_perturbed'))}, drop "
        f"{pct_sign(metrics.get('accuracy_drop'))} (95% CI "
        f"{pct_interval(metrics.get('accuracy_drop_ci'))}, McNemar p "
        f"{'–' if p is None else f'{p:.3g}'})",
        f"Flip rate {pct_sign(metrics.get('flip_rate'))}, resist rate "
        f"{pct_sign(metrics.get('resist_rate'))}"
        + (
            f", typographic attack success {pct_sign(metrics.get('attack_success_rate'))}"
            if metrics.get("attack_pairs")
            else ""
        ),
    ]
    return lines


def headline(metrics: Mapping[str, Any]) -> str:
    """``flip 12.5%``."""
    return f"flip {pct_sign(metrics.get('flip_rate'))}"


def effect_rows(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per effect then ``all`` (fractions, as in ``metrics.json``)."""
    rows = [{"effect": e, **m} for e, m in (metrics.get("per_effect") or {}).items()]
    return [*rows, {"effect": "all", **metrics}]


def _cells(m: Mapping[str, Any]) -> list[str]:
    return [pct(m.get(k)) for k, _ in COLUMNS]


def _lead(m: Mapping[str, Any]) -> list[str]:
    """Leaderboard cells: the rates, the drop's CI and McNemar's p."""
    p = (m.get("mcnemar") or {}).get("p_value")
    return [*_cells(m), pct_interval(m.get("accuracy_drop_ci")), "–" if p is None else f"{p:.3g}"]


def plot_severity(runs: Mapping[str, Mapping[str, Any]], path: Path, title: str) -> Figure:
    """Accuracy on the perturbed images against severity: one line per (run, effect)."""
    plt = _pyplot()
    effects = sorted({e for m in runs.values() for e in (m.get("per_effect") or {})})
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 3.4), squeeze=False)
    for ax, (label, m) in zip(axes[0], runs.items(), strict=True):
        for i, effect in enumerate(effects):
            sev = ((m.get("per_effect") or {}).get(effect) or {}).get("per_severity") or {}
            xs = [0] + [int(s) for s in sev]
            ys = [100 * float(m.get("accuracy_clean") or 0)] + [
                100 * float(v.get("accuracy_perturbed") or 0) for v in sev.values()
            ]
            style = "-" if i < len(PALETTE) else "--"
            ax.plot(xs, ys, style, marker="o", ms=3, color=PALETTE[i % len(PALETTE)], label=effect)
        ax.set_title(label)
        ax.set_xlabel("severity (0: clean)")
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(0, 100)
        ax.set_xticks(range(0, 6))
    axes[0][-1].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return _save(plt, fig, path, title)


def _write_csv(path: Path, runs: Mapping[str, Mapping[str, Any]]) -> None:
    with atomic_write(path) as f:
        w = csv.writer(f)
        w.writerow(["model", "effect", "severity", "pairs", *(k for k, _ in COLUMNS)])
        for label, m in runs.items():
            for row in effect_rows(m):
                w.writerow([label, row["effect"], "all", row.get("pairs"), *_cells(row)])
                for sev, s in (row.get("per_severity") or {}).items():
                    w.writerow([label, row["effect"], sev, s.get("pairs"), *_cells(s)])


def markdown_section(groups: Sequence[RunGroup], out: Path, paths: ReportPaths) -> list[str]:
    """Per dataset: ``consistency_<dataset>.csv``, the leaderboard, per-effect tables and the
    severity curves (``consistency_<dataset>.png``); returns the Markdown lines."""
    md: list[str] = []
    for g in groups:
        runs = g.metrics()
        name = safe_name(g.dataset)
        table = out / f"consistency_{name}.csv"
        _write_csv(table, runs)
        paths.files.append(table)
        heads = ["model", "pairs", *(h for _, h in COLUMNS), "drop 95% CI", "McNemar p"]
        md += [
            f"## Answer consistency under perturbation on {g.where}",
            "",
            "| " + " | ".join(heads) + " |",
            "|" + "---|" * len(heads),
        ]
        md += [
            f"| {lab} | {m.get('pairs')} | " + " | ".join(_lead(m)) + " |"
            for lab, m in runs.items()
        ]
        md += ["", NOTE, ""]
        for lab, m in runs.items():
            md += [
                f"### {lab}: per effect",
                "",
                "| effect | pairs | " + " | ".join(h for _, h in COLUMNS) + " |",
            ]
            md += ["|" + "---|" * (len(COLUMNS) + 2)]
            md += [
                f"| {r['effect']} | {r.get('pairs')} | " + " | ".join(_cells(r)) + " |"
                for r in effect_rows(m)
            ]
            md += [""]
        fig = plot_severity(
            runs, out / f"consistency_{name}.png", f"Severity curves on {g.dataset}"
        )
        paths.figures.append(fig)
        paths.plots.append(fig.path)
        md += [f"![severity curves]({fig.path.name})", ""]
    return md


def leaderboards(g: RunGroup, published: bool) -> list[Table]:
    """The leaderboard and each run's per-effect table."""
    from mmrobust.report.html import Table

    runs = g.metrics()
    heads = ["model", "pairs", *(h for _, h in COLUMNS), "drop 95% CI", "McNemar p"]
    tables = [
        Table(
            title=f"Answer consistency under perturbation on {g.where} (%)",
            columns=heads,
            rows=[[lab, str(m.get("pairs")), *_lead(m)] for lab, m in runs.items()],
            note=NOTE,
            group=g.benchmark,
        )
    ]
    for lab, m in runs.items():
        tables.append(
            Table(
                title=f"{lab}: per effect (%)",
                columns=["effect", "pairs", *(h for _, h in COLUMNS)],
                rows=[[r["effect"], str(r.get("pairs")), *_cells(r)] for r in effect_rows(m)],
                group=g.benchmark,
            )
        )
    return tables


def _percent(value: Any) -> float | None:
    return None if value is None else 100.0 * float(value)


def card_entries(run: RunView) -> list[dict[str, Any]]:
    """The card rows of one run: every effect, then ``all`` (percent)."""
    return [
        {
            "effect": row["effect"],
            "accuracy_drop": _percent(row.get("accuracy_drop")),
            "flip_rate": _percent(row.get("flip_rate")),
            "resist_rate": _percent(row.get("resist_rate")),
            "attack_success_rate": _percent(row.get("attack_success_rate")),
            "pairs": row.get("pairs"),
        }
        for row in effect_rows(run.metrics)
    ]


def card_chance(run: RunView) -> dict[str, float | None]:
    """Floors beside the card's rows (percent): a uniform guess per image, a fixed answer
    (:func:`mmrobust.metrics.chance.consistency_chance`, stored as ``metrics["chance"]``)."""
    chance = run.metrics.get("chance") or {}
    rnd, const = chance.get("random") or {}, chance.get("constant") or {}
    return {
        "random: flip rate": _percent(rnd.get("flip_rate")),
        "random: resist rate": _percent(rnd.get("resist_rate")),
        "random: attack success": _percent(rnd.get("attack_success_rate")),
        "constant: flip rate": _percent(const.get("flip_rate")),
        "constant: resist rate": _percent(const.get("resist_rate")),
    }


__all__ = [
    "card_chance",
    "card_entries",
    "effect_rows",
    "headline",
    "leaderboards",
    "markdown_section",
    "plot_severity",
    "summary_lines",
]
