"""An exclusive lock on a run folder for the duration of a run (one writer per ``--out``).

Two processes writing one run folder mix rows of two models under one
``run.json``, or pay twice for the same samples. :class:`RunLock` takes an
exclusive, non-blocking ``flock`` on ``RUN_DIR/.lock`` and writes its holder
(PID, host, start time) into it; a second process fails at once with
:class:`RunLockedError` naming the holder. The kernel drops the lock when the
holder exits, however it ends (SIGKILL included), so a stale ``.lock`` file
never blocks a later run. Everything that must not race (the same-run check,
writing ``run.json``) happens while the lock is held.

The lock file is opened with ``O_NOFOLLOW`` and refused unless it is a regular
file with one link that is empty or holds a note mmrobust wrote (issue 27 item 5):
a ``.lock`` symlinked or hard-linked to another file is never written through,
and a file mmrobust did not create is never truncated. Every way the lock cannot
be taken (a read-only file system, a ``.lock`` that is a directory, a symlink)
is a one-line :class:`RunLockError`.

POSIX only (``fcntl``); where ``fcntl`` is missing the lock is a no-op.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import time
from pathlib import Path
from types import TracebackType

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".lock"


_NOTE_KEYS = frozenset({"pid", "host", "since"})


class RunLockError(ValueError):
    """The run folder's lock file cannot be taken (read-only, not a regular file, foreign)."""


class RunLockedError(RunLockError):
    """Another process holds the run folder's lock."""


class RunLock:
    """Exclusive lock on ``run_dir`` (created if missing); use as a context manager.

    Raises:
        RunLockedError: on ``acquire`` when another process (or another
            ``RunLock`` in this one) holds it; the message names the holder's PID.
        RunLockError: the lock file cannot be created or opened (read-only file
            system, permission), or ``.lock`` is a symlink, a directory, another
            non-regular file, a hard link, or a file mmrobust did not write.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        """Take the lock or raise ``RunLockedError`` at once (never waits)."""
        fd = self._open()
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
            os.ftruncate(fd, 0)  # _open checked the file is empty or our own note
            os.pwrite(fd, json.dumps(info).encode(), 0)
        except OSError:  # a full disk: the lock holds all the same, without its note
            pass
        self._fd = fd
        return self

    def _open(self) -> int:
        """Open (or create) the lock file without following links; refuse anything foreign."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        flags |= getattr(os, "O_CLOEXEC", 0)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise RunLockError(self._why(exc)) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise RunLockError(f"{self.path} is not a regular file; remove it")
            if st.st_nlink > 1:
                raise RunLockError(
                    f"{self.path} is a hard link to another file; remove it (mmrobust "
                    "never writes through it)"
                )
            if st.st_size and not _is_note(os.pread(fd, 4096, 0)):
                raise RunLockError(
                    f"{self.path} is not a lock file mmrobust wrote; move it away (it is "
                    "left untouched)"
                )
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _why(self, exc: OSError) -> str:
        """One line for an ``OSError`` opening the lock file."""
        if exc.errno == errno.ELOOP or self.path.is_symlink():
            return f"{self.path} is a symlink; remove it (mmrobust never writes through a link)"
        if exc.errno == errno.EISDIR or self.path.is_dir():
            return f"{self.path} is a directory, not a lock file; remove it"
        if exc.errno == errno.EROFS:
            return f"cannot lock {self.path.parent}: read-only file system; use another --out"
        reason = exc.strerror or type(exc).__name__
        return f"cannot lock {self.path.parent}: {reason} ({self.path}); use another --out"

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


def _is_note(raw: bytes) -> bool:
    """True if ``raw`` is a lock note this module writes: a JSON object of pid/host/since."""
    try:
        data = json.loads(raw)
    except ValueError:
        return False
    return isinstance(data, dict) and bool(data) and set(data) <= _NOTE_KEYS


def _describe(info: dict[str, object]) -> str:
    pid = info.get("pid")
    if pid is None:
        return "another process"
    where = f" on {info['host']}" if info.get("host") else ""
    started = _since(info.get("since"))
    return f"another mmrobust process (PID {pid}{where}{started})"


def _since(since: object) -> str:
    """``", running since <local time>"`` for a sane epoch second, else ``""`` (1e300, NaN)."""
    if isinstance(since, bool) or not isinstance(since, (int, float)):
        return ""
    try:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since))
    except (OverflowError, OSError, ValueError):
        return ""
    return f", running since {when}"


__all__ = ["LOCK_FILE", "RunLock", "RunLockError", "RunLockedError"]
