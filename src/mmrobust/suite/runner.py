"""``mmrobust run``: a whole evaluation (several models x datasets x tasks) in one call.

:func:`run_suite` lays out one run folder per (model, dataset, task)::

    OUT/<model>/<dataset>/<task>/      each exactly what one ``mmrobust eval`` writes
    OUT/report/                        one report over every run folder (``build_site``)
    OUT/suite.json                     the plan and how each run ended

Each run is :func:`mmrobust.run.eval.run_eval` on an :class:`EvalConfig` that
differs from the suite's shared options only in ``model``, ``data``, ``task``
and ``out`` (nothing of eval is copied here), so each folder resumes on its own:
re-running the same command skips the finished rows of every run and asks only
what is missing. A run that fails (a dataset that cannot be loaded, a folder
holding another run, a run the stop rules aborted, a run with nothing scored)
is recorded and the next one starts; :attr:`SuiteResult.failed` names them.
Ctrl-C (:data:`mmrobust.run.interrupts.INTERRUPTS`, watched for the whole
suite) stops the run in progress the way ``eval`` does and starts no other.

Folder names: :mod:`mmrobust.suite.names` (credentials scrubbed, safe, collision-free).

Tasks: ``detect`` is a dataset's own question (MVTamperBench's yes/no
question on tamper data; the MMR pairs on MMR data, whose folder is named after
its benchmark, ``mmr``); ``type``, ``when`` and ``leading`` ask about tampered
clips and are skipped with a note on any other dataset (``SuiteRun.skipped``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from mmrobust.redact import redact
from mmrobust.run.config import EvalConfig
from mmrobust.run.interrupts import INTERRUPTS
from mmrobust.suite.names import MAX_NAME, REPORT_DIR, SUITE_FILE, folder_names


@dataclass
class SuiteConfig:
    """Everything ``mmrobust run`` takes.

    Attributes:
        models: model specs (``constant:A``, ``openai:<m>``, ``hf:<id>``), each run on every
            dataset.
        data: datasets (anything ``eval --data`` takes).
        tasks: task names (:func:`parse_tasks`).
        out: the suite folder.
        media: per dataset (same order as ``data``) its ``--media`` folder or ``None``;
            empty: none for any.
        options: every other :class:`EvalConfig` field, shared by all runs (``limit``,
            ``seed``, ``model_args``, ``frames`` ...).
        report: write ``OUT/report`` at the end.
        log_samples: write each run folder's ``samples.jsonl`` (:mod:`mmrobust.export`).
        model_args: per model spec, backend settings added to ``options["model_args"]`` (which
            every model gets): models served by different servers.
        title: the report's title.
    """

    models: list[str]
    data: list[str]
    tasks: list[str]
    out: str
    media: list[str | None] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    report: bool = True
    title: str = "mmrobust report"
    log_samples: bool = False
    model_args: dict[str, dict[str, str]] = field(default_factory=dict)

    def validate(self) -> None:
        """Check the lists and every shared option before any work.

        Raises:
            ValueError: no model, no dataset, a ``media`` list of another length than
                ``data``, an option :class:`EvalConfig` does not have, or a bad option
                (:meth:`EvalConfig.validate`).
            UnknownNameError: an unknown model backend, task or reference.
        """
        from mmrobust.demo import check_models

        if not self.models:
            raise ValueError("no --model given")
        if not self.data:
            raise ValueError("no --data given")
        if self.media and len(self.media) != len(self.data):
            raise ValueError(
                f"--media is given {len(self.media)} times for {len(self.data)} --data; give "
                "one per --data in the same order ('-' for none), or none"
            )
        known = {f.name for f in fields(EvalConfig)} - {"data", "model", "out", "task", "images"}
        unknown = sorted(set(self.options) - known)
        if unknown:
            raise ValueError(f"not an eval option: {', '.join(unknown)}")
        check_models(self.models)
        for task in self.tasks:
            self.eval_config(self.models[0], self.data[0], None, task, "x").validate()

    def eval_config(
        self, model: str, data: str, media: str | None, task: str, out: str
    ) -> EvalConfig:
        """The :class:`EvalConfig` of one run (its ``model_args``: :meth:`args_of`)."""
        options = {**self.options, "model_args": self.args_of(model)}
        return EvalConfig(data=data, model=model, out=out, task=task, images=media, **options)

    def args_of(self, model: str) -> dict[str, str]:
        """The backend settings of ``model``: the shared ones its backend takes
        (:meth:`model_args_for`), then its own."""
        return {**self.model_args_for(model), **self.model_args.get(model, {})}

    def model_args_for(self, model: str) -> dict[str, str]:
        """The shared ``--model-arg`` settings the backend of ``model`` takes.

        With models of several backends (``openai:`` beside ``hf:`` or ``forensic``), each
        gets only the keys its backend declares (``mmrobust list models``), so
        ``base_url=...`` reaches the API models and not the local ones; a key no backend of
        the suite declares is passed to every model, whose backend then rejects it (a typo
        still fails). With one backend every key is passed as given.
        """
        args: dict[str, str] = dict(self.options.get("model_args") or {})
        backends = {m.partition(":")[0] for m in self.models}
        if not args or len(backends) < 2:
            return args
        from mmrobust.catalog import models as backend_catalog

        declared = {
            b["name"]: {o["name"] for o in b["options"]}
            for b in backend_catalog()
            if b["name"] in backends
        }
        if set(declared) != backends:  # a backend the catalog does not know: pass all
            return args
        anywhere = set().union(*declared.values())
        mine = declared[model.partition(":")[0]]
        return {k: v for k, v in args.items() if k in mine or k not in anywhere}


@dataclass
class SuiteRun:
    """One (model, dataset, task) of a suite and how it ended.

    Attributes:
        model, data, task: what it runs (``task`` as given to ``eval``).
        run_dir: its run folder (``OUT/<model>/<dataset>/<task>``).
        media: the dataset's ``--media`` folder.
        skipped: why it was not run (a task that does not apply), else ``None``.
        status: ``planned``, ``complete``, ``partial`` (rows missing: a limit of the
            server, errors), ``failed``, ``interrupted`` or ``skipped``.
        error: why it failed (one line), else ``None``.
        n_new, n_skipped: rows written by this call, rows resumed.
        headline: the run's headline score (``BenchmarkFamily.headline``), else ``None``.
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


