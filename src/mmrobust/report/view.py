"""The one run view of the report: a run folder as every report module sees it.

:class:`RunView` (alias :data:`RunData`) is what the Markdown tables, the HTML page,
the sample browser and ``compare`` read: ``run.json``, ``metrics.json``, the stored
rows and how the report names the run. :func:`load_run` makes one from a run folder;
:func:`group_runs` puts runs of one family on one dataset together (one leaderboard).

``run.json`` is read in one place, :func:`read_run_info` (the typed
:class:`mmrobust.run.folder.RunInfo`).

A run stopped before it wrote ``metrics.json`` (Ctrl-C, a crash, a full disk) is
scored here from its stored rows (:func:`load_run`); :attr:`RunView.interrupted`
says how far it got (``"interrupted, 2 of 54"``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.families import BenchmarkFamily, get_family
from mmrobust.records import ScoredRecord
from mmrobust.report.common import Figure
from mmrobust.run import folder
from mmrobust.run.folder import RunInfo
from mmrobust.schema import Sample
from mmrobust.store import ResultStore, RunKey, StoredRow
from mmrobust.store_stream import count_rows, stream_rows, tally


def read_run_info(run_dir: Path) -> RunInfo:
    """``run_dir/run.json`` as the typed :class:`~mmrobust.run.folder.RunInfo` (the one place
    the report reads it).

    Raises:
        FileNotFoundError: no ``run.json``.
        ValueError: unreadable ``run.json``.
    """
    return folder.read_run_info(run_dir)


class StoredRows(Collection[StoredRow]):
    """A run's rows that count (its selection, the first ask of each sample), read from its
    ``results.sqlite`` each time they are iterated and never held: a report over a million
    rows keeps one row at a time (:func:`mmrobust.store_stream.stream_rows`).

    Args:
        run_dir: the run folder.
        key: the run's configuration key.
    """

    def __init__(self, run_dir: Path, key: RunKey) -> None:
        self.run_dir, self.key = run_dir, key
        self._n: int | None = None

    def __iter__(self) -> Iterator[StoredRow]:
        """The rows in the order they were stored."""
        with ResultStore(self.run_dir, readonly=True) as store:
            yield from stream_rows(store, self.key)

    def by_id(self, *, media_only: bool = False, limit: int | None = None) -> Iterator[StoredRow]:
        """The rows in sample id order (``str`` order); ``media_only``: only those of a sample
        with a video or an image; ``limit``: at most that many."""
        with ResultStore(self.run_dir, readonly=True) as store:
            yield from stream_rows(store, self.key, by_id=True, media_only=media_only, limit=limit)

    def tally(self, paths: Sequence[str]) -> list[tuple[tuple[Any, ...], int, int, int]]:
        """See :func:`tally_rows`."""
        with ResultStore(self.run_dir, readonly=True) as store:
            return tally(store, self.key, paths)

    def __len__(self) -> int:
        if self._n is None:
            with ResultStore(self.run_dir, readonly=True) as store:
                self._n = count_rows(store, self.key)
        return self._n

    def __contains__(self, item: object) -> bool:
        return any(r == item for r in self)


def _at(row: StoredRow, path: str) -> Any:
    """The value at a JSON path of the row's sample (``$.tamper_type``, ``$.meta.position``)."""
    first, *rest = path.removeprefix("$.").split(".")
    value: Any = getattr(row.sample, first, None)
    for part in rest:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def tally_rows(
    rows: Collection[StoredRow], paths: Sequence[str]
) -> list[tuple[tuple[Any, ...], int, int, int]]:
    """``rows`` grouped by the values at JSON ``paths`` of their sample (``$.tamper_type``,
    ``$.meta.position``; ``None`` where absent): ``(values, rows, window coverage known,
    covered)`` per group, counted by SQLite for :class:`StoredRows` (no row is read into
    Python), else in Python."""
    if isinstance(rows, StoredRows):
        return rows.tally(paths)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for r in rows:
        g = groups.setdefault(tuple(_at(r, p) for p in paths), [0, 0, 0])
        g[0] += 1
        if r.window_covered is not None:
            g[1] += 1
            g[2] += int(r.window_covered)
    return [(k, v[0], v[1], v[2]) for k, v in groups.items()]


