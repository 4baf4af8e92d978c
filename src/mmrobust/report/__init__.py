"""Reports over run folders: tables (Markdown, CSV), plots (PNG), ablations, paired comparison.

Library entry points (the HTML report builds on these):

* :func:`load_run` reads one run folder (``run.json``, ``metrics.json`` and
  the stored rows) into a :class:`RunData`;
* :func:`build_report` writes the tables and plots of several runs and
  returns their paths (:class:`ReportPaths`);
* :func:`compare_runs` pairs two runs on their common samples (McNemar exact).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mmrobust.datasets.schema import Sample
from mmrobust.metrics.stats import McNemarResult, mcnemar_exact
from mmrobust.records import ScoredRecord
from mmrobust.report.plots import Figure
from mmrobust.store import ResultStore, StoredRow


@dataclass
class RunData:
    """One run folder, loaded.

    Attributes:
        run_dir: the folder.
        info: ``run.json``.
        metrics: ``metrics.json`` (empty if missing).
        rows: the stored rows of the run's configuration key.
    """

    run_dir: Path
    info: dict[str, Any]
    metrics: dict[str, Any]
    rows: list[StoredRow]

    @property
    def records(self) -> list[ScoredRecord]:
        """The rows as metric inputs."""
        return [r.to_record() for r in self.rows]

    @property
    def benchmark(self) -> str:
        """``tamper``, ``mmr`` or ``generic``."""
        return str(
            self.metrics.get("benchmark")
            or self.info.get("dataset", {}).get("benchmark", "generic")
        )

    @property
    def model(self) -> str:
        """The model spec of the run."""
        return str(self.info.get("config", {}).get("model", self.run_dir.name))

    @property
    def prompt(self) -> str:
        """The prompt template of the run (``default`` when chosen by benchmark)."""
        return str(self.info.get("run", {}).get("prompt", {}).get("template") or "default")

    @property
    def dataset(self) -> str:
        """The dataset's name (``run.json``)."""
        return str(self.info.get("dataset", {}).get("name", "?"))

    @property
    def dataset_key(self) -> tuple[str, str]:
        """``(name, data sha256)``: runs with equal keys were made on the same data."""
        ds = self.info.get("dataset", {})
        return str(ds.get("name", "?")), str(ds.get("data_hash", ""))

    @property
    def text_only(self) -> bool:
        """Whether the run sent no media (``--text-only``)."""
        run = self.metrics.get("run") or self.info.get("run", {})
        return bool(run.get("text_only") or self.info.get("config", {}).get("text_only"))


@dataclass
class ReportPaths:
    """Files written by :func:`build_report` (``None`` / empty when not applicable)."""

    markdown: Path
    table_csv: Path | None = None
    per_task_csv: list[Path] = field(default_factory=list)
    ablation_csv: list[Path] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    mmr: list[Path] = field(default_factory=list)
    mmr_csv: list[Path] = field(default_factory=list)
    task_csv: list[Path] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)


def load_run(run_dir: str | Path, *, samples: dict[str, Sample] | None = None) -> RunData:
    """Read a run folder written by ``mmrobust eval``.

    ``samples`` shares parsed samples between runs of one dataset (see ``ResultStore.rows``).

    Raises:
        FileNotFoundError: no ``run.json`` or no ``results.sqlite``.
        ValueError: unreadable ``run.json`` or results database.
    """
    from mmrobust.run.folder import read_run_info

    d = Path(run_dir)
    run = read_run_info(d)  # the typed run.json (mmrobust.run.folder.RunInfo)
    mpath = d / "metrics.json"
    metrics = json.loads(mpath.read_text(encoding="utf-8")) if mpath.is_file() else {}
    with ResultStore(d, readonly=True) as store:
        rows = store.rows(run.key, store.selection(run.key), samples=samples)  # as eval scored
    return RunData(d, run.as_dict(), metrics, rows)


