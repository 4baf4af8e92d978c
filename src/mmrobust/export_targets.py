"""Where ``mmrobust export`` writes: the checks made before anything is written.

:func:`plan_targets` turns the run folders and ``--out`` into one :class:`Target`
per file, or refuses in one line (:class:`ExportTargetError`, exit 2):

* ``--out`` left out: ``RUN_DIR/samples.<format>`` in each run folder (the export's own
  file there; rewritten without ``--force``).
* ``--out FILE``: one file holding every run given. A file that is already there (or a link
  there) needs ``--force``; its folder must exist.
* ``--out DIR/`` (a trailing ``/``) or an existing folder: one file per run inside ``DIR``
  (made when missing, its parent must exist), named after the last parts of the run folder's
  path that tell it from the others (``S/constant-A/mmr-demo/mmr`` beside ``S/random-0/...``:
  ``constant-A-mmr-demo-mmr.csv``; made safe by :func:`mmrobust.safenames.folder_names`).
* ``-``: standard output.

A target that is, or lies inside, a file mmrobust owns in a run folder (``run.json``,
``metrics.json``, ``results.sqlite`` and its journal files, the lock file) or a suite
folder (``suite.json``) is refused, also when ``--out`` reaches it through a link.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mmrobust.run.folder import METRICS_FILE, RUN_FILE
from mmrobust.runlock import LOCK_FILE
from mmrobust.safenames import folder_names
from mmrobust.store import STORE_FILE

SUITE_FILE = "suite.json"
"""``mmrobust run``'s suite file (``mmrobust.suite.names.SUITE_FILE``; a higher layer)."""

RUN_OWNED = (
    RUN_FILE,
    METRICS_FILE,
    STORE_FILE,
    f"{STORE_FILE}-wal",
    f"{STORE_FILE}-shm",
    f"{STORE_FILE}-journal",
    LOCK_FILE,
)
"""Files of a run folder an export must never replace."""


class ExportTargetError(ValueError):
    """``--out`` cannot be used (one line naming the path and the fix)."""


@dataclass(frozen=True)
class Target:
    """One file to write: the runs it holds and its path (``None``: standard output)."""

    runs: tuple[Path, ...]
    path: Path | None


def check_run_folder(run_dir: str | Path) -> Path:
    """``run_dir`` as a path, when it is a run folder.

    Raises:
        ExportTargetError: ``no such folder: X`` or ``not a run folder (no run.json): X``.
    """
    p = Path(run_dir)
    if not p.exists():
        raise ExportTargetError(f"no such folder: {p}")
    if not (p / RUN_FILE).is_file():
        raise ExportTargetError(f"not a run folder (no {RUN_FILE}): {p}")
    return p


def _is_run_folder(folder: Path) -> bool:
    return (folder / RUN_FILE).exists() or (folder / STORE_FILE).exists()


def owner_of(target: Path) -> str | None:
    """Why ``target`` belongs to a run or suite folder, or ``None`` when it does not.

    ``target`` and the path it resolves to (a link at ``--out``) are both checked, and so
    is every folder above them (a path inside ``results.sqlite`` is refused too).
    """
    for p in dict.fromkeys((target.absolute(), target.resolve())):
        for q in (p, *p.parents):
            if q.name in RUN_OWNED and _is_run_folder(q.parent):
                return f"{q.name} of the run folder {q.parent}"
            if q.name == SUITE_FILE and q.is_file():
                return f"{q.name} of the suite folder {q.parent}"
    return None


def run_file_names(runs: list[Path], fmt: str) -> list[str]:
    """One distinct, file-name-safe name per run: the fewest last parts of its path that tell
    it from the others, joined by ``-`` (``S/constant-A/mmr-demo/mmr`` beside
    ``S/random-0/mmr-demo/mmr``: ``constant-A-mmr-demo-mmr``), then ``.fmt``."""
    parts = [r.resolve().parts[1:] or ("run",) for r in runs]
    for k in range(1, max(len(p) for p in parts) + 1):
        labels = ["-".join(p[-k:]) for p in parts]
        if len(set(labels)) == len(labels):
            break
    names = folder_names(labels)
    return [f"{names[label]}.{fmt}" for label in labels]


def _check_owner(path: Path) -> None:
    owner = owner_of(path)
    if owner is not None:
        raise ExportTargetError(f"--out {path} is {owner}: mmrobust owns it; choose another --out")


def _check_file(path: Path, *, force: bool, own: bool = False) -> None:
    _check_owner(path)
    if path.is_dir() and not path.is_symlink():
        raise ExportTargetError(f"--out {path} is a folder; write into it with --out {path}/")
    if os.path.lexists(path) and not (force or own):
        raise ExportTargetError(
            f"--out {path} already exists; pass --force to replace it, or choose another --out"
        )


def _check_parent(path: Path) -> None:
    parent = path.parent
    if not parent.is_dir():
        what = (
            f"{parent} is not a folder"
            if parent.exists()
            else f"the folder {parent} does not exist"
        )
        raise ExportTargetError(
            f"cannot write {path}: {what}; create it first or choose another --out"
        )


def plan_targets(
    run_dirs: list[Path], fmt: str, out: str | None, *, force: bool = False
) -> tuple[list[Target], Path | None]:
    """The files to write and the folder made for them (``None``: none made).

    Nothing is written but the ``--out DIR/`` folder when it is missing (the caller
    removes it again when the export fails).

    Raises:
        ExportTargetError: a target mmrobust owns, a folder that does not exist, a file
            already there without ``force``, Parquet to standard output.
    """
    runs = list(dict.fromkeys(run_dirs))
    if out == "-":
        if fmt == "parquet":
            raise ExportTargetError("--format parquet needs --out FILE (it is not text)")
        return [Target(tuple(runs), None)], None
    if out is None:
        targets = [Target((r,), r / f"samples.{fmt}") for r in runs]
        for t in targets:
            assert t.path is not None
            _check_file(t.path, force=force, own=True)
        return targets, None
    given = Path(out).expanduser()
    _check_owner(given)
    if not (out.endswith(("/", os.sep)) or given.is_dir()):
        _check_parent(given)
        _check_file(given, force=force)
        return [Target(tuple(runs), given)], None
    made = None
    if not given.is_dir():
        if given.exists() or given.is_symlink():
            raise ExportTargetError(f"--out {out}: {given} is a file, not a folder")
        _check_parent(given)
    targets = [
        Target((r,), given / n) for r, n in zip(runs, run_file_names(runs, fmt), strict=True)
    ]
    for t in targets:
        assert t.path is not None
        _check_file(t.path, force=force)
    if not given.is_dir():
        given.mkdir()
        made = given
    return targets, made


__all__ = [
    "RUN_OWNED",
    "SUITE_FILE",
    "ExportTargetError",
    "Target",
    "check_run_folder",
    "owner_of",
    "plan_targets",
    "run_file_names",
]
