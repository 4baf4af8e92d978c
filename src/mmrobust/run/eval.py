"""``mmrobust eval``: run a dataset through a model into the results store, then score it.

Flow (DESIGN.md): ``Sample`` -> prompt -> ``Request`` (text + frames) ->
``Model.generate`` -> extraction -> ``StoredRow`` (committed at once) ->
metrics over the stored rows -> ``run.json`` / ``metrics.json``.

:func:`evaluate` is the library call behind the command: it validates the
options, then runs locally (:func:`run_eval`, serial or threads) or with the
model in Ray replicas (``mmrobust.distributed.eval``). The driver
(:func:`_drive`) stores each row the moment it arrives and applies the stop
rules (``mmrobust.run.process.StopRules``).

* Ctrl-C cancels pending work, keeps every row already written and still
  writes ``metrics.json`` for what finished (``RunResult.interrupted``).
* Re-running the same command skips finished rows (resume).
"""

from __future__ import annotations

import itertools
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrobust import __version__
from mmrobust.datasets import Dataset, Sample, load_dataset
from mmrobust.judge import Judge, load_judge
from mmrobust.models.base import Model
from mmrobust.run.checks import (
    check_answerable,
    check_same_run,
    greedy_repeats,
    nothing_scored_counts,
    refusal,
    resolved,
    selected,
    unfinished_repeats,
)
from mmrobust.run.config import EvalConfig, frame_cache
from mmrobust.run.executors import (
    Executor,
    WorkItem,
    choose_executor,
    describe_executor,
    repeat_batches,
)
from mmrobust.run.folder import DatasetInfo, RunInfo, write_metrics, write_run_info
from mmrobust.run.interrupts import INTERRUPTS
from mmrobust.run.keys import config_record, git_sha, run_block, run_key, versions
from mmrobust.run.process import ABORT_AFTER, RunAborted, SampleProcessor, StopRules, score_rows
from mmrobust.runlock import LOCK_FILE, RunLock
from mmrobust.status import Status
from mmrobust.store import ResultStore, RunFolderWriteError, RunKey, StoredRow

if TYPE_CHECKING:
    from mmrobust.distributed import RayOptions
    from mmrobust.media.cache import FrameCache


@dataclass
class RunResult:
    """Outcome of :func:`run_eval`.

    Attributes:
        run_dir: the run folder.
        metrics: the contents of ``metrics.json``.
        n_total: questions to ask: samples selected (times ``--repeats``).
        n_skipped: of those, already finished (resumed).
        n_new: rows written by this call.
        interrupted: the run stopped early (Ctrl-C, or aborted).
        aborted: why the runner stopped by itself (consecutive transient failures), else ``None``.
        first_error: ``status: error`` of the first failed row, if any (for the console).
        nothing_scored: why not one selected sample got a scored answer (every
            row failed or was unparseable), else ``None``; the CLI exits non-zero.
    """

    run_dir: Path
    metrics: dict[str, Any]
    n_total: int
    n_skipped: int
    n_new: int
    interrupted: bool = False
    aborted: str | None = None
    first_error: str | None = None
    nothing_scored: str | None = None


def evaluate(
    config: EvalConfig, *, ray: RayOptions | None = None, progress: bool = True
) -> RunResult:
    """``mmrobust eval``: validate ``config``, then run it locally or on Ray (``ray``).

    Whatever the executor, the dataset is loaded once here and the run is refused before
    any model is loaded elsewhere, any Ray cluster contacted or any request sent when the
    model can answer none of the samples (:func:`check_answerable`), or, on Ray, when a
    setting holds a password (``models.credentials.ray_refusal``). The local executor is
    chosen by :func:`mmrobust.run.executors.choose_executor`.

    Raises:
        as :func:`run_eval` (and, with ``ray``, ``mmrobust.distributed.eval.run_eval_ray``).
    """
    config.validate()
    if ray is not None:
        from mmrobust.models.credentials import ray_refusal

        why = ray_refusal(config.model_args, config.judge_args)
        if why:  # before the cluster is contacted: Ray would store the settings with its tasks
            raise ValueError(why)
    dataset = load_dataset(
        config.data, config.format, images=config.images, text_only=config.text_only
    )
    check_answerable(config, dataset)
    if ray is None:
        return run_eval(config, progress=progress, dataset=dataset)
    from mmrobust.distributed import RAY_RUNNERS  # Ray-free; the Ray path named lazily

    result: RunResult = RAY_RUNNERS.get("eval")(config, ray, progress=progress, dataset=dataset)
    return result


