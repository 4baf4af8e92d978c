"""Ctrl-C while the ``mmrobust`` command is still starting (importing its libraries).

Python's default SIGINT handler raises ``KeyboardInterrupt`` inside whatever import is
running, so a Ctrl-C in the first second or two of ``mmrobust ...`` printed a 10-25 line
traceback from typer or pydantic. Nothing has been read or written then, so when this
process is the ``mmrobust`` command (the console script, or ``python -m mmrobust.cli``: read
from ``sys.orig_argv``, never when a program imports :mod:`mmrobust.cli`), a Ctrl-C before
:func:`started` prints one line and exits 130 at once. :func:`install` runs when
:mod:`mmrobust.cli` imports this module, first; :func:`started` (called by
``mmrobust.cli.main`` before the command runs) gives SIGINT back to Python's handler.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

LINE = b"interrupted: stopped while starting; nothing was read or written\n"


def _is_the_command(argv: list[str]) -> bool:
    """Whether ``argv`` (``sys.orig_argv``) runs the ``mmrobust`` command itself."""
    if len(argv) >= 2 and os.path.basename(argv[1]) == "mmrobust":
        return True
    return len(argv) >= 3 and argv[1] == "-m" and argv[2] == "mmrobust.cli"


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    os.write(2, LINE)
    os._exit(130)


def install() -> None:
    """Take SIGINT for the start-up, when this process is the command and Python's default
    handler is in place (main thread only)."""
    if (
        _is_the_command(list(getattr(sys, "orig_argv", [])))
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        signal.signal(signal.SIGINT, _on_sigint)


def started() -> None:
    """The command starts: SIGINT is Python's again (``KeyboardInterrupt``), if it was ours."""
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is _on_sigint
    ):
        signal.signal(signal.SIGINT, signal.default_int_handler)


install()  # on import: mmrobust.cli imports this module before anything heavy

__all__ = ["LINE", "install", "started"]
