"""Whole-or-nothing file writes that never follow a link: :func:`atomic_write`.

The new content goes to a temporary file made next to the target by
``tempfile.mkstemp`` (``O_CREAT | O_EXCL``: a new file, never an existing
file or the target of a planted link), is flushed, and is renamed over the
target with ``os.replace``. The rename replaces a symlink at the target by
the file itself: the link's target is never opened. On any failure (a full
disk, ``ENOSPC``; an exception of the writer; Ctrl-C) the temporary file is
removed and the target is as it was, so a reader never sees half a file.

Used by ``mmrobust export`` and the tamper builder's manifests.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
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


__all__ = ["FILE_MODE", "atomic_write"]
