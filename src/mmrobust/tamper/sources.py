"""Finding source videos: files as given, folders searched recursively by extension."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

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


def discover_sources(paths: Sequence[str | Path]) -> tuple[list[Path], list[BuildError]]:
    """Expand ``paths`` into a sorted, de-duplicated list of video files.

    Returns:
        ``(files, errors)``: absolute paths, and one ``BuildError`` per path
        that does not exist or per folder that holds no video file.
    """
    found: dict[Path, None] = {}
    errors: list[BuildError] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if not p.exists():
            errors.append(BuildError(source=str(p), reason="path does not exist"))
        elif p.is_dir():
            vids = sorted(
                f.resolve()
                for f in p.rglob("*")
                if f.is_file() and f.suffix.lower() in VIDEO_SUFFIXES and not f.name.startswith(".")
            )
            if not vids:
                exts = ", ".join(sorted(VIDEO_SUFFIXES))
                errors.append(
                    BuildError(source=str(p), reason=f"folder holds no video files ({exts})")
                )
            for v in vids:
                found[v] = None
        else:
            found[p.resolve()] = None
    return list(found), errors


__all__ = ["VIDEO_SUFFIXES", "discover_sources"]