def rows_by_id(
    rows: Collection[StoredRow], *, media_only: bool = False, limit: int | None = None
) -> Iterator[StoredRow]:
    """``rows`` in sample id order: streamed from the store for :class:`StoredRows`, else
    sorted (stable: a sample's rows keep their order); ``media_only`` and ``limit`` as
    :meth:`StoredRows.by_id`."""
    if isinstance(rows, StoredRows):
        return rows.by_id(media_only=media_only, limit=limit)
    kept = [r for r in rows if not media_only or r.sample.video or r.sample.image]
    return iter(sorted(kept, key=lambda r: r.sample.id)[:limit])


@dataclass
class RunView:
    """One run as the report sees it.

    Attributes:
        run_dir: the run folder.
        info: ``run.json``.
        metrics: ``metrics.json`` (scored from the stored rows when the run stopped
            before writing it; empty when there are none).
        rows: the stored rows of the run's configuration key (as the last eval scored):
            :class:`StoredRows` (streamed from the store at each pass) from :func:`load_run`.
        label: the display label, when a page has given it one (else the model spec).
        bench: the family id when given explicitly (else read from the files).
        dataset_label: the dataset's display name in the page (else ``run.json``'s).
        extra_meta: more ``(name, value)`` lines for the run's HTML metadata block.
        n_stored: rows stored when ``metrics.json`` was missing (else ``None``).
    """

    run_dir: Path
    info: Mapping[str, Any]
    metrics: Mapping[str, Any]
    rows: Collection[StoredRow] = field(default_factory=list)
    label: str = ""
    bench: str = ""
    dataset_label: str = ""
    extra_meta: list[tuple[str, str]] = field(default_factory=list)
    n_stored: int | None = None

    @property
    def records(self) -> list[ScoredRecord]:
        """The rows as metric inputs."""
        return [r.to_record() for r in self.rows]

    @property
    def benchmark(self) -> str:
        """The family id (``tamper``, ``mmr``, a ``--task`` family, ``generic``, ...)."""
        return str(
            self.bench
            or self.metrics.get("benchmark")
            or self.info.get("dataset", {}).get("benchmark", "generic")
        )

    @property
    def family(self) -> BenchmarkFamily:
        """The run's benchmark family."""
        return get_family(self.benchmark)

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
    def dataset_name(self) -> str:
        """The dataset's display name in the page."""
        return self.dataset_label or self.dataset

    @property
    def dataset_key(self) -> tuple[str, str]:
        """``(name, data sha256)``: runs with equal keys were made on the same data."""
        ds = self.info.get("dataset", {})
        return str(ds.get("name", "?")), str(ds.get("data_hash", ""))

    @property
    def run_block(self) -> Mapping[str, Any]:
        """How the run was made (``metrics.json`` ``run``, else ``run.json`` ``run``)."""
        block: Mapping[str, Any] = self.metrics.get("run") or self.info.get("run", {}) or {}
        return block

    @property
    def text_only(self) -> bool:
        """Whether the run sent no media (``--text-only``)."""
        return bool(self.run_block.get("text_only") or self.info.get("config", {}).get("text_only"))

    @property
    def frames(self) -> str:
        """How the model was shown media (``run.frames``)."""
        return str(self.run_block.get("frames", "") or "")

    @property
    def n_selected(self) -> int | None:
        """How many samples the run set out to answer (``run.json`` ``dataset.n_selected``)."""
        n = self.info.get("dataset", {}).get("n_selected")
        return int(n) if isinstance(n, int) else None

    @property
    def interrupted(self) -> str:
        """``"interrupted, 2 of 54"`` for a run stopped before ``metrics.json``; else ``""``."""
        if self.n_stored is None:
            return ""
        total = self.n_selected
        return f"interrupted, {self.n_stored} of {total if total is not None else '?'}"

    @property
    def complete(self) -> bool:
        """Whether every selected sample has a stored row."""
        if self.n_stored is not None:
            return False
        return bool(self.metrics.get("complete", True))


RunData = RunView
"""The name older code uses for :class:`RunView`."""


@dataclass
class ReportPaths:
    """Files written by ``build_report`` (``None`` / empty when not applicable).

    A family's ``markdown`` hook adds its files to the list that fits, or to ``files``.
    """

    markdown: Path
    table_csv: Path | None = None
    per_task_csv: list[Path] = field(default_factory=list)
    ablation_csv: list[Path] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    mmr: list[Path] = field(default_factory=list)
    mmr_csv: list[Path] = field(default_factory=list)
    task_csv: list[Path] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


