"""The plan of ``mmrobust run``: every (model, dataset, task) with its run folder, and why
a run is not run.

Each dataset is loaded once here (and once per suite: every run on it evaluates this load,
``SuiteRun.dataset``) to learn its name, its benchmark and the media kinds of its
samples (:func:`mmrobust.run.checks.media_kinds`). A run is skipped, with one note, when its
task asks about tampered clips and the dataset has none, or when its model takes no media of
the dataset's kinds (``forensic`` on MMR's images: :func:`mmrobust.models.spec.media_kinds_of`,
known from the spec before any model is loaded). A dataset that cannot be loaded blocks every
run planned on it (status ``blocked``, its error kept) and is one failure
(:class:`DataFailure`, :func:`data_failures`), so the other datasets still run.

Folder names: :mod:`mmrobust.suite.names` (credentials scrubbed, safe, collision-free).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.redact import redact
from mmrobust.suite.config import SuiteConfig
from mmrobust.suite.names import MAX_NAME, folder_names


@dataclass
class SuiteRun:
    """One (model, dataset, task) of a suite and how it ended.

    Attributes:
        model, data, task: what it runs (``task`` as given to ``eval``).
        run_dir: its run folder (``OUT/<model>/<dataset>/<task>``).
        media: the dataset's ``--media`` folder.
        skipped: why it was not run (not applicable: the task, or the model's media
            kinds), else ``None``.
        status: ``planned``, ``complete``, ``partial`` (rows missing: a limit of the
            server, errors), ``failed``, ``interrupted``, ``skipped`` or ``blocked`` (its
            dataset cannot be loaded: one :class:`DataFailure` for all its runs).
        error: why it failed or is blocked (one line), else ``None``.
        n_new, n_skipped: rows written by this call, rows resumed.
        headline: the run's headline score (``BenchmarkFamily.headline``), else ``None``.
        dataset: the dataset as the plan loaded it, handed to ``run_eval`` (each dataset
            is loaded once per suite), else ``None``.
        locked: it failed only because another process held its run folder (then
            ``suite.json`` says how that folder stands: :mod:`mmrobust.suite.state`).
    """

    model: str
    data: str
    task: str
    run_dir: Path
    media: str | None = None
    skipped: str | None = None
    status: str = "planned"
    error: str | None = None
    n_new: int = 0
    n_skipped: int = 0
    headline: str | None = None
    dataset: Any = field(default=None, repr=False, compare=False)
    locked: bool = False

    @property
    def label(self) -> str:
        """``model / dataset / task`` as laid out on disk."""
        return "/".join(self.run_dir.parts[-3:])

    def record(self) -> dict[str, Any]:
        """The JSON form written to ``suite.json`` (the model spec scrubbed of secrets)."""
        return {
            "model": redact(self.model),
            "data": self.data,
            "task": self.task,
            "run_dir": "/".join(self.run_dir.parts[-3:]),
            "status": self.status,
            "skipped": self.skipped,
            "error": self.error,
            "n_new": self.n_new,
            "n_skipped": self.n_skipped,
            "headline": self.headline,
        }


@dataclass(frozen=True)
class DataFailure:
    """A dataset that cannot be loaded, and the runs it blocks (one failure, not one per run).

    Attributes:
        data: the dataset as given (``--data``).
        error: why it cannot be loaded (one line).
        blocked: the labels (``model/dataset/task``) of the runs planned on it.
    """

    data: str
    error: str
    blocked: tuple[str, ...]

    def line(self) -> str:
        """``DATA: ERROR (blocks N runs: model/dataset: task, task; ...)``."""
        by_dir: dict[str, list[str]] = {}
        for label in self.blocked:
            where, _, task = label.rpartition("/")
            by_dir.setdefault(where, []).append(task)
        runs = "; ".join(f"{d}: {', '.join(tasks)}" for d, tasks in by_dir.items())
        n = len(self.blocked)
        return f"{self.data}: {self.error} (blocks {n} run{'s' if n != 1 else ''}: {runs})"

    def record(self) -> dict[str, Any]:
        """The JSON form written to ``suite.json`` (``datasets_failed``)."""
        return {"data": self.data, "error": self.error, "blocked": list(self.blocked)}


def data_failures(runs: list[SuiteRun]) -> list[DataFailure]:
    """One :class:`DataFailure` per dataset whose runs are ``blocked``, in plan order."""
    blocked: dict[str, list[SuiteRun]] = {}
    for run in runs:
        if run.status == "blocked":
            blocked.setdefault(run.data, []).append(run)
    return [
        DataFailure(data, rs[0].error or "", tuple(r.label for r in rs))
        for data, rs in blocked.items()
    ]


@dataclass(frozen=True)
class DatasetFacts:
    """What the plan learnt from loading one dataset.

    Attributes:
        name: the dataset's name (its folder name when it cannot be loaded).
        benchmark: its benchmark family, ``None`` when it cannot be loaded.
        kinds: the media kinds its samples show a model (``Sample.media_kind``;
            ``{"text"}`` under ``--text-only``).
        error: why it cannot be loaded (one line), else ``None``.
        dataset: the loaded ``Dataset`` (what every run on it evaluates), else ``None``.
    """

    name: str
    benchmark: str | None = None
    kinds: frozenset[str] = frozenset()
    error: str | None = None
    dataset: Any = field(default=None, repr=False, compare=False)


def dataset_facts(data: str, media: str | None, options: dict[str, Any]) -> DatasetFacts:
    """Load ``data`` once (as ``eval --data`` would, with ``options``' ``format`` and
    ``text_only``) and keep its facts; a dataset that cannot be loaded keeps its error."""
    from mmrobust.datasets import load_dataset
    from mmrobust.run.checks import media_kinds

    text_only = bool(options.get("text_only"))
    try:
        ds = load_dataset(data, options.get("format"), images=media, text_only=text_only)
    except (OSError, ValueError) as exc:  # DatasetError, UnknownNameError are ValueErrors
        return DatasetFacts(Path(data).name or data, error=str(exc).splitlines()[0])
    kinds = frozenset(media_kinds(ds.samples, text_only=text_only))
    return DatasetFacts(ds.name, ds.benchmark, kinds, dataset=ds)


def plan_suite(config: SuiteConfig) -> tuple[list[SuiteRun], list[str]]:
    """Every (model, dataset, task) with its run folder, and the notes on skipped runs (see
    the module docstring)."""
    from mmrobust.families import get_family
    from mmrobust.models.base import media_refusal
    from mmrobust.models.spec import media_kinds_of, parse_spec

    out = Path(config.out)
    media = config.media or [None] * len(config.data)
    facts = [dataset_facts(d, m, config.options) for d, m in zip(config.data, media, strict=True)]
    model_dirs = folder_names(config.models)
    keys = [f"{f.name}\0{data}" for f, data in zip(facts, config.data, strict=True)]
    data_dirs = _data_names(keys)
    runs: list[SuiteRun] = []
    notes: list[str] = []
    sets = list(zip(facts, config.data, media, keys, strict=True))
    for f in facts:
        if f.benchmark is not None and not get_family(f.benchmark).tamper_clips:
            asked = [t for t in config.tasks if t != "detect"]
            if asked:
                notes.append(
                    f"{f.name}: {', '.join(asked)} skipped (they ask about tampered clips; "
                    f"{f.name} is a {f.benchmark} dataset)"
                )
    for model in config.models:  # model outer: one model loaded at a time (runner._run_all)
        backend = parse_spec(model).name
        for f, data, m, key in sets:
            clips = f.benchmark is not None and get_family(f.benchmark).tamper_clips
            refusal = None
            if f.error is None:
                refusal = media_refusal(backend, media_kinds_of(backend), f.kinds, of=f.name)
                if refusal:
                    notes.append(f"{redact(model)} on {f.name}: skipped: {refusal}")
            for task in config.tasks:
                own = f.benchmark is not None and not clips and task == "detect"
                folder = f.benchmark if own and f.benchmark else task
                run = SuiteRun(
                    model, data, task, out / model_dirs[model] / data_dirs[key] / folder, m,
                    dataset=f.dataset,
                )  # fmt: skip
                if f.error is not None:
                    run.status, run.error = "blocked", f.error
                elif f.benchmark is not None and not clips and task != "detect":
                    run.status = "skipped"
                    run.skipped = (
                        f"--task {task} asks about tampered clips; {f.name} is {f.benchmark}"
                    )
                elif refusal:
                    run.status, run.skipped = "skipped", refusal
                runs.append(run)
    return runs, notes


def _data_names(keys: list[str]) -> dict[str, str]:
    """Folder names of datasets keyed ``name\\0data``: the dataset's name, made distinct."""
    names = folder_names([k.split("\0")[0] for k in keys])
    clash: dict[str, int] = {}
    for k in dict.fromkeys(keys):
        n = names[k.split("\0")[0]].lower()
        clash[n] = clash.get(n, 0) + 1
    out: dict[str, str] = {}
    for k in dict.fromkeys(keys):
        name = names[k.split("\0")[0]]
        if clash[name.lower()] > 1:  # two datasets of one name (two tamper-set/ folders)
            name = f"{name[: MAX_NAME - 9]}-{hashlib.sha256(k.encode()).hexdigest()[:8]}"
        out[k] = name
    return out


__all__ = [
    "DataFailure",
    "DatasetFacts",
    "SuiteRun",
    "data_failures",
    "dataset_facts",
    "plan_suite",
]