@dataclass
class SuiteResult:
    """Outcome of :func:`run_suite`.

    Attributes:
        out: the suite folder.
        runs: every planned run, skipped ones included, in plan order.
        notes: one line per dataset whose tasks were skipped or renamed.
        report_dir: ``OUT/report`` when written, else ``None``.
        site: the report's :class:`mmrobust.report.site.SitePaths`, else ``None``.
        interrupted: Ctrl-C stopped the suite.
    """

    out: Path
    runs: list[SuiteRun]
    notes: list[str]
    report_dir: Path | None = None
    site: Any = None
    interrupted: bool = False

    @property
    def failed(self) -> list[SuiteRun]:
        """The runs that failed (exit non-zero), in plan order."""
        return [r for r in self.runs if r.status == "failed"]

    @property
    def ran(self) -> list[SuiteRun]:
        """The runs that were not skipped."""
        return [r for r in self.runs if r.skipped is None]


def _dataset_facts(data: str, media: str | None, options: dict[str, Any]) -> tuple[str, str]:
    """``(name, benchmark)`` of a dataset (loaded once to learn them).

    Raises:
        as :func:`mmrobust.datasets.load_dataset`.
    """
    from mmrobust.datasets import load_dataset

    ds = load_dataset(
        data, options.get("format"), images=media, text_only=bool(options.get("text_only"))
    )
    return ds.name, ds.benchmark


