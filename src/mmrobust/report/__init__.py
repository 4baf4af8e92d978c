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

from mmrobust.metrics.stats import McNemarResult, mcnemar_exact
from mmrobust.records import ScoredRecord
from mmrobust.store import ResultStore, RunKey, StoredRow


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


@dataclass
class ReportPaths:
    """Files written by :func:`build_report` (``None`` / empty when not applicable)."""

    markdown: Path
    table_csv: Path | None = None
    per_task_csv: list[Path] = field(default_factory=list)
    ablation_csv: list[Path] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    mmr: list[Path] = field(default_factory=list)


def load_run(run_dir: str | Path) -> RunData:
    """Read a run folder written by ``mmrobust eval``.

    Raises:
        FileNotFoundError: no ``run.json`` or no ``results.sqlite``.
        ValueError: unreadable ``run.json`` or results database.
    """
    from mmrobust.runner import load_run_config

    d = Path(run_dir)
    info = load_run_config(d)
    mpath = d / "metrics.json"
    metrics = json.loads(mpath.read_text(encoding="utf-8")) if mpath.is_file() else {}
    with ResultStore(d, readonly=True) as store:
        rows = store.rows(RunKey(**info["key"]))
    return RunData(d, info, metrics, rows)


def _data_label(run: RunData) -> str:
    ds = run.info.get("dataset", {})
    return f"{ds.get('name', '?')} [{str(ds.get('data_hash', ''))[:12]}]"


def _labels(runs: Sequence[RunData]) -> list[str]:
    labels = [r.model for r in runs]
    if len(set(labels)) < len(labels):
        labels = [f"{r.model} ({r.prompt})" for r in runs]
    if len(set(labels)) < len(labels):
        labels = [f"{r.model} [{r.run_dir.name}]" for r in runs]
    return labels


def _factor_f1(run: RunData, factor: str) -> dict[str, float]:
    """F1 (overall) of a tamper run split by a sample-meta factor of its tampered clips."""
    from mmrobust.metrics.tamper import tamper_metrics

    recs = run.records
    meta = {r.sample.id: r.sample.meta for r in run.rows}
    originals = [r for r in recs if r.tamper_type == "original"]
    levels: dict[str, list[ScoredRecord]] = {}
    for r in recs:
        if r.tamper_type == "original":
            continue
        v = meta.get(r.sample_id, {}).get(factor)
        if v is not None:
            levels.setdefault(f"{v:g}s" if isinstance(v, float) else str(v), []).append(r)
    return {
        k: tamper_metrics([*v, *originals], n_resamples=0)["f1"].get("overall", 0.0)
        for k, v in sorted(levels.items())
    }