def run_labels(runs: Sequence[RunData]) -> list[str]:
    """Display labels: the model spec, made unique within a leaderboard (a dataset and a
    benchmark: the ``--task`` runs of one model on one dataset keep the plain spec) by the run
    folder name, with `` (text only)`` for runs that sent no media."""
    labels = [r.model + (" (text only)" if r.text_only else "") for r in runs]
    seen: dict[tuple[tuple[str, str], str, str], int] = {}
    for r, lab in zip(runs, labels, strict=True):
        key = (r.dataset_key, r.benchmark, lab)
        seen[key] = seen.get(key, 0) + 1
    return [
        f"{lab} [{r.run_dir.name}]" if seen[(r.dataset_key, r.benchmark, lab)] > 1 else lab
        for r, lab in zip(runs, labels, strict=True)
    ]


def dataset_names(runs: Sequence[RunData]) -> dict[tuple[str, str], str]:
    """Dataset key -> display name: the name, plus the hash prefix when two datasets share it."""
    keys = list(dict.fromkeys(r.dataset_key for r in runs))
    names = [k[0] for k in keys]
    return {k: f"{k[0]} [{k[1][:12]}]" if names.count(k[0]) > 1 and k[1] else k[0] for k in keys}


@dataclass
class RunGroup:
    """Runs of one benchmark on one dataset: one leaderboard.

    Attributes:
        benchmark: ``tamper``, ``mmr`` or ``generic``.
        dataset: display name of the dataset.
        data_hash: its sha256 (empty when unknown).
        runs: label -> run, in the order given.
    """

    benchmark: str
    dataset: str
    data_hash: str
    runs: dict[str, RunData]

    @property
    def where(self) -> str:
        """``tamper-set (data sha256 0123456789ab)``."""
        return (
            f"{self.dataset} (data sha256 {self.data_hash[:12]})"
            if self.data_hash
            else self.dataset
        )


def group_runs(runs: Sequence[RunData], labels: Sequence[str]) -> list[RunGroup]:
    """One group per (benchmark, dataset): tamper detection, then the tasks type, when and
    leading (``--task``), then MMR, then the rest."""
    names = dataset_names(runs)
    groups: dict[tuple[str, tuple[str, str]], RunGroup] = {}
    for r, lab in zip(runs, labels, strict=True):
        key = (r.benchmark, r.dataset_key)
        if key not in groups:
            groups[key] = RunGroup(r.benchmark, names[r.dataset_key], r.dataset_key[1], {})
        groups[key].runs[lab] = r
    order = {"tamper": 0, "tamper-type": 1, "tamper-when": 2, "tamper-leading": 3, "mmr": 4}
    return sorted(groups.values(), key=lambda g: order.get(g.benchmark, 5))


def _factor_levels(run: RunData, factor: str) -> dict[str, list[StoredRow]]:
    """A tamper run's tampered rows grouped by a sample-meta factor (``position``, ...)."""
    levels: dict[str, list[StoredRow]] = {}
    for row in run.rows:
        if row.sample.tamper_type == "original":
            continue
        v = row.sample.meta.get(factor)
        if v is not None:
            key = f"{v:g}s" if isinstance(v, float) else str(v)
            levels.setdefault(key, []).append(row)
    return levels


def _factor_f1(run: RunData, levels: Mapping[str, list[StoredRow]]) -> dict[str, float]:
    """F1 (overall) of a tamper run on each level's tampered clips plus all its originals."""
    from mmrobust.metrics.tamper import tamper_metrics

    originals = [r.to_record() for r in run.rows if r.sample.tamper_type == "original"]
    return {
        k: tamper_metrics([*(r.to_record() for r in v), *originals], n_resamples=0)["f1"].get(
            "overall", 0.0
        )
        for k, v in sorted(levels.items())
    }


