"""Reports over run folders: tables (Markdown, CSV), plots (PNG), ablations, paired comparison.

Library entry points (the HTML report builds on these):

* :func:`load_run` reads one run folder (``run.json``, ``metrics.json`` and
  the stored rows) into a :class:`RunView` (also called :class:`RunData`), the one
  run view every report module reads (:mod:`mmrobust.report.view`);
* :func:`build_report` writes the tables and plots of several runs and
  returns their paths (:class:`ReportPaths`); each benchmark family writes its
  own section (``BenchmarkFamily.markdown``, :mod:`mmrobust.families`);
* :func:`compare_runs` pairs two runs on their common samples (McNemar exact).

Module map: ``view`` (the run view, groups), ``common`` (Markdown and figure helpers),
``tables`` / ``plots`` (tamper tables, console summary, plots), ``tamper``, ``mmr``,
``tasks`` / ``task_sections`` (each family's sections and leaderboards), ``html`` /
``browser`` / ``thumbs`` (the page), ``site`` (everything), ``compare``, ``published``,
``units``, ``audit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mmrobust.atomicfile import write_text
from mmrobust.report.compare import Comparison, compare_runs
from mmrobust.report.stability import stability_text
from mmrobust.report.view import (
    ReportPaths,
    RunData,
    RunGroup,
    RunView,
    dataset_names,
    group_runs,
    load_run,
    read_run_info,
    run_labels,
)

UNITS_NOTE = (
    "All scores and rates are percentages: F1, accuracies, window coverage, parse-fail and "
    "error rates to one decimal; MMR RA and MR to two decimals, as MMR Table 2 prints them "
    "(metrics.json keeps the raw values)."
)


def __getattr__(name: str) -> object:  # names that moved to a family's report module
    if name == "MMR_NOTE":
        from mmrobust.report.mmr import MMR_NOTE

        return MMR_NOTE
    if name == "ablations":
        from mmrobust.report.tamper import ablations

        return ablations
    raise AttributeError(f"module 'mmrobust.report' has no attribute {name!r}")


def build_report(run_dirs: Sequence[str | Path | RunView], out_dir: str | Path) -> ReportPaths:
    """Write ``report.md``, CSV tables and PNG plots for one or more runs.

    One section per (benchmark, dataset), in family order: runs on different data are
    never ranked together. Each family writes its own tables and plots
    (``BenchmarkFamily.markdown``): tamper ``table7.csv``, ``per_task_<label>.csv``,
    ``f1_per_type.png``, heatmaps and ablations (:mod:`mmrobust.report.tamper`); the
    ``--task`` families ``task_<task>.csv`` and plots (:mod:`mmrobust.report.task_sections`);
    MMR ``mmr_table2.csv`` and each run's ``mmr/<label>/`` (:mod:`mmrobust.report.mmr`).
    Runs asked with ``--repeats`` get a line each under "Sampling stability"
    (:func:`mmrobust.report.stability.stability_text`).
    A run stopped before ``metrics.json`` is marked (``interrupted, 2 of 54``). All values
    in percent (:mod:`mmrobust.report.units`).

    Raises:
        FileNotFoundError: a folder is not a run folder.
    """
    runs = [r if isinstance(r, RunView) else load_run(r) for r in run_dirs]
    labels = run_labels(runs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = ["# mmrobust report", "", UNITS_NOTE, ""]
    paths = ReportPaths(markdown=out / "report.md")
    stopped = [
        f"- {lab}: {r.interrupted}" for lab, r in zip(labels, runs, strict=True) if r.interrupted
    ]
    if stopped:
        md += ["Runs that stopped before writing metrics.json, scored from their stored rows:"]
        md += [*stopped, ""]
    groups = group_runs(runs, labels)
    by_family: dict[str, list[RunGroup]] = {}
    for g in groups:
        by_family.setdefault(g.benchmark, []).append(g)
    for family_groups in by_family.values():
        md += family_groups[0].family.markdown(family_groups, out, paths)
    stable = [(lab, r, stability_text(r.metrics)) for lab, r in zip(labels, runs, strict=True)]
    if any(text for *_, text in stable):  # --repeats runs, whatever their family
        md += [
            "## Sampling stability (each question asked K times; scores above: the first ask)",
            "",
        ]
        md += [f"- {lab} on {r.dataset}: {text}" for lab, r, text in stable if text] + [""]
    for lab, r in zip(labels, runs, strict=True):
        defects = r.metrics.get("defects") or []
        if defects:
            md += [f"### Data defects: {lab} on {r.dataset}", ""]
            md += [f"- {d}" for d in defects[:50]] + [""]
    paths.plots = [f.path for f in paths.figures]
    write_text(paths.markdown, "\n".join(md) + "\n")
    return paths


__all__ = [
    "UNITS_NOTE",
    "Comparison",
    "ReportPaths",
    "RunData",
    "RunGroup",
    "RunView",
    "build_report",
    "compare_runs",
    "dataset_names",
    "group_runs",
    "load_run",
    "read_run_info",
    "run_labels",
]