def ablations(runs: Sequence[RunData]) -> dict[str, dict[str, dict[str, float]]]:
    """Position / duration / prompt ablations across tamper runs (paper Tables 2, 4, 5).

    Returns:
        factor -> model -> {level -> F1 overall}; a factor appears only when some
        model has more than one level.
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    tamper = [r for r in runs if r.benchmark == "tamper"]
    for factor in ("position", "duration_s"):
        table: dict[str, dict[str, float]] = {}
        for run in tamper:
            table.setdefault(run.model, {}).update(_factor_f1(run, factor))
        if any(len(v) > 1 for v in table.values()):
            out["duration" if factor == "duration_s" else factor] = table
    prompts: dict[str, dict[str, float]] = {}
    for run in tamper:
        prompts.setdefault(run.model, {})[run.prompt] = run.metrics.get("f1", {}).get(
            "overall", 0.0
        )
    if any(len(v) > 1 for v in prompts.values()):
        out["prompt"] = prompts
    return out


def build_report(run_dirs: Sequence[str | Path], out_dir: str | Path) -> ReportPaths:
    """Write ``report.md``, CSV tables and PNG plots for one or more runs.

    Tamper runs: ``table7.csv`` (Model, Drop, Mask, Repeat, Rotate,
    Substitute, Overall, CI, parse-fail and error rates, window coverage,
    degenerate flag), ``per_task_<label>.csv``, ``f1_per_type.png``,
    ``heatmap_<label>.png``, and ``ablation_<factor>.csv`` when the runs
    cover several positions, durations or prompts. MMR runs: the MMR
    engineer's Table-2 report (``mmr/<label>/``).

    Raises:
        FileNotFoundError: a folder is not a run folder.
    """
    from mmrobust.report.plots import plot_f1_per_type, plot_task_heatmap
    from mmrobust.report.tables import ablation_table, per_task_table, table7, to_markdown

    runs = [load_run(d) for d in run_dirs]
    labels = _labels(runs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = ["# mmrobust report", ""]
    paths = ReportPaths(markdown=out / "report.md")
    tamper = {lab: r for lab, r in zip(labels, runs, strict=True) if r.benchmark == "tamper"}
    if tamper:
        t7 = table7({lab: r.metrics for lab, r in tamper.items()})
        data = [_data_label(r) for r in tamper.values()]
        if len(set(data)) > 1:  # never rank runs on different data without saying so
            t7.insert(1, "Data", data)
            t7 = t7.sort_values(["Data", "Model"], kind="stable").reset_index(drop=True)
        paths.table_csv = out / "table7.csv"
        t7.to_csv(paths.table_csv, index=False)
        md += ["## Tamper detection F1 (MVTamperBench Table 7 layout)", "", to_markdown(t7)]
        md.append(
            "F1 with positive class = tampered, per type on that type's clips plus all originals; "
            "Overall = unweighted mean over types. A `Flag` of `always_yes` marks a degenerate "
            "predictor (F1 2/3 on balanced data). Window coverage = share of tampered clips with "
            "a sampled frame inside the tamper window.\n"
        )
        paths.plots.append(
            plot_f1_per_type({k: r.metrics for k, r in tamper.items()}, out / "f1_per_type.png")
        )
        for lab, r in tamper.items():
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in lab)
            frame = per_task_table(r.metrics)
            if not frame.empty:
                p = out / f"per_task_{safe}.csv"
                frame.to_csv(p, index=False)
                paths.per_task_csv.append(p)
                md += [f"### Per task: {lab}", "", to_markdown(frame)]
                paths.plots.append(
                    plot_task_heatmap(r.metrics, out / f"heatmap_{safe}.png", title=lab)
                )
        headings = {
            "position": "Table 2 (position)",
            "duration": "Table 4 (duration)",
            "prompt": "Table 5 (prompt)",
        }
        for factor, values in ablations(list(tamper.values())).items():
            frame = ablation_table(values, factor)
            p = out / f"ablation_{factor}.csv"
            frame.to_csv(p, index=False)
            paths.ablation_csv.append(p)
            md += [f"## Ablation: {headings[factor]}, F1 overall", "", to_markdown(frame)]
    for lab, r in zip(labels, runs, strict=True):
        if r.benchmark == "mmr":
            from mmrobust.report.mmr import write_mmr_report

            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in lab)
            written = write_mmr_report(r.metrics, out / "mmr" / safe, label=lab)
            paths.mmr += list(written.values())
            md += [f"## MMR: {lab}", "", written["markdown"].read_text(encoding="utf-8")]
    for lab, r in zip(labels, runs, strict=True):
        defects = r.metrics.get("defects") or []
        if defects:
            md += [f"### Data defects: {lab}", ""] + [f"- {d}" for d in defects[:50]] + [""]
    paths.markdown.write_text("\n".join(md) + "\n", encoding="utf-8")
    return paths


@dataclass(frozen=True)
class Comparison:
    """Paired comparison of two runs.

    Attributes:
        a, b: run labels.
        mcnemar: the 2x2 table and exact p-value over common samples.
        only_a, only_b: samples present in one run only (not compared).
    """

    a: str
    b: str
    mcnemar: McNemarResult
    only_a: int
    only_b: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        m = self.mcnemar
        return {
            "a": self.a, "b": self.b, "n": m.n, "both_correct": m.both_correct,
            "a_only_correct": m.a_only, "b_only_correct": m.b_only, "both_wrong": m.both_wrong,
            "p_value": m.p_value, "only_in_a": self.only_a, "only_in_b": self.only_b,
        }  # fmt: skip


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
    return Comparison(
        a=a.model,
        b=b.model,
        mcnemar=res,
        only_a=len(set(ra) - set(rb)),
        only_b=len(set(rb) - set(ra)),
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