def ablations(runs: Sequence[RunData]) -> dict[str, dict[str, dict[str, float]]]:
    """Position / duration / prompt ablations across tamper runs (paper Tables 2, 4, 5).

    Returns:
        factor -> model -> {level -> F1 overall}; a factor appears only when some
        model has more than one level (F1 is computed only then).
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    tamper = [r for r in runs if r.benchmark == "tamper"]
    for factor in ("position", "duration_s"):
        levels = [(run, _factor_levels(run, factor)) for run in tamper]
        seen: dict[str, set[str]] = {}
        for run, lv in levels:
            seen.setdefault(run.model, set()).update(lv)
        if all(len(v) <= 1 for v in seen.values()):
            continue
        table: dict[str, dict[str, float]] = {}
        for run, lv in levels:
            table.setdefault(run.model, {}).update(_factor_f1(run, lv))
        out["duration" if factor == "duration_s" else factor] = table
    prompts: dict[str, dict[str, float]] = {}
    for run in tamper:
        prompts.setdefault(run.model, {})[run.prompt] = run.metrics.get("f1", {}).get(
            "overall", 0.0
        )
    if any(len(v) > 1 for v in prompts.values()):
        out["prompt"] = prompts
    return out


UNITS_NOTE = (
    "All scores and rates are percentages: F1, accuracies, window coverage, parse-fail and "
    "error rates to one decimal; MMR RA and MR to two decimals, as MMR Table 2 prints them "
    "(metrics.json keeps the raw values)."
)


def build_report(run_dirs: Sequence[str | Path | RunData], out_dir: str | Path) -> ReportPaths:
    """Write ``report.md``, CSV tables and PNG plots for one or more runs.

    One section per (benchmark, dataset): runs on different data are never ranked
    together. Tamper: ``table7.csv`` (Model, Drop, Mask, Repeat, Rotate,
    Substitute, Overall, 95% CI, parse-fail and error rates, window coverage,
    degenerate flag; a ``Data`` column when several datasets), ``per_task_<label>.csv``,
    ``f1_per_type.png`` (``f1_per_type_<dataset>.png`` for further datasets),
    ``heatmap_<label>.png``, and ``ablation_<factor>.csv`` when the runs cover
    several positions, durations or prompts. MMR: ``mmr_table2.csv`` (all runs of
    the first MMR dataset; ``mmr_table2_<dataset>.csv`` for further ones) and each
    run's ``mmr/<label>/`` (its Table 2 rows, details, accuracy plot). Tasks
    (``--task type|when|leading``): ``task_<task>.csv`` and plots per
    :func:`mmrobust.report.tasks.write_task_section`. All values in percent
    (:mod:`mmrobust.report.units`).

    Raises:
        FileNotFoundError: a folder is not a run folder.
    """
    from mmrobust.report.mmr import summary_markdown, table2, write_mmr_report
    from mmrobust.report.mmr import to_markdown as table2_markdown
    from mmrobust.report.plots import plot_f1_per_type, plot_task_heatmap, safe_name
    from mmrobust.report.tables import (
        TABLE7_NOTE,
        ablation_table,
        per_task_table,
        table7,
        to_markdown,
    )

    runs = [r if isinstance(r, RunData) else load_run(r) for r in run_dirs]
    labels = run_labels(runs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = ["# mmrobust report", "", UNITS_NOTE, ""]
    paths = ReportPaths(markdown=out / "report.md")
    groups = group_runs(runs, labels)
    tamper_groups = [g for g in groups if g.benchmark == "tamper"]
    if tamper_groups:
        frames = []
        for g in tamper_groups:
            frame = table7({lab: r.metrics for lab, r in g.runs.items()})
            md += [
                f"## Tamper detection F1 on {g.where} (MVTamperBench Table 7 layout)",
                "",
                to_markdown(frame),
                TABLE7_NOTE,
                "",
            ]
            if len(tamper_groups) > 1:
                frame.insert(1, "Data", g.dataset)
            frames.append(frame)
        paths.table_csv = out / "table7.csv"
        pd.concat(frames, ignore_index=True).to_csv(paths.table_csv, index=False)
    for i, g in enumerate(tamper_groups):
        name = "f1_per_type.png" if i == 0 else f"f1_per_type_{safe_name(g.dataset)}.png"
        fig = plot_f1_per_type(
            {k: r.metrics for k, r in g.runs.items()}, out / name, dataset=g.dataset
        )
        paths.figures.append(fig)
        for lab, r in g.runs.items():
            frame = per_task_table(r.metrics)
            if frame.empty:
                continue
            p = out / f"per_task_{safe_name(lab)}.csv"
            frame.to_csv(p, index=False)
            paths.per_task_csv.append(p)
            md += [f"### Per task x type F1: {lab} on {g.dataset}", "", to_markdown(frame)]
            paths.figures.append(
                plot_task_heatmap(
                    r.metrics, out / f"heatmap_{safe_name(lab)}.png", label=lab, dataset=g.dataset
                )
            )
        headings = {
            "position": "Table 2 (position)",
            "duration": "Table 4 (duration)",
            "prompt": "Table 5 (prompt)",
        }
        for factor, values in ablations(list(g.runs.values())).items():
            frame = ablation_table(values, factor)
            suffix = "" if i == 0 else f"_{safe_name(g.dataset)}"
            p = out / f"ablation_{factor}{suffix}.csv"
            frame.to_csv(p, index=False)
            paths.ablation_csv.append(p)
            md += [
                f"## Ablation on {g.dataset}: {headings[factor]}, F1 overall (%)",
                "",
                to_markdown(frame),
            ]
    mmr_groups = [g for g in groups if g.benchmark == "mmr"]
    for i, g in enumerate(mmr_groups):
        metrics = {lab: r.metrics for lab, r in g.runs.items()}
        frame = table2(metrics)
        p = out / ("mmr_table2.csv" if i == 0 else f"mmr_table2_{safe_name(g.dataset)}.csv")
        frame.to_csv(p)
        paths.mmr_csv.append(p)
        md += [
            f"## Leading questions on {g.where} (MMR Table 2 layout)",
            "",
            table2_markdown(frame),
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
    from mmrobust.report.tasks import TASK_BENCHMARKS, write_task_section

    for bench in TASK_BENCHMARKS:
        for i, g in enumerate(x for x in groups if x.benchmark == bench):
            lines, csvs, figs = write_task_section(
                bench,
                g.dataset,
                g.where,
                {lab: r.metrics for lab, r in g.runs.items()},
                {lab: r.text_only for lab, r in g.runs.items()},
                out,
                index=i,
            )
            md += lines
            paths.task_csv += csvs
            paths.figures += figs
    for lab, r in zip(labels, runs, strict=True):
        defects = r.metrics.get("defects") or []
        if defects:
            md += [f"### Data defects: {lab} on {r.dataset}", ""]
            md += [f"- {d}" for d in defects[:50]] + [""]
    paths.plots = [f.path for f in paths.figures]
    paths.markdown.write_text("\n".join(md) + "\n", encoding="utf-8")
    return paths


MMR_NOTE = (
    "RA = UR / pairs (higher is better), MR = UF / (UR + UF) (lower is better), in percent "
    "(MMR section 3, eq. 1-2). Avg is over all pairs, as published; the mean of the category "
    "values is category_mean in metrics.json. – marks an MR with no pair whose positive "
    "question was answered right."
)
"""The caption of every Table 2 shaped table."""


@dataclass(frozen=True)
class Comparison:
    """Paired comparison of two runs.

    Attributes:
        a, b: run labels (the model specs; the run folder names when the specs are equal).
        mcnemar: the 2x2 table and exact p-value over common samples.
        only_a, only_b: samples present in one run only (not compared).
        dataset: the dataset's name.
    """

    a: str
    b: str
    mcnemar: McNemarResult
    only_a: int
    only_b: int
    dataset: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        m = self.mcnemar
        return {
            "a": self.a, "b": self.b, "n": m.n, "both_correct": m.both_correct,
            "a_only_correct": m.a_only, "b_only_correct": m.b_only, "both_wrong": m.both_wrong,
            "p_value": m.p_value, "only_in_a": self.only_a, "only_in_b": self.only_b,
            "accuracy_a": self.accuracy_a, "accuracy_b": self.accuracy_b, "dataset": self.dataset,
        }  # fmt: skip

    @property
    def accuracy_a(self) -> float:
        """Share of the common samples run A answered right (a failure counts as wrong)."""
        m = self.mcnemar
        return (m.both_correct + m.a_only) / m.n if m.n else 0.0

    @property
    def accuracy_b(self) -> float:
        """Share of the common samples run B answered right."""
        m = self.mcnemar
        return (m.both_correct + m.b_only) / m.n if m.n else 0.0

    def as_text(self) -> str:
        """The 2x2 table of right/wrong answers, each run's accuracy and the test, as text."""
        from mmrobust.report.units import pct_sign

        m = self.mcnemar
        a, b = self.a, self.b
        rows = [
            ("", f"{b}: right", f"{b}: wrong"),
            (f"{a}: right", str(m.both_correct), str(m.a_only)),
            (f"{a}: wrong", str(m.b_only), str(m.both_wrong)),
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [
            f"Paired comparison on the {m.n} samples of {self.dataset} both runs answered "
            "(a failure counts as wrong)"
        ]
        for r in rows:
            cells = [r[0].ljust(widths[0]), r[1].rjust(widths[1]), r[2].rjust(widths[2])]
            lines.append("  ".join(cells))
        lines.append(f"accuracy: {a} {pct_sign(self.accuracy_a)}, {b} {pct_sign(self.accuracy_b)}")
        verdict = "differ" if m.p_value < 0.05 else "do not differ"
        lines.append(
            f"McNemar exact test on the {m.a_only + m.b_only} discordant samples: "
            f"p = {m.p_value:.4g} (the runs {verdict} at the 5% level)"
        )
        if self.only_a or self.only_b:
            lines.append(
                f"not compared: {self.only_a} samples only in {a}, {self.only_b} only in {b}"
            )
        return "\n".join(lines)


def compare_runs(run_a: str | Path, run_b: str | Path) -> Comparison:
    """McNemar exact test of two runs on the samples both answered (a failure counts as wrong).

    Raises:
        FileNotFoundError: not a run folder.
        ValueError: the runs were made on different data, or share no sample.
    """
    a, b = load_run(run_a), load_run(run_b)
    ra: Mapping[str, ScoredRecord] = {r.sample_id: r for r in a.records}
    rb: Mapping[str, ScoredRecord] = {r.sample_id: r for r in b.records}
    ha = a.info.get("dataset", {}).get("data_hash")
    hb = b.info.get("dataset", {}).get("data_hash")
    if ha != hb:
        raise ValueError(
            f"the runs were made on different data (sha256 {str(ha)[:12]} vs {str(hb)[:12]}); "
            "compare two runs of the same dataset"
        )
    common = sorted(set(ra) & set(rb))
    if not common:
        raise ValueError("the two runs share no sample id")
    res = mcnemar_exact([ra[s].correct for s in common], [rb[s].correct for s in common])
    la, lb = (a.model, b.model) if a.model != b.model else (a.run_dir.name, b.run_dir.name)
    return Comparison(
        a=la,
        b=lb,
        mcnemar=res,
        only_a=len(set(ra) - set(rb)),
        only_b=len(set(rb) - set(ra)),
        dataset=a.dataset,
    )


__all__ = [
    "Comparison",
    "ReportPaths",
    "RunData",
    "ablations",
    "build_report",
    "compare_runs",
    "load_run",
]
