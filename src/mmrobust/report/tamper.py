"""The ``tamper`` family's report: Table 7 leaderboards, per task x type F1, ablations.

Called through the family seam (:mod:`mmrobust.families.tamper`):

* :func:`markdown_section` writes ``table7.csv`` (all tamper groups; a ``Data`` column
  when several datasets), ``f1_per_type.png`` (``f1_per_type_<dataset>.png`` for
  further datasets), ``per_task_<label>.csv`` with ``heatmap_<label>.png``, and
  ``ablation_<factor>.csv`` when the runs cover several positions, durations or
  prompts (paper Tables 2, 4, 5);
* :func:`leaderboards` gives the HTML tables, with MVTamperBench Table 7's 45
  published models as grey reference rows when asked;
* :func:`headline`, :func:`compare_notes`, :func:`is_released_run`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from mmrobust.atomicfile import write_with
from mmrobust.metrics.chance import detection_chance, detection_counts
from mmrobust.metrics.tamper import tamper_metrics
from mmrobust.records import ScoredRecord
from mmrobust.report.common import safe_name, to_markdown
from mmrobust.report.html import Table, frame_to_table
from mmrobust.report.plots import plot_f1_per_type, plot_task_heatmap
from mmrobust.report.tables import (
    TABLE7_NOTE,
    ablation_table,
    per_task_table,
    table7,
    unbalanced_warning,
    with_chance_rows,
)
from mmrobust.report.units import pct_sign
from mmrobust.report.view import ReportPaths, RunGroup, RunView, tally_rows
from mmrobust.store import StoredRow

ABLATION_HEADINGS = {
    "position": "Table 2 (position)",
    "duration": "Table 4 (duration)",
    "prompt": "Table 5 (prompt)",
}
"""Ablation factor -> the paper table it reproduces."""


def _level_key(v: Any) -> str:
    return f"{v:g}s" if isinstance(v, float) else str(v)


def _level_names(run: RunView, factor: str) -> set[str]:
    """The levels of a sample-meta factor among a tamper run's tampered rows, counted by
    SQLite for a run folder (:func:`mmrobust.report.view.tally_rows`: no row is read)."""
    return {
        _level_key(v)
        for (ttype, v), *_ in tally_rows(run.rows, ("$.tamper_type", f"$.meta.{factor}"))
        if ttype != "original" and v is not None
    }


def _factor_levels(run: RunView, factor: str) -> dict[str, list[StoredRow]]:
    """A tamper run's tampered rows grouped by a sample-meta factor (``position``, ...)."""
    levels: dict[str, list[StoredRow]] = {}
    for row in run.rows:
        if row.sample.tamper_type == "original":
            continue
        v = row.sample.meta.get(factor)
        if v is not None:
            levels.setdefault(_level_key(v), []).append(row)
    return levels


def _factor_f1(run: RunView, levels: Mapping[str, list[StoredRow]]) -> dict[str, float]:
    """F1 (overall) of a tamper run on each level's tampered clips plus all its originals."""
    originals = [r.to_record() for r in run.rows if r.sample.tamper_type == "original"]
    return {
        k: tamper_metrics([*(r.to_record() for r in v), *originals], n_resamples=0)["f1"].get(
            "overall", 0.0
        )
        for k, v in sorted(levels.items())
    }


def ablations(runs: Sequence[RunView]) -> dict[str, dict[str, dict[str, float]]]:
    """Position / duration / prompt ablations across tamper runs (paper Tables 2, 4, 5).

    Returns:
        factor -> model -> {level -> F1 overall}; a factor appears only when some
        model has more than one level (F1 is computed only then).
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    tamper = [r for r in runs if r.family.tamper_clips and r.family.official_prompt]
    for factor in ("position", "duration_s"):
        seen: dict[str, set[str]] = {}
        for run in tamper:
            seen.setdefault(run.model, set()).update(_level_names(run, factor))
        if all(len(v) <= 1 for v in seen.values()):
            continue  # the usual case at scale: nothing to read
        table: dict[str, dict[str, float]] = {}
        for run in tamper:  # the rows of each level are read only for a real ablation
            table.setdefault(run.model, {}).update(_factor_f1(run, _factor_levels(run, factor)))
        out["duration" if factor == "duration_s" else factor] = table
    prompts: dict[str, dict[str, float]] = {}
    for run in tamper:
        prompts.setdefault(run.model, {})[run.prompt] = run.metrics.get("f1", {}).get(
            "overall", 0.0
        )
    if any(len(v) > 1 for v in prompts.values()):
        out["prompt"] = prompts
    return out


def markdown_section(groups: Sequence[RunGroup], out: Path, paths: ReportPaths) -> list[str]:
    """Write the tamper groups' tables and plots into ``out``; return their Markdown lines."""
    md: list[str] = []
    frames = []
    for g in groups:
        frame, _ = with_chance_rows(table7(g.metrics()), g.metrics())
        md += [
            f"## Tamper detection F1 on {g.where} (MVTamperBench Table 7 layout)",
            "",
            to_markdown(frame),
            TABLE7_NOTE,
            "",
        ]
        if len(groups) > 1:
            frame.insert(1, "Data", g.dataset)
        frames.append(frame)
    paths.table_csv = out / "table7.csv"
    table = pd.concat(frames, ignore_index=True)
    write_with(paths.table_csv, partial(table.to_csv, index=False))
    for i, g in enumerate(groups):
        name = "f1_per_type.png" if i == 0 else f"f1_per_type_{safe_name(g.dataset)}.png"
        paths.figures.append(plot_f1_per_type(g.metrics(), out / name, dataset=g.dataset))
        for lab, r in g.runs.items():
            frame = per_task_table(r.metrics)
            if frame.empty:
                continue
            p = out / f"per_task_{safe_name(lab)}.csv"
            write_with(p, partial(frame.to_csv, index=False))
            paths.per_task_csv.append(p)
            md += [f"### Per task x type F1: {lab} on {g.dataset}", "", to_markdown(frame)]
            paths.figures.append(
                plot_task_heatmap(
                    r.metrics, out / f"heatmap_{safe_name(lab)}.png", label=lab, dataset=g.dataset
                )
            )
        for factor, values in ablations(list(g.runs.values())).items():
            frame = ablation_table(values, factor)
            suffix = "" if i == 0 else f"_{safe_name(g.dataset)}"
            p = out / f"ablation_{factor}{suffix}.csv"
            write_with(p, partial(frame.to_csv, index=False))
            paths.ablation_csv.append(p)
            md += [
                f"## Ablation on {g.dataset}: {ABLATION_HEADINGS[factor]}, F1 overall (%)",
                "",
                to_markdown(frame),
            ]
    return md


