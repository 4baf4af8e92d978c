"""The full report of several runs: Markdown/CSV tables, PNG plots and ``index.html``.

:func:`build_site` is what ``mmrobust report`` and ``mmrobust demo`` call. It
loads each run once, writes the tables and plots with
:func:`mmrobust.report.build_report`, then the self-contained HTML page
(:mod:`mmrobust.report.html`) that shows the same numbers: one leaderboard per
dataset (runs on different data are never ranked together) with the papers'
published rows as grey reference rows, the plots, any extra panels, the run
metadata and the sample browser. The published rows are shown by default only
when the runs were made on the released benchmark (``BenchmarkFamily.published``:
the hub id or the data hash); otherwise they are hidden, one click away (the
toggle in the page); ``published=False`` leaves them out.

:func:`check_run_dirs` and :func:`check_out_dir` turn the usual slips into one-line
errors (a path that does not exist, a folder of run folders, ``--out`` inside a run
folder); :meth:`SitePaths.summary` is what ``mmrobust report`` prints.

Adding a panel: append a function ``(runs, labels, out_dir) -> Section | None``
to :data:`SECTION_BUILDERS` (see :class:`mmrobust.report.html.Section`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from mmrobust.paths import out_folder_problem
from mmrobust.report import ReportPaths, RunGroup, RunView, build_report, group_runs, run_labels
from mmrobust.report.browser import MAX_THUMBS, THUMB_SECONDS
from mmrobust.report.html import Section, Table, write_html
from mmrobust.report.view import load_run
from mmrobust.run.folder import RUN_FILE
from mmrobust.schema import Sample

SectionBuilder = Callable[[Sequence[RunView], Sequence[str], Path], "Section | None"]

SECTION_BUILDERS: list[SectionBuilder] = []
"""Extra panels of ``index.html``, in order; a builder returns ``None`` to add nothing."""


@dataclass
class SitePaths:
    """Everything the report wrote: the tables and plots, and ``index.html``.

    Attributes:
        index_html: the page.
        tables: the Markdown, CSV and PNG files (:class:`ReportPaths`).
        groups: the leaderboards (one per family and dataset), for :meth:`summary`.
    """

    index_html: Path
    tables: ReportPaths
    groups: list[RunGroup] = field(default_factory=list)

    def summary(self) -> str:
        """A few lines for the console: each leaderboard's runs with their headline score
        (and ``interrupted, 2 of 54`` for a run that stopped early), then the paths."""
        n = sum(len(g.runs) for g in self.groups)
        lines = [f"report of {n} run{'s' if n != 1 else ''}:"]
        for g in self.groups:
            lines.append(f"  {g.family.title} on {g.where}:")
            for lab, r in g.runs.items():
                score = g.family.headline(r.metrics) if r.metrics else "no rows stored"
                lines.append(
                    f"    {lab}: {score}" + (f" ({r.interrupted})" if r.interrupted else "")
                )
        t = self.tables
        csvs = len(list(t.markdown.parent.rglob("*.csv")))
        lines.append(
            f"wrote {t.markdown}, {csvs} CSV tables and {len(t.figures)} plots into "
            f"{t.markdown.parent}"
        )
        lines.append(f"open {self.index_html}")
        return "\n".join(lines)


def check_run_dirs(run_dirs: Sequence[str | Path]) -> None:
    """Refuse, in one line, a path that does not exist or a folder that holds run folders.

    Raises:
        FileNotFoundError: ``no such folder: X``; ``X is a folder of N run folders, not a run
            folder; pass them: mmrobust report X/* --out DIR``.
    """
    for d in run_dirs:
        p = Path(d)
        if not p.exists():
            raise FileNotFoundError(f"no such folder: {p}")
        if p.is_dir() and not (p / RUN_FILE).is_file():
            inner = sorted(c for c in p.iterdir() if (c / RUN_FILE).is_file())
            if inner:
                raise FileNotFoundError(
                    f"{p} is a folder of {len(inner)} run folders, not a run folder; pass "
                    f"them: mmrobust report {p / '*'} --out DIR"
                )


def check_out_dir(out_dir: str | Path) -> None:
    """Refuse a report folder inside a run folder (its files would mix with the run's), or one
    that is a file (:func:`mmrobust.paths.out_folder_problem`).

    Raises:
        ValueError: ``--out X is inside the run folder Y; ...``; ``--out X is a file, ...``.
    """
    problem = out_folder_problem(out_dir)
    if problem:
        raise ValueError(problem)
    out = Path(out_dir).resolve()
    for folder in (out, *out.parents):
        if (folder / RUN_FILE).is_file():
            raise ValueError(
                f"--out {out_dir} is inside the run folder {folder}; write the report "
                "elsewhere (e.g. --out reports/NAME)"
            )


def released_group(g: RunGroup) -> bool:
    """Whether every run of the group was made on the family's released benchmark."""
    check = g.family.published
    return check is not None and all(check(r.info) for r in g.runs.values())


def labels_for(runs: Sequence[RunView]) -> list[str]:
    """Display labels (see :func:`mmrobust.report.run_labels`)."""
    return run_labels(runs)


def leaderboards(
    runs: Sequence[RunView], labels: Sequence[str], *, published: bool | None = True
) -> list[Table]:
    """The HTML tables of every (benchmark, dataset) group, each from its family
    (``BenchmarkFamily.leaderboards``): Table 7 shape for tamper, Table 2 shape for MMR,
    the ``--task`` tables, a user family's own.

    With ``published`` true or ``None``, each tamper table also lists MVTamperBench
    Table 7's 45 models and each MMR table MMR Table 2's 19, as grey reference rows
    sorted in with the runs (by Overall F1, by Avg RA). ``True``: shown by default;
    ``None``: shown by default only for a group made on the released benchmark
    (:func:`released_group`), else hidden one click away (``Table.published_default``).
    """
    tables: list[Table] = []
    for g in group_runs(runs, labels):
        shown = published is True or (published is None and released_group(g))
        for t in g.family.leaderboards(g, published is not False):
            t.published_default = shown
            tables.append(t)
    return tables


def task_leaderboards(g: RunGroup) -> list[Table]:
    """The tables of one ``--task type|when|leading`` group (its family's leaderboards)."""
    tables: list[Table] = g.family.leaderboards(g, False)
    return tables


def build_site(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    title: str = "mmrobust report",
    published: bool | None = None,
    max_thumbs: int = MAX_THUMBS,
    thumb_seconds: float | None = THUMB_SECONDS,
    audits: Sequence[str | Path] = (),
    sections: Sequence[Section] = (),
) -> SitePaths:
    """Write the tables, plots and ``index.html`` for ``run_dirs`` into ``out_dir``.

    Args:
        run_dirs: run folders written by ``mmrobust eval``.
        out_dir: the report folder (created).
        title: the page title.
        published: the papers' published rows in the leaderboards: ``None`` (default) shown
            by default only for runs on the released benchmark, else hidden one click away
            (toggle in the page); ``True`` shown; ``False`` left out.
        max_thumbs: samples that get a thumbnail strip in the sample browser.
        thumb_seconds: time budget for drawing them (``None``: none); a second report
            into the same folder reuses the strips already drawn.
        audits: ``audit.json`` files (``mmrobust audit --out``), each shown as a leak-audit panel.
        sections: more panels, after the audits (``mmrobust run``: the suite file).

    Raises:
        FileNotFoundError: a folder does not exist or is not a run folder (a folder of run
            folders is named as such), or an audit file is missing.
        ValueError: an audit file is not one; ``out_dir`` is inside a run folder.
    """
    from mmrobust.report.audit import audit_section, load_audit
    from mmrobust.report.card import card_links, write_cards

    check_run_dirs(run_dirs)
    check_out_dir(out_dir)
    loaded = [load_audit(a) for a in audits]
    audit_sections = [audit_section(a, i) for i, a in enumerate(loaded)]
    out = Path(out_dir)
    shared: dict[str, Sample] = {}  # runs of one dataset parse each sample once
    runs = [load_run(d, samples=shared) for d in run_dirs]
    labels = run_labels(runs)
    paths = build_report(runs, out)
    names = {id(r): g.dataset for g in group_runs(runs, labels) for r in g.runs.values()}
    html_runs = [  # a --task run is named with its task outside its own leaderboard
        replace(r, label=lab + r.family.label_suffix, dataset_label=names.get(id(r), r.dataset))
        for lab, r in zip(labels, runs, strict=True)
    ]
    panels = [s for build in SECTION_BUILDERS if (s := build(runs, labels, out)) is not None]
    panels += audit_sections
    panels += list(sections)
    tables = leaderboards(runs, labels, published=published)
    links = card_links(runs, labels, write_cards(runs, out, loaded, title=title), out)
    for t in tables:  # each leaderboard row's model name links to its robustness card; a
        # table of no model's rows (one model's per-effect table) gets no empty card column
        t.links = {name: page for name, page in links.items() if any(r[0] == name for r in t.rows)}
    index = write_html(
        out,
        html_runs,
        tables=tables,
        figures=paths.figures,
        sections=panels,
        title=title,
        max_thumbs=max_thumbs,
        thumb_seconds=thumb_seconds,
    )
    return SitePaths(index_html=index, tables=paths, groups=group_runs(runs, labels))


__all__ = [
    "SECTION_BUILDERS",
    "SectionBuilder",
    "SitePaths",
    "build_site",
    "check_out_dir",
    "check_run_dirs",
    "labels_for",
    "leaderboards",
    "released_group",
    "task_leaderboards",
]
