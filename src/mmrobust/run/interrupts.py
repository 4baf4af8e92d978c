"""Ctrl-C during an eval: the first SIGINT asks the run to stop, the second ends it at once.

Python's default SIGINT handler raises ``KeyboardInterrupt`` wherever the
main thread happens to be: inside a SQLite commit, inside the thread pool's
shutdown, while the frame decoder holds a lock, before ``metrics.json`` is
written, in the handler of an earlier exception. Each of those lost the
finished work's metrics (issue 27 item 2: 7 of 13 interrupts exited 130
with no ``metrics.json``). So while an eval runs, :data:`INTERRUPTS` owns
SIGINT (main thread only):

* the first SIGINT only sets a flag (:attr:`Interrupts.requested`) and calls
  the stop hooks registered with :meth:`Interrupts.on_request`; each hook must
  be signal-safe (set a flag; take no lock, since the handler runs in the
  main thread between two bytecodes, possibly while it holds that lock);
* executors stop handing out work when they see the flag (they poll it at
  least every ``POLL_S`` seconds), the driver stores the rows that arrive,
  then writes ``metrics.json`` and ``run.json`` marked ``interrupted`` and
  ``complete: false`` (exit 130);
* a second SIGINT restores Python's default handler and raises
  ``KeyboardInterrupt`` at once (the rows already committed stay committed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

NOTICE = (
    "\ninterrupt: no new requests; storing those in flight, then writing metrics.json "
    "(Ctrl-C again to stop at once)\n"
)
"""Written to stderr at the first SIGINT."""

POLL_S = 0.2
"""Seconds an executor waits for results before it looks at the stop flag again."""


class Interrupts:
    """The process's SIGINT while an eval runs (see module docstring); use :data:`INTERRUPTS`."""

    def __init__(self) -> None:
        self.count = 0
        self._hooks: list[Callable[[], None]] = []
        self._depth = 0
        self._previous: Any = None
        self._installed = False

    @property
    def requested(self) -> bool:
        """A SIGINT arrived since the outermost :meth:`watch` began."""
        return self.count > 0

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count > 1:  # the second Ctrl-C: end now
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt
        for hook in list(self._hooks):
            hook()
        with contextlib.suppress(OSError):  # os.write is signal-safe; print could wait on
            os.write(2, NOTICE.encode())  # a lock the interrupted main thread holds

    def on_request(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Call ``hook`` (signal-safe: sets a flag only) at the first SIGINT; returns the
        function that removes it again."""
        self._hooks.append(hook)
        if self.requested:
            hook()

        def remove() -> None:
            if hook in self._hooks:
                self._hooks.remove(hook)

        return remove

    @contextmanager
    def watch(self) -> Iterator[Interrupts]:
        """Own SIGINT for the block (nested blocks share the outermost's state; outside the
        main thread nothing is installed: a signal reaches only the main thread)."""
        outermost = self._depth == 0
        if outermost:
            self.count = 0
            if threading.current_thread() is threading.main_thread():
                self._previous = signal.getsignal(signal.SIGINT)
                signal.signal(signal.SIGINT, self._handle)
                self._installed = True
        self._depth += 1
        try:
            yield self
        finally:
            self._depth -= 1
            if outermost:
                if self._installed:
                    previous = self._previous
                    signal.signal(signal.SIGINT, previous or signal.default_int_handler)
                    self._installed = False
                self._hooks.clear()


INTERRUPTS = Interrupts()
"""The one instance (signal handlers are per process)."""


__all__ = ["INTERRUPTS", "NOTICE", "POLL_S", "Interrupts"]