def run_eval(
    config: EvalConfig,
    *,
    progress: bool = True,
    model: Model | None = None,
    executor: Executor | None = None,
    dataset: Dataset | None = None,
    cache: FrameCache | None = None,
) -> RunResult:
    """Evaluate ``config.model`` on ``config.data``; write the run folder; return the metrics.

    Args:
        config: the run configuration.
        progress: show a rich progress bar with ETA on stderr.
        model: an already-built model (else built from ``config.model``).
        dataset: ``config.data`` already loaded with ``config.format``, ``config.images``
            and ``config.text_only`` (``mmrobust run`` loads each dataset once for all its
            runs); else loaded here.
        executor: runs the work items (default: :func:`choose_executor`); ``run.json``
            records its ``describe()`` under ``executor``.
        cache: the frame cache to use (``mmrobust run`` hands its runs its own when the
            persistent one is off); else the one ``--cache-dir`` / ``--cache-size`` describe.

    Returns:
        A :class:`RunResult`; ``metrics.json``, ``run.json`` and ``results.sqlite``
        are in ``config.out``.

    Ctrl-C (``mmrobust.run.interrupts``): the first SIGINT stops handing out
    work, stores the rows in flight, writes ``metrics.json`` and ``run.json``
    (``interrupted``, ``complete: false``) and returns with ``interrupted`` set;
    a second one raises ``KeyboardInterrupt`` at once.

    Raises:
        FileNotFoundError, DatasetError, UnknownNameError: the dataset cannot be loaded.
        ValueError, UnknownNameError: bad model spec or options.
        RunLockedError: another process is running in ``config.out``.
        RunFolderWriteError: ``config.out`` cannot be written (full disk); rows
            committed before are kept and a re-run resumes.
    """
    config.validate()  # every option fails before any work
    with INTERRUPTS.watch():  # Ctrl-C from here on ends with metrics.json and run.json
        return _run_eval(
            config, progress=progress, model=model, executor=executor, dataset=dataset, cache=cache
        )


