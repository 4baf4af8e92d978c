"""What a media path really is, as one true reason: :func:`path_problem`.

Shared by the video opener (``media/_open.py``), the tamper builder's source discovery and
the dataset loaders' media checks, so a named pipe, a device, a symlink loop, a link to
nothing and an unreadable file are each named for what they are (not "empty", "missing" or
"does not exist"). Nothing here reads from the file: a named pipe or ``/dev/zero`` would block
or never end; an ordinary file is opened and closed at once to learn whether it can be read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def special_kind(mode: int) -> str | None:
    """What a file of ``st_mode`` ``mode`` is when it is neither a regular file nor a folder:
    ``"a named pipe (FIFO)"``, ``"a character device"``, ``"a block device"``, ``"a socket"``
    (or ``"not a regular file"``); ``None`` for a regular file or a folder."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def os_reason(exc: OSError, path: Path) -> str:
    """The reason an ``os.stat`` / ``os.open`` of ``path`` failed, in words."""
    if exc.errno == errno.ENOENT:
        if os.path.islink(path):
            return f"is a link to {os.readlink(path)}, which does not exist"
        return "does not exist"
    if exc.errno == errno.ELOOP:
        return "is a symbolic link loop (too many levels of links)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ENOTDIR:
        return "does not exist (a part of its path is a file, not a folder)"
    return f"cannot be read: {exc.strerror or exc}"


def path_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as a media file, or ``None`` when it is a readable regular
    file (an empty one included: that is the decoder's to say). Reasons, each a phrase to follow
    the path: ``does not exist``, ``is a link to X, which does not exist``, ``is a symbolic
    link loop (...)``, ``permission denied``, ``is a folder``, ``is a named pipe (FIFO), not a
    regular file`` (also a character device such as ``/dev/zero``, a block device, a socket).
    """
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except OSError as exc:
        return os_reason(exc, p)
    if stat.S_ISDIR(mode):
        return "is a folder"
    kind = special_kind(mode)
    if kind is not None:
        return f"is {kind}, not a regular file"
    try:
        os.close(os.open(p, os.O_RDONLY))
    except OSError as exc:
        return os_reason(exc, p)
    return None


__all__ = ["os_reason", "path_problem", "special_kind"]
