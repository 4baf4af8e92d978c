"""Executors: who computes the rows of an eval (serial, a thread pool; Ray in ``distributed``).

Work is cut into :class:`WorkItem` batches (:func:`batches`) and handed to an
:class:`Executor`; executors only *compute* rows, the driver's main thread
writes them, so any executor can take any item and a crash loses nothing but
items in flight. :func:`choose_executor` is the one place the local choice is
made (threads when the model or ``--workers`` allows several calls at once,
else serial); ``--executor ray`` is :func:`mmrobust.run.eval.evaluate`'s job.
"""

from __future__ import annotations

import itertools
import queue
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from mmrobust.datasets import Sample
from mmrobust.models.base import Model
from mmrobust.run.interrupts import POLL_S
from mmrobust.store import StoredRow


@dataclass(frozen=True)
class WorkItem:
    """A batch of samples for one ``Model.generate`` call, all asked as the same repeat
    (``--repeats``; 0: the first, the only one without repeats)."""

    samples: tuple[Sample, ...]
    repeat: int = 0


def batches(samples: Iterable[Sample], size: int, *, repeat: int = 0) -> Iterator[WorkItem]:
    """Cut samples into work items of at most ``size``, each asked as ``repeat``; the samples
    are read as the items are taken (a lazy dataset is never held)."""
    size = max(1, size)
    it = iter(samples)
    while chunk := tuple(itertools.islice(it, size)):
        yield WorkItem(chunk, repeat)


def repeat_batches(todo_by_repeat: Sequence[Iterable[Sample]], size: int) -> Iterator[WorkItem]:
    """Work items of each repeat's samples (``todo_by_repeat[k]``: repeat ``k``), repeat by
    repeat: the first ask of every sample comes before any second one."""
    for k, todo in enumerate(todo_by_repeat):
        yield from batches(todo, size, repeat=k)


class Executor(Protocol):
    """Runs ``fn`` over work items, yielding rows as items complete (any order): each yield
    is the rows of one or more finished items, stored by the driver in one transaction."""

    def run(
        self, fn: Callable[[WorkItem], list[StoredRow]], items: Iterable[WorkItem]
    ) -> Iterator[list[StoredRow]]:
        """Yield the rows of ``fn(item)`` for every item (one item's or several at once)."""
        ...

    def cancel(self) -> None:
        """Stop starting new items (items in flight may finish; their results are dropped)."""
        ...


class Stoppable(Protocol):
    """An executor that can be asked to stop from a signal handler (Ctrl-C)."""

    def request_stop(self) -> None:
        """Start no new item; yield the results of the items in flight, then end.

        Signal-safe: sets a flag only (``mmrobust.run.interrupts``)."""
        ...


class SerialExecutor:
    """Runs items one after another in the calling thread."""

    def __init__(self) -> None:
        self._stop = False

    def run(
        self, fn: Callable[[WorkItem], list[StoredRow]], items: Iterable[WorkItem]
    ) -> Iterator[list[StoredRow]]:
        """Yield ``fn(item)`` for every item, in order (none after :meth:`request_stop`)."""
        for item in items:
            if self._stop:
                return
            yield fn(item)

    def request_stop(self) -> None:
        """Start no further item (signal-safe)."""
        self._stop = True

    def cancel(self) -> None:
        """Start no further item."""
        self._stop = True


class ThreadExecutor:
    """A bounded thread pool (remote models: network-bound; decoding releases the GIL).

    At most ``2 * workers`` items are submitted ahead of completion. Each yield holds the
    rows of every item finished since the last one (at least one item's), so the driver
    commits them in one transaction: with many requests in flight and a fast server one
    commit per item was a third of the driver's CPU. After :meth:`request_stop` (Ctrl-C)
    the items not started are dropped and those in flight are waited for and yielded
    (their answers are paid for).
    """

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None
        self._stop = False

    def run(
        self, fn: Callable[[WorkItem], list[StoredRow]], items: Iterable[WorkItem]
    ) -> Iterator[list[StoredRow]]:
        """Yield the rows of the items finished so far (in completion order), until every
        item is done. A failing ``fn`` raises here, after the rows of the items that
        finished before it are yielded."""
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="mmrobust")
        finished: queue.SimpleQueue[Future[list[StoredRow]]] = queue.SimpleQueue()
        pending: set[Future[list[StoredRow]]] = set()
        it = iter(items)
        try:
            while True:
                while len(pending) < 2 * self.workers and not self._stop:
                    item = next(it, None)
                    if item is None:
                        break
                    fut = self._pool.submit(fn, item)
                    pending.add(fut)
                    fut.add_done_callback(finished.put)  # a callback, not wait(): O(1) per item
                if self._stop:  # drop what has not started; the rest is in flight
                    pending = {f for f in pending if not f.cancel()}
                if not pending:
                    return
                try:
                    ready = [finished.get(timeout=POLL_S)]  # wakes to poll _stop
                except queue.Empty:
                    continue
                while True:  # and every other item that has finished meanwhile
                    try:
                        ready.append(finished.get_nowait())
                    except queue.Empty:
                        break
                rows: list[StoredRow] = []
                for fut in ready:
                    if fut not in pending:  # cancelled after request_stop
                        continue
                    pending.discard(fut)
                    try:
                        rows += fut.result()
                    except BaseException:
                        if rows:  # what finished before the failure is stored
                            yield rows
                        raise
                if rows:
                    yield rows
        finally:
            self.cancel()

    def request_stop(self) -> None:
        """Submit no further item (signal-safe: sets a flag that :meth:`run` polls)."""
        self._stop = True

    def cancel(self) -> None:
        """Drop queued items; do not wait for items in flight."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def choose_executor(model: Model, workers: int | None = None) -> Executor:
    """The local executor for ``model``: threads when ``workers`` (default: the model's
    ``max_concurrency``) is above 1, else serial."""
    n = workers or max(1, model.max_concurrency)
    return ThreadExecutor(n) if n > 1 else SerialExecutor()


def describe_executor(executor: Executor) -> dict[str, Any]:
    """The ``executor`` block of ``run.json``: the executor's ``describe()``, else its kind."""
    describe = getattr(executor, "describe", None)
    if callable(describe):
        return dict(describe())
    if isinstance(executor, ThreadExecutor):
        return {"name": "threads", "workers": executor.workers}
    return {"name": "serial" if isinstance(executor, SerialExecutor) else type(executor).__name__}


__all__ = [
    "Executor",
    "SerialExecutor",
    "Stoppable",
    "ThreadExecutor",
    "WorkItem",
    "batches",
    "choose_executor",
    "describe_executor",
    "repeat_batches",
]