def _run_eval(
    config: EvalConfig,
    *,
    progress: bool,
    model: Model | None,
    executor: Executor | None,
    dataset: Dataset | None = None,
    cache: FrameCache | None = None,
) -> RunResult:
    """The body of :func:`run_eval`, with SIGINT owned by ``INTERRUPTS``."""
    from mmrobust.models.spec import load_model

    policy, pconf = config.policy(), config.prompt_config()
    if dataset is None:
        dataset = load_dataset(
            config.data, config.format, images=config.images, text_only=config.text_only
        )
    dataset, samples = selected(config, dataset)
    run_dir = Path(config.out)
    created = not run_dir.exists()
    made = [p for p in (run_dir, *run_dir.parents) if not p.exists()]  # deepest first
    lock = RunLock(run_dir).acquire()  # one process per run folder, from here to the end
    try:
        model = model or load_model(config.model, config.model_args)
        why = refusal(model, samples, config)  # said before any request (evaluate asked first)
        if why:
            model.close()
            raise ValueError(why)
        judge = load_judge(config.judge, config.judge_args) if config.judge else None
        key = run_key(model, pconf, policy, text_only=config.text_only, task=config.task)
        greedy_repeats(config.repeats, model)  # warns: K asks of one greedy answer
        check_same_run(run_dir, key, dataset)  # under the lock: no other run can slip in
        return _evaluate(
            config,
            dataset,
            samples,
            model,
            judge,
            key,
            progress=progress,
            executor=executor,
            cache=cache,
        )
    finally:
        lock.release()
        if created and {p.name for p in run_dir.iterdir()} <= {LOCK_FILE}:
            shutil.rmtree(run_dir, ignore_errors=True)  # nothing was run: leave no folder
            for parent in made[1:]:  # nor the folders made to hold it (OUT/model/dataset)
                try:
                    parent.rmdir()
                except OSError:  # not empty: something else is in it
                    break


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _evaluate(
    config: EvalConfig,
    dataset: Dataset,
    samples: Sequence[Sample],
    model: Model,
    judge: Judge | None,
    key: RunKey,
    *,
    progress: bool,
    executor: Executor | None = None,
    cache: FrameCache | None = None,
) -> RunResult:
    """The body of :func:`run_eval`, run while the run folder's lock is held."""
    policy = config.policy()
    run_dir = Path(config.out)
    cache = cache if cache is not None else frame_cache(config)
    executor = executor or choose_executor(model, config.workers)
    info = RunInfo(
        mmrobust_version=__version__,
        config=config_record(config),
        dataset=DatasetInfo.model_validate(
            {
                "name": dataset.name,
                "benchmark": dataset.benchmark,
                "source": resolved(dataset.source),
                "data_hash": dataset.data_hash,
                "n_samples": len(dataset.samples),
                "n_selected": len(samples),
                "defects": list(dataset.defects),
                **dataset.info,  # the loader's own keys (as before: they win)
            }
        ),
        key=key,
        run={
            **run_block(config, model, dataset.benchmark),
            "judge": judge.describe() if judge else None,
        },
        policy=asdict(policy),
        seeds={"seed": config.seed, "bootstrap_seed": config.seed},
        versions=versions(),
        git_sha=git_sha(),
        started_at=_now(),
        executor=describe_executor(executor),
    )
    write_run_info(run_dir, info)

    store = ResultStore(run_dir)
    interrupted = False
    aborted: str | None = None
    try:
        todo_by_repeat = unfinished_repeats(
            store, key, samples, config.repeats, retry_failed=config.retry_failed
        )
        n_todo = sum(len(t) for t in todo_by_repeat)
        processor = SampleProcessor(
            model,
            key,
            prompt_config=config.prompt_config(),
            policy=policy,
            extract_mode=config.extract_mode(),
            text_only=config.text_only,
            cache=cache,
            judge=judge,
            reference=config.reference,
        )
        written: list[int] = [0]
        try:
            label = (
                f"{config.model} on {dataset.name}"
                + (f" --task {config.task}" if config.task != "detect" else "")
                + (" (text only)" if config.text_only else "")
            )
            items = repeat_batches([] if INTERRUPTS.requested else todo_by_repeat, model.batch_size)
            _drive(executor, processor, items, store, n_todo, progress, written, label=label)
        except KeyboardInterrupt:  # a second Ctrl-C, or no handler (not the main thread)
            executor.cancel()
            if INTERRUPTS.count > 1:
                raise
            interrupted = True
        except RunAborted as exc:
            executor.cancel()
            interrupted = True
            aborted = str(exc)
        except RunFolderWriteError:  # full disk: stop now; committed rows are intact
            executor.cancel()
            raise
        interrupted = interrupted or INTERRUPTS.requested
        store.set_selection(key, (s.id for s in samples))  # what rescore/report score
        counts, first, failed = store.outcome(key, selected=True, repeats=config.repeats)
        n_rows = sum(counts.values())
        metrics = score_rows(  # streamed from the store in sample-id order
            store.iter_rows(key, selected=True, by_sample=True, repeats=config.repeats),
            benchmark=dataset.benchmark,
            failures=config.failures(),
            n_resamples=config.n_resamples,
            seed=config.seed,
            defects=dataset.defects,
            extract_mode=config.extract_mode(),
            repeats=config.repeats,
            ordered=True,
        )
        metrics["run"] = info.run
        info.aborted = aborted
        info.n_rows = n_rows
        info.n_new = written[0]
        info.executor = describe_executor(executor)
        info.frame_cache = cache.stats() if cache is not None else None
        n_asks = len(samples) * config.repeats
        _finish(run_dir, info, metrics, interrupted=interrupted, complete=n_rows == n_asks)
        if INTERRUPTS.requested and not interrupted:  # Ctrl-C while the files were written
            interrupted = True
            _finish(run_dir, info, metrics, interrupted=True, complete=False)
    finally:
        store.close()
        model.close()
    return RunResult(
        run_dir,
        metrics,
        len(samples) * config.repeats,
        len(samples) * config.repeats - n_todo,
        written[0],
        interrupted,
        aborted,
        f"{failed.status.value}: {failed.error}" if failed is not None else None,
        None if interrupted else nothing_scored_counts(counts, first),
    )


