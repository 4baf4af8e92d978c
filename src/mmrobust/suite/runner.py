"""``mmrobust run``: a whole evaluation (several models x datasets x tasks) in one call.

:func:`run_suite` lays out one run folder per (model, dataset, task)::

    OUT/<model>/<dataset>/<task>/      each exactly what one ``mmrobust eval`` writes
    OUT/report/                        one report over every run folder (``build_site``)
    OUT/suite.json                     the plan and how each run ended, and the runs of
                                       earlier commands (:mod:`mmrobust.suite.state`); the
                                       suite file (``config``) when there is one
    OUT/report/suite.yaml              the suite file (``mmrobust run --config``), a panel too

Each run is :func:`mmrobust.run.eval.run_eval` on an :class:`EvalConfig` that
differs from the suite's shared options only in ``model``, ``data``, ``task``
and ``out`` (nothing of eval is copied here), so each folder resumes on its own:
re-running the same command skips the finished rows of every run and asks only
what is missing. A run that fails (a folder holding another run, a run the stop
rules aborted, a run with nothing scored) is recorded and the next one starts;
:attr:`SuiteResult.failed` names them. A dataset that cannot be loaded is loaded
(tried) once, and is one failure naming the runs it blocks
(:attr:`SuiteResult.data_failures`).
Ctrl-C (:data:`mmrobust.run.interrupts.INTERRUPTS`, watched for the whole
suite) stops the run in progress the way ``eval`` does and starts no other.

The plan (:mod:`mmrobust.suite.plan`): folder names, and the runs skipped with a note
(``SuiteRun.skipped``). Tasks: ``detect`` is a dataset's own question (MVTamperBench's
yes/no question on tamper data; the MMR pairs on MMR data, whose folder is named after its
benchmark, ``mmr``); ``type``, ``when`` and ``leading`` ask about tampered clips and are
skipped on any other dataset. A model that takes no media of a dataset's kind (``forensic``,
video only, on MMR's images) is skipped on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.atomicfile import write_text
from mmrobust.run.interrupts import INTERRUPTS
from mmrobust.suite.config import SuiteConfig
from mmrobust.suite.finished import finished_run
from mmrobust.suite.names import REPORT_DIR, SUITE_FILE
from mmrobust.suite.plan import DataFailure, SuiteRun, data_failures, plan_suite
from mmrobust.suite.state import merge_records, report_folders, suite_lock


@dataclass
class SuiteResult:
    """Outcome of :func:`run_suite`.

    Attributes:
        out: the suite folder.
        runs: every planned run, skipped ones included, in plan order.
        notes: one line per dataset whose tasks were skipped, and per (model, dataset)
            skipped for its media kinds.
        report_dir: ``OUT/report`` when written, else ``None``.
        site: the report's :class:`mmrobust.report.site.SitePaths`, else ``None``.
        interrupted: Ctrl-C stopped the suite.
        earlier: the complete runs of earlier commands the report covers too (labels).
    """

    out: Path
    runs: list[SuiteRun]
    notes: list[str]
    report_dir: Path | None = None
    site: Any = None
    interrupted: bool = False
    earlier: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[SuiteRun]:
        """The runs that failed (exit non-zero), in plan order."""
        return [r for r in self.runs if r.status == "failed"]

    @property
    def data_failures(self) -> list[DataFailure]:
        """The datasets that cannot be loaded, each with the runs it blocks (exit non-zero)."""
        return data_failures(self.runs)

    @property
    def blocked(self) -> list[SuiteRun]:
        """The runs not started because their dataset cannot be loaded."""
        return [r for r in self.runs if r.status == "blocked"]

    @property
    def ran(self) -> list[SuiteRun]:
        """The runs that were not skipped (blocked ones included)."""
        return [r for r in self.runs if r.skipped is None]


Event = Callable[[str], None]


def run_suite(
    config: SuiteConfig, *, progress: bool = True, log: Event | None = None
) -> SuiteResult:
    """Run every (model, dataset, task) of ``config`` into its run folder, then one report.

    Args:
        config: the suite.
        progress: one rich progress bar over the runs on stderr (each run's own bar is off).
        log: called with each note, one line per dataset that cannot be loaded (naming
            the runs it blocks) and one per finished run (default: none).

    Returns:
        A :class:`SuiteResult`; ``OUT/suite.json`` holds the same plan and outcomes.

    Raises:
        ValueError, UnknownNameError: a bad option, model spec or task, or nothing applies
            (every run is skipped: a task or a model's media kinds), before any run.
        OSError: the report cannot be written.
    """
    config.validate()
    say = log or (lambda _line: None)
    repeats = config.drop_repeats()
    runs, notes = plan_suite(config)
    if runs and all(r.status == "skipped" for r in runs):
        raise ValueError(
            f"nothing to run: every (model, dataset, task) is skipped as not applicable "
            f"({'; '.join(notes)})"
        )
    notes = repeats + notes
    for note in notes:
        say(f"note: {note}")
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    result = SuiteResult(out, runs, notes)
    for failure in result.data_failures:
        say(f"failed   {failure.line()}")
    _write_suite(result, config.file)
    with INTERRUPTS.watch():  # one Ctrl-C for the whole suite: the run in progress stops
        _run_all(config, result, progress, say)
    with suite_lock(out):  # suite.json and the report from the run folders, one writer at once
        records = _write_suite(result, config.file, locked=False)
        done, earlier = report_folders(out, records)
        if earlier:
            shown = ", ".join(earlier[:5]) + (
                f" and {len(earlier) - 5} more" if len(earlier) > 5 else ""
            )
            say(
                f"note: {len(earlier)} complete run(s) in {out} from an earlier (or concurrent) "
                f"command {'are' if config.report else 'would be'} in the report too: {shown} "
                '("this_command": false in suite.json; remove a run folder to leave it out)'
            )
        result.earlier = earlier
        if config.report and done:
            from mmrobust.report.site import build_site
            from mmrobust.suite.reproduce import reproduce_section

            report_dir = out / REPORT_DIR
            extra = [reproduce_section(config.file, report_dir)] if config.file else []
            result.site = build_site(done, report_dir, title=config.title, sections=extra)
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
        shared = _SharedModels(config, _suite_cache(config, todo))
        try:
            for run in result.runs:
                if run.status != "planned":  # skipped, or blocked (said once per dataset)
                    continue
                if INTERRUPTS.requested:
                    result.interrupted = True
                    break
                bar.update(task, description=escape(run.label))
                _one(config, run, shared)
                _write_suite(result, config.file)
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

    def __init__(self, config: SuiteConfig, cache: Any = None) -> None:
        self.config = config
        self.spec: str | None = None
        self.model: Any = None
        self.cache = cache  # the suite's scratch frame cache (persistent cache off), or None

    def get(self, spec: str) -> Any:
        """The model of ``spec``, loaded now if it is not the one held.

        Raises:
            as :func:`mmrobust.models.spec.load_model`.
        """
        if spec != self.spec:
            from mmrobust.models.spec import load_model

            self._close_model()
            self.model = load_model(spec, self.config.args_of(spec))
            self.spec = spec  # only once loaded: a failed load is tried again by the next run
        return _KeepOpen(self.model)

    def _close_model(self) -> None:
        if self.model is not None:
            self.model.close()
        self.model, self.spec = None, None

    def close(self) -> None:
        """Close the model held, if any; remove the suite's scratch frame cache."""
        self._close_model()
        if self.cache is not None:
            self.cache.cleanup()
            self.cache = None


def _suite_cache(config: SuiteConfig, todo: list[SuiteRun]) -> Any:
    """A :class:`~mmrobust.media.cache.ScratchFrameCache` for the whole suite when the options
    turn the persistent frame cache off (else ``None``: each run uses the persistent one), so
    each (clip, frame selection, encoding) is decoded once per suite, not once per question."""
    from mmrobust.run.config import frame_cache, scratch_size

    if not todo:
        return None
    first = todo[0]
    cfg = config.eval_config(first.model, first.data, first.media, first.task, str(first.run_dir))
    if cfg.text_only or frame_cache(cfg) is not None:
        return None
    from mmrobust.media.cache import ScratchFrameCache

    return ScratchFrameCache(scratch_size(cfg))


def _one(config: SuiteConfig, run: SuiteRun, shared: _SharedModels) -> None:
    """Run one (model, dataset, task) with :func:`run_eval`; record how it ended."""
    from mmrobust.run.eval import run_eval

    cfg = config.eval_config(run.model, run.data, run.media, run.task, str(run.run_dir))
    done = finished_run(cfg, run.dataset) if run.dataset is not None else None
    if done is not None:  # nothing left to ask: no model loaded, the folder as it stands
        run.n_new, run.n_skipped, run.status = 0, done.n_rows, "complete"
        run.headline = _headline(done.metrics)
        if config.log_samples:
            from mmrobust.export import SAMPLES_FILE, export_run

            export_run(run.run_dir, "jsonl", run.run_dir / SAMPLES_FILE)
        return
    try:
        res = run_eval(
            cfg,
            progress=False,
            model=shared.get(run.model),
            dataset=run.dataset,
            cache=shared.cache,
        )
    except (OSError, ValueError, ImportError, RuntimeError) as exc:
        # RunConflictError, DatasetError, UnknownNameError, RunLockedError are ValueErrors;
        # RunFolderWriteError OSErrors or RuntimeErrors: each is this run's failure only
        from mmrobust.runlock import RunLockedError

        run.status, run.error = "failed", (str(exc).splitlines() or [type(exc).__name__])[0]
        run.locked = isinstance(exc, RunLockedError)
        return
    run.n_new, run.n_skipped = res.n_new, res.n_skipped
    if config.log_samples:  # also after an interrupted run: the rows stored so far
        from mmrobust.export import SAMPLES_FILE, export_run

        export_run(run.run_dir, "jsonl", run.run_dir / SAMPLES_FILE)
    run.headline = _headline(res.metrics)
    if res.interrupted and res.aborted is None:
        run.status = "interrupted"
    elif res.aborted:
        run.status, run.error = "failed", res.aborted
    elif res.nothing_scored:
        run.status, run.error = "failed", res.nothing_scored
    else:
        run.status = "complete" if res.metrics.get("complete") else "partial"


def _headline(metrics: dict[str, Any]) -> str | None:
    """The family's headline of a run's metrics, or ``None``."""
    from mmrobust.families import get_family

    try:
        return str(get_family(metrics.get("benchmark")).headline(metrics))
    except (ValueError, KeyError, TypeError):
        return None


def _line(run: SuiteRun) -> str:
    """One console line for a finished run."""
    what = f"{run.status:<8} {run.label}"
    if run.error:
        return f"{what}: {run.error}"
    return f"{what}: {run.headline or ''} ({run.n_new} new rows, {run.n_skipped} resumed)"


def _write_suite(
    result: SuiteResult, file: dict[str, Any] | None = None, *, locked: bool = True
) -> list[dict[str, Any]]:
    """Rewrite ``OUT/suite.json`` from the run folders (:func:`merge_records`), atomically (a
    temporary file renamed over it), under the suite lock (``locked``: take it here; else
    the caller holds it); ``file``: the suite file (scrubbed), stored as ``config``. Returns
    the records written."""
    if locked:
        with suite_lock(result.out):
            return _write_suite(result, file, locked=False)
    records = merge_records(result.out, result.runs)
    record: dict[str, Any] = {
        "runs": records,
        "datasets_failed": [f.record() for f in result.data_failures],
        "notes": result.notes,
        "interrupted": result.interrupted,
    }
    if file is not None:
        record["config"] = file
    text = json.dumps(record, indent=2)
    write_text(result.out / SUITE_FILE, text + "\n")  # never through a link at suite.json
    return records


__all__ = [
    "DataFailure",
    "SuiteConfig",
    "SuiteResult",
    "SuiteRun",
    "plan_suite",
    "run_suite",
]
