"""Run folders given on the command line, as a shell glob gives them.

``mmrobust report suite/*/*/* --out r`` is the natural way to pass every run folder of a
``mmrobust run`` suite (``suite/<model>/<dataset>/<task>``), and the same glob also matches
the suite's own report (``suite/report/cards/x.html``, ``suite/report/mmr/<model>``,
``suite/report/thumbs/x.jpg``). Those paths are skipped with one note
(:func:`skip_report_files`); anything else that is not a run folder is still refused by the
command.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

REPORT_MARKERS = ("index.html", "report.md")
"""A folder holding both is a report ``mmrobust report`` or ``mmrobust run`` wrote."""


def report_folder_of(path: str | Path, depth: int = 3) -> Path | None:
    """The report folder ``path`` lies inside (itself or one of its ``depth`` nearest
    ancestors holds :data:`REPORT_MARKERS` and no ``run.json``), else ``None``."""
    p = Path(path)
    for folder in [p, *list(p.parents)[:depth]]:
        if (folder / "run.json").is_file():
            return None
        if all((folder / name).is_file() for name in REPORT_MARKERS):
            return folder
    return None


def skip_report_files(paths: Sequence[str]) -> tuple[list[str], str | None]:
    """``(kept, note)``: ``paths`` without those inside a report folder, and one line naming
    what was skipped (``None`` when nothing was)."""
    kept: list[str] = []
    skipped: dict[Path, int] = {}
    for path in paths:
        folder = report_folder_of(path)
        if folder is None:
            kept.append(path)
        else:
            skipped[folder] = skipped.get(folder, 0) + 1
    if not skipped:
        return kept, None
    n = sum(skipped.values())
    where = ", ".join(str(f) for f in skipped)
    return kept, f"note: skipped {n} path(s) inside the report folder {where} (not run folders)"


__all__ = ["REPORT_MARKERS", "report_folder_of", "skip_report_files"]