def published_table7(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str], str]:
    """``frame`` (our runs) with MVTamperBench Table 7's rows, sorted by Overall; row classes."""
    from mmrobust.report.published import load_published, table7_metrics

    published = table7(table7_metrics())
    both = pd.concat([frame.assign(_src="run"), published.assign(_src="published")])
    both = both.sort_values("Overall", ascending=False, na_position="last", kind="stable")
    classes = both.pop("_src").tolist()
    both["n"] = both["n"].astype("Int64")
    src = load_published("mvtamperbench_table7")
    note = (
        f" Grey rows: {src.citation}, as published (F1 x 100), {src.source['protocol']} "
        "A run here is comparable with them only on that data with that protocol "
        "(mmrobust eval --official on the released benchmark)."
    )
    return both.reset_index(drop=True), classes, note


def leaderboards(g: RunGroup, published: bool) -> list[Table]:
    """The Table 7 leaderboard of one tamper group (with the published rows when
    ``published``), then each run's per task x type F1 when it covers several tasks."""
    frame = table7(g.metrics())
    classes = ["run"] * len(frame)
    note = TABLE7_NOTE
    if published:
        frame, classes, extra = published_table7(frame)
        note += extra
    frame, n_chance = with_chance_rows(frame, g.metrics())
    classes += ["reference"] * n_chance
    tables = [
        frame_to_table(
            frame,
            f"Tamper detection F1 (%) on {g.where} (MVTamperBench Table 7 layout)",
            note=note,
            digits=1,
            row_classes=classes,
            group=g.benchmark,
        )
    ]
    for lab, r in g.runs.items():
        per_task = per_task_table(r.metrics)
        if not per_task.empty and len(per_task) > 1:
            tables.append(frame_to_table(per_task, f"Per task x type F1 (%): {lab} on {g.dataset}"))
    return tables


def headline(metrics: Mapping[str, Any]) -> str:
    """``F1 66.7%``: a tamper run's Overall F1."""
    return f"F1 {pct_sign(metrics.get('f1', {}).get('overall'))}"


def compare_notes(records: Sequence[ScoredRecord]) -> list[str]:
    """What answering Yes to every compared clip and a fair coin score (macro F1 over the
    types, as ``eval`` prints it: :func:`mmrobust.metrics.chance.detection_chance`),
    and the imbalance warning when always-Yes is well above a balanced set's 66.7%."""
    counts, originals = detection_counts(r.tamper_type for r in records)
    guess = detection_chance(counts, originals)
    yes, coin = guess["always_yes"]["overall"], guess["coin_flip"]["overall"]
    if yes is None:
        return []
    return [
        f"answering Yes to every one of these clips scores detection F1 {pct_sign(yes)}, a "
        f"coin flip {pct_sign(coin)} ({originals} originals, {sum(counts.values())} tampered)",
        *unbalanced_warning(yes),
    ]


def is_released_run(info: Mapping[str, Any]) -> bool:
    """Whether a run (its ``run.json``) was made on the released MVTamperBench, so its
    leaderboard shows Table 7's published rows by default: its data came from one of the
    released hub datasets (``hf:Srikant86/MVTamperBench...``,
    :data:`mmrobust.datasets.hub.RELEASES`), by the hub id ``run.json`` records. A local
    copy of the release (or a set built with ``--layout mvtamperbench``) cannot be told
    from its files; its published rows stay one click away."""
    from mmrobust.datasets.hub import RELEASES

    data = info.get("dataset") or {}
    hub = data.get("hub") or {}
    repo = hub.get("repo_id") if isinstance(hub, Mapping) else None
    if not repo:
        source = str(data.get("source") or "")
        repo = source.removeprefix("hf:").split("@")[0] if source.startswith("hf:") else ""
    return repo in RELEASES.values()


__all__ = [
    "ABLATION_HEADINGS",
    "ablations",
    "compare_notes",
    "headline",
    "is_released_run",
    "leaderboards",
    "markdown_section",
    "published_table7",
]
