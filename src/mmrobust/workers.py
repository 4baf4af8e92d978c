"""Worker processes that end with their parent.

A process-pool worker blocks on its task queue; when the parent is killed
(SIGKILL, OOM killer, a closed terminal) nothing tells the worker, and it
keeps decoding and encoding, then waits for ever. :func:`end_with_parent` is a
pool ``initializer``: it starts a daemon thread in the worker that checks every
``POLL_S`` seconds whether the parent is still its parent and, once it is not
(the worker was re-parented to init or a sub-reaper), ends the worker at once
with ``os._exit``. Half-written outputs are temporary files the next build
removes.
"""

from __future__ import annotations

import os
import threading
import time

POLL_S = 0.5
"""Seconds between two checks of the parent (a worker outlives its parent by at most this)."""


def end_with_parent(parent_pid: int, poll_s: float = POLL_S) -> None:
    """Pool initializer: end this process soon after ``parent_pid`` stops being its parent.

    Pass ``os.getpid()`` of the process that creates the pool, e.g.
    ``ProcessPoolExecutor(initializer=end_with_parent, initargs=(os.getpid(),))``.
    """

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        os._exit(1)

    if os.getppid() != parent_pid:  # the parent is already gone
        os._exit(1)
    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


__all__ = ["POLL_S", "end_with_parent"]