def _finish(
    run_dir: Path, info: RunInfo, metrics: dict[str, Any], *, interrupted: bool, complete: bool
) -> None:
    """Write ``metrics.json`` then ``run.json`` with how the run ended (``complete``: every
    selected sample has a row and nothing interrupted the run)."""
    metrics["complete"] = complete and not interrupted
    write_metrics(run_dir, metrics)
    info.finished_at = _now()
    info.interrupted = interrupted
    info.complete = metrics["complete"]
    write_run_info(run_dir, info)


def _drive(
    executor: Executor,
    processor: SampleProcessor,
    items: Iterable[WorkItem],
    store: ResultStore,
    total: int,
    progress: bool,
    written: list[int],
    *,
    label: str = "eval",
) -> None:
    """Run items through the executor and store the rows of each result it yields (those of
    every item finished since the last; a Ray run: one block's) in one transaction at once;
    ``written[0]`` counts rows.

    ``label`` names the bar (the model and the dataset), so several runs in one log stay apart.

    Raises:
        RunAborted: a stop rule fired (``StopRules``: ``ABORT_AFTER`` or twice the
            workers consecutive transient failures, a dead judge, a server limit).
    """
    stops = StopRules(max(ABORT_AFTER, 2 * getattr(executor, "workers", 1)))
    stop_hook = getattr(executor, "request_stop", None)  # Ctrl-C: no new work, keep in flight
    remove = INTERRUPTS.on_request(stop_hook) if callable(stop_hook) else (lambda: None)
    items = itertools.takewhile(lambda _item: not INTERRUPTS.requested, items)  # any executor
    try:
        _consume(executor, processor, items, store, total, progress, written, label, stops)
    finally:
        remove()


def _consume(
    executor: Executor,
    processor: SampleProcessor,
    items: Iterable[WorkItem],
    store: ResultStore,
    total: int,
    progress: bool,
    written: list[int],
    label: str,
    stops: StopRules,
) -> None:
    """The loop of :func:`_drive`: store each row, advance the bar, apply the stop rules."""
    from rich.markup import escape
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[bold]{task.description}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[errors]} failed"),
        disable=not progress,
        transient=False,
    ) as bar:
        task = bar.add_task(escape(label), total=total, errors=0)
        failed = 0
        for rows in executor.run(processor, items):
            ready: list[StoredRow] = []  # rows admitted before a stop rule fires are stored
            try:
                for row in rows:
                    ready += stops.admit(row, written[0] + len(ready))
            finally:  # up to the row that completes a failure streak: check() stops there
                failed += _store(store, ready[: stops.stop_point(ready)], written, stops)
            bar.update(task, advance=len(rows), errors=failed)
            stops.check(written[0])
        if not INTERRUPTS.requested:  # after Ctrl-C held rows are dropped: asked again
            # rows held by the server-limit rule
            failed += _store(store, stops.flush(written[0]), written, stops)


def _store(store: ResultStore, rows: list[StoredRow], written: list[int], stops: StopRules) -> int:
    """Commit ``rows`` in one transaction (one yield of the executor), count them; return
    how many failed."""
    store.put_many(rows)
    written[0] += len(rows)
    for row in rows:
        stops.stored(row)
    return sum(row.status is not Status.OK for row in rows)


__all__ = ["RunResult", "check_answerable", "evaluate", "run_eval", "selected"]
