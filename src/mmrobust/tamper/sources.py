"""Finding source videos: files as given, folders searched recursively by extension."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from mmrobust.media.pathcheck import path_problem
from mmrobust.tamper.manifest import BuildError

VIDEO_SUFFIXES = frozenset(
    {
        ".mp4",
        ".m4v",
        ".mov",
        ".mkv",
        ".webm",
        ".avi",
        ".mpg",
        ".mpeg",
        ".ts",
        ".flv",
        ".wmv",
        ".ogv",
    }
)
"""Extensions picked up when a folder is given (files given by name are used whatever their suffix)."""


def _source_reason(problem: str) -> str:
    """A :func:`path_problem` phrase as a build error's reason (``path does not exist``,
    ``path is a symbolic link loop (...)``, ``path is a named pipe (FIFO), not a regular file``)."""
    return problem if problem == "permission denied" else f"path {problem}"


def _walk_videos(folder: Path, errors: list[BuildError]) -> list[Path]:
    """Video files under ``folder`` (symlinked folders followed once); every sub-folder that
    cannot be listed (permission, I/O error) and every video-named entry that is no readable
    file (a named pipe, a link to a device, a link loop or to nothing) becomes a
    ``BuildError``, not a silent gap."""

    def unreadable(exc: OSError) -> None:
        where = exc.filename if exc.filename is not None else folder
        errors.append(
            BuildError(source=str(where), reason=f"cannot read folder: {exc.strerror or exc}")
        )

    seen: set[str] = set()
    vids: list[Path] = []
    for root, dirs, files in os.walk(folder, onerror=unreadable, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:  # a symlink loop or a folder linked twice
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        for name in files:
            f = Path(root) / name
            if f.suffix.lower() not in VIDEO_SUFFIXES or name.startswith("."):
                continue
            if f.is_file():
                vids.append(f.resolve())
            elif (problem := path_problem(f)) is not None and problem != "is a folder":
                errors.append(BuildError(source=str(f), reason=_source_reason(problem)))
    return sorted(vids)


def none_found(paths: Sequence[str | Path]) -> str | None:
    """The one-line error when not one of ``paths`` exists (a mistyped folder: a usage error,
    exit 2), else ``None``; a missing path among existing ones is one ``BuildError`` of
    :func:`discover_sources` instead (the build goes on)."""
    given = [Path(p).expanduser() for p in paths]
    if not given or any(p.exists() or p.is_symlink() for p in given):  # a link: its reason
        return None
    return f"no such video or folder: {', '.join(map(str, given))}"


def discover_sources(paths: Sequence[str | Path]) -> tuple[list[Path], list[BuildError]]:
    """Expand ``paths`` into a sorted, de-duplicated list of video files.

    Returns:
        ``(files, errors)``: absolute paths, and one ``BuildError`` per path
        that does not exist, per folder that holds no video file and per
        sub-folder that cannot be read.
    """
    found: dict[Path, None] = {}
    errors: list[BuildError] = []
    for raw in paths:
        p = Path(raw).expanduser()
        problem = path_problem(p)
        if problem is not None and problem != "is a folder":
            errors.append(BuildError(source=str(p), reason=_source_reason(problem)))
        elif p.is_dir():
            n_errors = len(errors)
            vids = _walk_videos(p, errors)
            if not vids and len(errors) == n_errors:
                exts = ", ".join(sorted(VIDEO_SUFFIXES))
                errors.append(
                    BuildError(source=str(p), reason=f"folder holds no video files ({exts})")
                )
            for v in vids:
                found[v] = None
        else:
            found[p.resolve()] = None
    unique = {(e.source, e.reason): e for e in errors}  # a path given and found in a folder
    return list(found), list(unique.values())


__all__ = ["VIDEO_SUFFIXES", "discover_sources", "none_found"]
