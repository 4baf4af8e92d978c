"""``ThreadExecutor``: the rows of every item that finished while the driver was busy come in
one yield (one transaction); a failing item raises after the rows of those finished before it.

A worker starts its next item only after the one it ran has finished and been handed back to
the driver's queue, so "item N started" tells a test, without sleeping, that an earlier item
is waiting for the driver.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mmrobust.runner import ThreadExecutor, WorkItem

WAIT_S = 30.0  # a condition that never comes fails the test instead of hanging it


class _Started:
    """Counts items that started; :meth:`wait_for` blocks until ``n`` have."""

    def __init__(self) -> None:
        self._n = 0
        self._cond = threading.Condition()

    def add(self) -> None:
        with self._cond:
            self._n += 1
            self._cond.notify_all()

    def wait_for(self, n: int) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: self._n >= n, WAIT_S)


def _items(n: int) -> list[WorkItem]:
    return [WorkItem(samples=(), repeat=k) for k in range(n)]  # ``repeat`` names the item


def test_items_finished_meanwhile_are_yielded_together() -> None:
    # 4 workers, 8 items submitted at once: item 0 finishes at once, items 1-3 wait for
    # ``release``, items 4-7 for ``hold``. Once 4-7 have all started, 1-3 are done.
    release, hold, started = threading.Event(), threading.Event(), _Started()

    def fn(item: WorkItem) -> Any:
        k = item.repeat
        if k >= 4:
            started.add()
            assert hold.wait(WAIT_S)
        elif k >= 1:
            assert release.wait(WAIT_S)
        return [k]

    runs = ThreadExecutor(4).run(fn, _items(8))
    try:
        assert next(runs) == [0]
        release.set()
        started.wait_for(4)
        assert sorted(next(runs)) == [1, 2, 3]  # one yield: one transaction for three items
        hold.set()
        assert sorted(k for rows in runs for k in rows) == [4, 5, 6, 7]
    finally:
        release.set()
        hold.set()


def test_a_failing_item_raises_after_the_rows_finished_before_it() -> None:
    # 3 workers, 6 items: 0 finishes at once; 1 finishes on ``ok``, then 2 fails on ``fail``;
    # 3-5 wait for ``hold`` (each started one says one more of 0-2 is done).
    ok, fail, hold, started = threading.Event(), threading.Event(), threading.Event(), _Started()

    def fn(item: WorkItem) -> Any:
        k = item.repeat
        if k == 1:
            assert ok.wait(WAIT_S)
        elif k == 2:
            assert fail.wait(WAIT_S)
            raise RuntimeError("backend exploded")
        elif k >= 3:
            started.add()
            assert hold.wait(WAIT_S)
        return [k]

    runs = ThreadExecutor(3).run(fn, _items(6))
    try:
        assert next(runs) == [0]
        ok.set()
        started.wait_for(2)  # item 1 is done
        fail.set()
        started.wait_for(3)  # item 2 has failed
        assert next(runs) == [1]  # stored before the failure is raised
        with pytest.raises(RuntimeError, match="backend exploded"):
            next(runs)
    finally:
        ok.set()
        fail.set()
        hold.set()
