"""An exclusive lock on a run folder for the duration of a run (one writer per ``--out``).

Two processes writing one run folder mix rows of two models under one
``run.json``, or pay twice for the same samples. :class:`RunLock` takes an
exclusive, non-blocking ``flock`` on ``RUN_DIR/.lock`` and writes its holder
(PID, host, start time) into it; a second process fails at once with
:class:`RunLockedError` naming the holder. The kernel drops the lock when the
holder exits, however it ends (SIGKILL included), so a stale ``.lock`` file
never blocks a later run. Everything that must not race (the same-run check,
writing ``run.json``) happens while the lock is held.

POSIX only (``fcntl``); where ``fcntl`` is missing the lock is a no-op.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".lock"


class RunLockedError(ValueError):
    """Another process holds the run folder's lock."""


class RunLock:
    """Exclusive lock on ``run_dir`` (created if missing); use as a context manager.

    Raises:
        RunLockedError: on ``acquire`` when another process (or another
            ``RunLock`` in this one) holds it; the message names the holder's PID.
        OSError: the lock file cannot be created.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        """Take the lock or raise ``RunLockedError`` at once (never waits)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _describe(_read(fd))
                os.close(fd)
                raise RunLockedError(
                    f"{self.path.parent} is in use by {holder}; wait for it to finish or "
                    "use another --out (two runs in one folder would mix their rows)"
                ) from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        except OSError:  # a full disk: the lock holds all the same, without its note
            pass
        self._fd = fd
        return self

    def release(self) -> None:
        """Drop the lock (the file stays; its content names the last holder)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _read(fd: int) -> dict[str, object]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _describe(info: dict[str, object]) -> str:
    pid = info.get("pid")
    if pid is None:
        return "another process"
    where = f" on {info['host']}" if info.get("host") else ""
    since = info.get("since")
    started = (
        f", running since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(since))}"
        if isinstance(since, (int, float))
        else ""
    )
    return f"another mmrobust process (PID {pid}{where}{started})"


__all__ = ["LOCK_FILE", "RunLock", "RunLockedError"]