def plan_suite(config: SuiteConfig) -> tuple[list[SuiteRun], list[str]]:
    """Every (model, dataset, task) with its run folder, and the notes on skipped tasks.

    A dataset that cannot be loaded becomes one failed run per model (its error kept),
    so the other datasets still run.
    """
    from mmrobust.families import get_family

    out = Path(config.out)
    media = config.media or [None] * len(config.data)
    facts: list[tuple[str, str | None, str | None]] = []  # (name, benchmark, error)
    for data, m in zip(config.data, media, strict=True):
        try:
            facts.append((*_dataset_facts(data, m, config.options), None))
        except (OSError, ValueError) as exc:  # DatasetError, UnknownNameError are ValueErrors
            facts.append((Path(data).name or data, None, str(exc).splitlines()[0]))
    model_dirs = folder_names(config.models)
    keys = [f"{name}\0{data}" for (name, _, _), data in zip(facts, config.data, strict=True)]
    data_dirs = _data_names(keys)
    runs: list[SuiteRun] = []
    notes: list[str] = []
    sets = list(zip(facts, config.data, media, keys, strict=True))
    for (name, benchmark, _), _data, _m, _key in sets:
        if benchmark is not None and not get_family(benchmark).tamper_clips:
            asked = [t for t in config.tasks if t != "detect"]
            if asked:
                notes.append(
                    f"{name}: {', '.join(asked)} skipped (they ask about tampered clips; "
                    f"{name} is a {benchmark} dataset)"
                )
    for model in config.models:  # model outer: one model loaded at a time (_run_all)
        for (name, benchmark, error), data, m, key in sets:
            clips = benchmark is not None and get_family(benchmark).tamper_clips
            for task in config.tasks:
                own = benchmark is not None and not clips and task == "detect"
                folder = benchmark if own and benchmark else task
                run = SuiteRun(
                    model, data, task, out / model_dirs[model] / data_dirs[key] / folder, m
                )
                if error is not None:
                    run.status, run.error = "failed", error
                elif benchmark is not None and not clips and task != "detect":
                    run.status = "skipped"
                    run.skipped = f"--task {task} asks about tampered clips; {name} is {benchmark}"
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


Event = Callable[[str], None]


def run_suite(
    config: SuiteConfig, *, progress: bool = True, log: Event | None = None
) -> SuiteResult:
    """Run every (model, dataset, task) of ``config`` into its run folder, then one report.

    Args:
        config: the suite.
        progress: one rich progress bar over the runs on stderr (each run's own bar is off).
        log: called with one line per finished or skipped run and each note (default: none).

    Returns:
        A :class:`SuiteResult`; ``OUT/suite.json`` holds the same plan and outcomes.

    Raises:
        ValueError, UnknownNameError: a bad option, model spec or task (before any run).
        OSError: the report cannot be written.
    """
    config.validate()
    say = log or (lambda _line: None)
    runs, notes = plan_suite(config)
    for note in notes:
        say(f"note: {note}")
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    result = SuiteResult(out, runs, notes)
    _write_suite(result)
    with INTERRUPTS.watch():  # one Ctrl-C for the whole suite: the run in progress stops
        _run_all(config, result, progress, say)
    _write_suite(result)
    done = [r.run_dir for r in result.ran if (r.run_dir / "run.json").is_file()]
    if config.report and done:
        from mmrobust.report.site import build_site

        report_dir = out / REPORT_DIR
        result.site = build_site(done, report_dir, title=config.title)
        result.report_dir = report_dir
    return result


