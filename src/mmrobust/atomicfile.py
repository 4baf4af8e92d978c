"""Whole-or-nothing file writes that never follow a link: :func:`atomic_write`.

The new content goes to a temporary file made next to the target by
``tempfile.mkstemp`` (``O_CREAT | O_EXCL``: a new file, never an existing
file or the target of a planted link), is flushed, and is renamed over the
target with ``os.replace``. The rename replaces a symlink at the target by
the file itself: the link's target is never opened. On any failure (a full
disk, ``ENOSPC``; an exception of the writer; Ctrl-C) the temporary file is
removed and the target is as it was, so a reader never sees half a file.

This module is the one way a file a user keeps is written: run folders, exports, reports
(Markdown, HTML, CSV, PNG), cards, suite summaries, data builds' manifests. Three shapes:

* :func:`atomic_write`: a file object to write into (text or bytes);
* :func:`write_text` / :func:`write_bytes`: a whole string or buffer;
* :func:`write_with`: a callable that writes a path itself (``fig.savefig``,
  ``frame.to_csv``, ``cv2.imwrite``), handed the temporary path, which keeps the target's
  suffix so that format-by-extension writers choose the same format.

A stream that grows by design (a JSON Lines log appended row by row) is opened by
:func:`open_append`: ``O_NOFOLLOW``, a regular file only, so a planted link is refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, overload

FILE_MODE = 0o644
"""Permissions of a written file (``mkstemp`` makes ``0600``)."""


@overload
def atomic_write(
    path: str | Path, *, binary: Literal[False] = ..., durable: bool = ...
) -> contextlib.AbstractContextManager[IO[str]]: ...


@overload
def atomic_write(
    path: str | Path, *, binary: Literal[True], durable: bool = ...
) -> contextlib.AbstractContextManager[IO[bytes]]: ...


def atomic_write(
    path: str | Path, *, binary: bool = False, durable: bool = False
) -> contextlib.AbstractContextManager[IO[Any]]:
    """A file to write ``path``'s new content into; renamed onto ``path`` when the block ends.

    Text files are UTF-8 with no newline translation (``newline=""``). ``durable`` also
    ``fsync``-s the file before the rename (it survives a power cut, not only a crash).

    Raises:
        OSError: the temporary file cannot be made (no such folder, read-only, full disk) or
            written; nothing is left behind and ``path`` is unchanged.
    """
    return _atomic(Path(path), binary, durable)


@contextlib.contextmanager
def _atomic(path: Path, binary: bool, durable: bool) -> Iterator[IO[Any]]:
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        mode, encoding, newline = ("wb", None, None) if binary else ("w", "utf-8", "")
        f: IO[Any] = os.fdopen(fd, mode, encoding=encoding, newline=newline)
        with f:
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(name, FILE_MODE)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def write_text(path: str | Path, text: str, *, durable: bool = False) -> None:
    """Write ``text`` (UTF-8, no newline translation) as the whole of ``path``, atomically.

    Raises:
        OSError: as :func:`atomic_write`; ``path`` is unchanged and no temporary is left.
    """
    with atomic_write(path, durable=durable) as f:
        f.write(text)


def write_bytes(path: str | Path, data: bytes, *, durable: bool = False) -> None:
    """Write ``data`` as the whole of ``path``, atomically (see :func:`write_text`)."""
    with atomic_write(path, binary=True, durable=durable) as f:
        f.write(data)


def write_with(
    path: str | Path, writer: Callable[[Path], object], *, durable: bool = False
) -> None:
    """Let ``writer(tmp)`` write a temporary file, then rename it onto ``path``.

    ``tmp`` is a new empty file beside ``path`` (``mkstemp``), named
    ``.<name>.<random>.tmp<suffix>`` so that it keeps ``path``'s suffix (``.png``, ``.csv``)
    for writers that choose a format by it. ``writer`` may truncate and write it by name
    (``fig.savefig(tmp)``, ``frame.to_csv(tmp)``); it must not rename or remove it.

    Raises:
        OSError: the temporary cannot be made, or the rename fails.
        Exception: whatever ``writer`` raises. Either way ``path`` is unchanged and the
            temporary is removed.
    """
    target = Path(path)
    fd, name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=f".tmp{target.suffix}"
    )
    os.close(fd)
    try:
        writer(Path(name))
        if durable:
            sync = os.open(name, os.O_RDONLY)
            try:
                os.fsync(sync)
            finally:
                os.close(sync)
        os.chmod(name, FILE_MODE)
        os.replace(name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def open_append(path: str | Path) -> IO[str]:
    """``path`` opened to append UTF-8 text (made if missing), refusing anything but a file.

    ``O_NOFOLLOW`` refuses a symlink at ``path`` (its target is never opened) and a FIFO or
    device is refused after the open, so a stream appended row by row (a JSON Lines log)
    only ever grows the regular file this tool made.

    Raises:
        OSError: ``ELOOP`` for a symlink at ``path``, ``EINVAL`` for a non-regular file, or
            the open's own error (no such folder, permission).
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_NONBLOCK", 0)  # a FIFO must not block the open
    try:
        fd = os.open(path, flags, FILE_MODE)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OSError(
                e.errno, "a link is at this name; not appending through it", str(path)
            ) from e
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "a", encoding="utf-8", newline="")
    except BaseException:
        os.close(fd)
        raise


__all__ = ["FILE_MODE", "atomic_write", "open_append", "write_bytes", "write_text", "write_with"]
