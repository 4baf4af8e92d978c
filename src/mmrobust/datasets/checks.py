"""Checks every loader shares: what a path on disk really is, and how options get their letters.

Pure functions returning a one-line reason (or ``None`` when all is well), so
loaders turn them into a ``DatasetError`` for the dataset as a whole or a
sample's ``error`` / a record defect for one record. None of them reads a
file: a named pipe (FIFO) or a device given as data would block or never end (a regular
file is opened and closed to learn whether it may be read).
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from mmrobust.media.pathcheck import path_problem

MAX_OPTIONS = 26
"""Most options a record may list: they are lettered A-Z."""


def special_kind(path: Path) -> str | None:
    """What a path that exists but is neither a regular file nor a folder is (symlinks followed):
    ``"a named pipe (FIFO)"``, ``"a character device"``, ``"a block device"``, ``"a socket"``;
    ``None`` for a regular file, a folder or a path that does not exist."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
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


def media_problem(path: Path, kind: str = "video") -> str | None:
    """Why ``path`` cannot be a sample's media file, or ``None`` when it is a regular file.

    ``kind`` names the media in the message (``"video"``, ``"image"``): missing
    (``"video file missing: P"``), a folder (``"video path is a folder, not a file: P"``),
    a pipe, device or socket (``"video path is a named pipe (FIFO), not a file: P"``), a link
    loop or a link to nothing (``"video path is a symbolic link loop (...): P"``), or a file it
    may not read (``"video file permission denied: P"``;
    :func:`mmrobust.media.pathcheck.path_problem`).
    """
    problem = path_problem(path)
    if problem is None:
        return None
    if problem == "does not exist":
        return f"{kind} file missing: {path}"
    if problem == "is a folder":
        return f"{kind} path is a folder, not a file: {path}"
    if problem.endswith(", not a regular file"):
        return f"{kind} path {problem.removesuffix(' regular file')} file: {path}"
    return (
        f"{kind} file {problem}: {path}"
        if problem == "permission denied"
        else f"{kind} path {problem}: {path}"
    )


def missing_local_path(text: str) -> str | None:
    """For a path that does not exist but whose parent folder does: ``"P: no such folder or file
    in PARENT"`` with the nearest names in that folder (``did you mean ...?``); else ``None``.

    Tells a mistyped local path (``mmrobust-demo/tamper-sett``) from a hub id (``owner/name``,
    whose owner is no local folder). A bare name (``tamper-sett``) is looked up in the
    current folder.
    """
    p = Path(text).expanduser()
    parent = p.parent
    if p.exists() or not parent.is_dir():
        return None
    try:
        names = sorted(c.name for c in parent.iterdir())
    except OSError:
        names = []
    near = difflib.get_close_matches(p.name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(str(parent / n) for n in near)}?" if near else ""
    where = "here" if str(parent) in ("", ".") else f"in {parent}"
    return f"{p}: no such folder or file {where}{hint}"


def letter_options(values: Sequence[object]) -> dict[str, str]:
    """Options given as a list, lettered ``A``, ``B``, ... in order.

    Raises:
        ValueError: more than :data:`MAX_OPTIONS` (26) options (past ``Z`` there are no letters).
    """
    if len(values) > MAX_OPTIONS:
        raise ValueError(
            f"{len(values)} options: at most {MAX_OPTIONS} (A-Z) can be lettered; "
            "give options as a letter -> text object to name them yourself"
        )
    return {chr(ord("A") + i): str(v) for i, v in enumerate(values)}


def answer_letter(answer: str, options: Mapping[str, str], *, text_first: bool = False) -> str:
    """The option letter an answer names: the letter itself, or the one option with that text.

    ``text_first``: read ``answer`` as an option text before reading it as a letter (the
    released MVTamperBench rows give the text, ``"Yes"``); else a letter wins (generic JSONL).
    An answer that is neither is returned as it is (the sample then fails validation).

    Raises:
        ValueError: the correct option's text is the text of more than one option (two
            options read the same: which one is right cannot be told).
    """
    by_text = [k for k, v in options.items() if v.strip() == answer.strip()]
    as_letter = answer in options and not (text_first and by_text)
    text = options[answer] if as_letter else answer
    same = [k for k, v in options.items() if v.strip() == text.strip()]
    if len(same) > 1:
        raise ValueError(
            f"options {', '.join(same)} have the same text {str(text)[:40]!r} as the answer; "
            "which one is correct cannot be told"
        )
    if as_letter:
        return answer
    return same[0] if same else answer


__all__ = [
    "MAX_OPTIONS",
    "answer_letter",
    "letter_options",
    "media_problem",
    "missing_local_path",
    "special_kind",
]