def _score_stored(info: Mapping[str, Any], rows: Sequence[StoredRow]) -> dict[str, Any]:
    """Metrics of an interrupted run's stored rows, scored as its eval would have."""
    from mmrobust.run.process import score_rows

    cfg, run, ds = info.get("config", {}), info.get("run", {}), info.get("dataset", {})
    benchmark = ds.get("benchmark") or (rows[0].sample.benchmark if rows else "generic")
    metrics = score_rows(
        rows,
        benchmark=benchmark,
        failures=run.get("failures") or cfg.get("failures") or "exclude",
        n_resamples=int(cfg.get("n_resamples", 1000)),
        seed=int(cfg.get("seed", 0)),
        defects=ds.get("defects", []),
        extract_mode=run.get("extraction") or cfg.get("extract") or "lenient",
        repeats=int(cfg.get("repeats") or 1),
    )
    metrics["run"] = dict(run)
    metrics["complete"] = False
    return metrics


def load_run(run_dir: str | Path, *, samples: dict[str, Sample] | None = None) -> RunView:
    """Read a run folder written by ``mmrobust eval``.

    ``samples`` shares parsed samples between runs of one dataset (see ``ResultStore.rows``).
    A folder without ``metrics.json`` (the run stopped early) is scored from its stored
    rows and marked (:attr:`RunView.interrupted`).

    Raises:
        FileNotFoundError: no ``run.json`` or no ``results.sqlite``.
        ValueError: unreadable ``run.json`` or results database.
    """
    d = Path(run_dir)
    run = read_run_info(d)
    info = run.as_dict()
    mpath = d / folder.METRICS_FILE
    metrics = json.loads(mpath.read_text(encoding="utf-8")) if mpath.is_file() else {}
    with ResultStore(d, readonly=True) as store:  # a missing or unreadable store: an error
        if metrics:  # the rows are streamed when read (StoredRows), never all in memory
            return RunView(d, info, metrics, StoredRows(d, run.key))
        asked = store.rows(run.key, store.selection(run.key), samples=samples)  # as eval scored
    rows = [r for r in asked if r.repeat == 0]  # the view's rows: repeat 0 (the headline)
    scored = _score_stored(info, asked) if asked else {}
    return RunView(d, info, scored, rows, n_stored=len(rows))


def run_labels(runs: Sequence[RunView]) -> list[str]:
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


def dataset_names(runs: Sequence[RunView]) -> dict[tuple[str, str], str]:
    """Dataset key -> display name: the name, plus the hash prefix when two datasets share it."""
    keys = list(dict.fromkeys(r.dataset_key for r in runs))
    names = [k[0] for k in keys]
    return {k: f"{k[0]} [{k[1][:12]}]" if names.count(k[0]) > 1 and k[1] else k[0] for k in keys}


@dataclass
class RunGroup:
    """Runs of one benchmark family on one dataset: one leaderboard.

    Attributes:
        benchmark: the family id.
        dataset: display name of the dataset.
        data_hash: its sha256 (empty when unknown).
        runs: label -> run, in the order given.
    """

    benchmark: str
    dataset: str
    data_hash: str
    runs: dict[str, RunView]

    @property
    def family(self) -> BenchmarkFamily:
        """The group's benchmark family."""
        return get_family(self.benchmark)

    @property
    def where(self) -> str:
        """``tamper-set (data sha256 0123456789ab)``."""
        return (
            f"{self.dataset} (data sha256 {self.data_hash[:12]})"
            if self.data_hash
            else self.dataset
        )

    def metrics(self) -> dict[str, Mapping[str, Any]]:
        """label -> ``metrics.json`` of each run."""
        return {lab: r.metrics for lab, r in self.runs.items()}


def group_runs(runs: Sequence[RunView], labels: Sequence[str]) -> list[RunGroup]:
    """One group per (benchmark, dataset), in family order (``BenchmarkFamily.order``: tamper
    detection, then the tasks type, when and leading, then MMR, then the rest)."""
    names = dataset_names(runs)
    groups: dict[tuple[str, tuple[str, str]], RunGroup] = {}
    for r, lab in zip(runs, labels, strict=True):
        key = (r.benchmark, r.dataset_key)
        if key not in groups:
            groups[key] = RunGroup(r.benchmark, names[r.dataset_key], r.dataset_key[1], {})
        groups[key].runs[lab] = r
    return sorted(groups.values(), key=lambda g: g.family.order)


__all__ = [
    "ReportPaths",
    "RunData",
    "RunGroup",
    "RunView",
    "StoredRows",
    "dataset_names",
    "group_runs",
    "load_run",
    "read_run_info",
    "rows_by_id",
    "run_labels",
    "tally_rows",
]