def _run_all(config: SuiteConfig, result: SuiteResult, progress: bool, say: Event) -> None:
    """The loop of :func:`run_suite` under one progress bar."""
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    todo = [r for r in result.runs if r.status == "planned"]
    with Progress(
        TextColumn("[bold]runs[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        disable=not progress,
        transient=False,
    ) as bar:
        task = bar.add_task("", total=len(todo))
        shared = _SharedModels(config)
        try:
            for run in result.runs:
                if run.skipped:
                    continue
                if run.status == "failed":
                    say(f"failed   {run.label}: {run.error}")
                    continue
                if INTERRUPTS.requested:
                    result.interrupted = True
                    break
                bar.update(task, description=escape(run.label))
                _one(config, run, shared)
                _write_suite(result)
                say(_line(run))
                bar.advance(task)
                if run.status == "interrupted":
                    result.interrupted = True
                    break
        finally:
            shared.close()


class _KeepOpen:
    """A model handed to several :func:`run_eval` calls: everything is the model's own
    (attribute access is delegated) except ``close``, which :class:`_SharedModels` does
    once after the model's last run (``run_eval`` closes the model it is given)."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def close(self) -> None:
        """Nothing: the suite closes the model after its last run."""


class _SharedModels:
    """One loaded model at a time: the runs are planned model by model, so a model is
    loaded at its first run and closed when the next model's first run begins (a local
    checkpoint is loaded once per suite, not once per run folder)."""

    def __init__(self, config: SuiteConfig) -> None:
        self.config = config
        self.spec: str | None = None
        self.model: Any = None

    def get(self, spec: str) -> Any:
        """The model of ``spec``, loaded now if it is not the one held.

        Raises:
            as :func:`mmrobust.models.spec.load_model`.
        """
        if spec != self.spec:
            from mmrobust.models.spec import load_model

            self.close()
            self.model = load_model(spec, self.config.args_of(spec))
            self.spec = spec  # only once loaded: a failed load is tried again by the next run
        return _KeepOpen(self.model)

    def close(self) -> None:
        """Close the model held, if any."""
        if self.model is not None:
            self.model.close()
        self.model, self.spec = None, None


def _one(config: SuiteConfig, run: SuiteRun, shared: _SharedModels) -> None:
    """Run one (model, dataset, task) with :func:`run_eval`; record how it ended."""
    from mmrobust.families import get_family
    from mmrobust.run.eval import run_eval

    cfg = config.eval_config(run.model, run.data, run.media, run.task, str(run.run_dir))
    try:
        res = run_eval(cfg, progress=False, model=shared.get(run.model))
    except (OSError, ValueError, ImportError, RuntimeError) as exc:
        # RunConflictError, DatasetError, UnknownNameError are ValueErrors; RunLockedError,
        # RunFolderWriteError OSErrors or RuntimeErrors: each is this run's failure only
        run.status, run.error = "failed", (str(exc).splitlines() or [type(exc).__name__])[0]
        return
    run.n_new, run.n_skipped = res.n_new, res.n_skipped
    if config.log_samples:  # also after an interrupted run: the rows stored so far
        from mmrobust.export import SAMPLES_FILE, export_run

        export_run(run.run_dir, "jsonl", run.run_dir / SAMPLES_FILE)
    try:
        run.headline = get_family(res.metrics.get("benchmark")).headline(res.metrics)
    except (ValueError, KeyError, TypeError):
        run.headline = None
    if res.interrupted and res.aborted is None:
        run.status = "interrupted"
    elif res.aborted:
        run.status, run.error = "failed", res.aborted
    elif res.nothing_scored:
        run.status, run.error = "failed", res.nothing_scored
    else:
        run.status = "complete" if res.metrics.get("complete") else "partial"


def _line(run: SuiteRun) -> str:
    """One console line for a finished run."""
    what = f"{run.status:<8} {run.label}"
    if run.error:
        return f"{what}: {run.error}"
    return f"{what}: {run.headline or ''} ({run.n_new} new rows, {run.n_skipped} resumed)"


def _write_suite(result: SuiteResult) -> None:
    """Write ``OUT/suite.json`` (atomically: a temporary file renamed over it)."""
    path = result.out / SUITE_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(
        json.dumps(
            {
                "runs": [r.record() for r in result.runs],
                "notes": result.notes,
                "interrupted": result.interrupted,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    tmp.replace(path)


__all__ = [
    "SuiteConfig",
    "SuiteResult",
    "SuiteRun",
    "plan_suite",
    "run_suite",
]
