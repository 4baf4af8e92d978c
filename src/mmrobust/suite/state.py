"""``OUT/suite.json`` and the report's run list, from the run folders on disk.

Several ``mmrobust run`` commands may write one suite folder: one after another with other
models (``--model A --model B``, then ``--model B``), or at once (two processes; each run
folder's own lock, :mod:`mmrobust.runlock`, lets one of them run it and the other fail it,
naming the holder). What one process holds in memory is then not the suite: so
``suite.json`` is rewritten, under a suite-level lock (``OUT/.suite.lock``, ``filelock``),
from the run folders themselves:

* a run of this command keeps the outcome this command saw (its error, its row counts),
  unless it failed only because another process held its folder, or it was not started
  (Ctrl-C): then the folder's ``run.json`` says how it stands;
* a run of an earlier (or another, concurrent) command keeps its ``suite.json`` record,
  with the status its folder's ``run.json`` gives now, until a command runs it again; a
  run folder no record names (``suite.json`` removed) is read from its ``run.json``; a
  record whose folder has gone is dropped.

Each record says whether this command wrote its folder (``this_command``). The report covers
the folders of this command's runs and every **complete** run folder of an earlier command
(:func:`report_folders`), and ``mmrobust run`` prints which runs came from an earlier command.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mmrobust.redact import redact
from mmrobust.suite.names import REPORT_DIR, SUITE_FILE
from mmrobust.suite.plan import SuiteRun

SUITE_LOCK = ".suite.lock"
"""The suite-level lock file inside ``--out``."""
LOCK_WAIT_S = 600.0
"""How long a command waits for another one's ``suite.json`` / report write."""


class SuiteLockTimeout(OSError):
    """Another ``mmrobust run`` kept the suite folder's lock past :data:`LOCK_WAIT_S`."""


@contextmanager
def suite_lock(out: Path, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold ``OUT/.suite.lock`` (``filelock``, no link followed) for the block.

    Raises:
        SuiteLockTimeout: not taken within ``wait_s`` seconds.
    """
    from filelock import FileLock, Timeout

    lock = FileLock(str(out / SUITE_LOCK), timeout=wait_s)
    try:
        lock.acquire()
    except Timeout:
        raise SuiteLockTimeout(
            f"{out} is being written by another mmrobust run (held {SUITE_LOCK} for over "
            f"{wait_s:.0f} s); wait for it to finish"
        ) from None
    try:
        yield
    finally:
        lock.release()


def disk_status(run_dir: Path) -> str | None:
    """How the run folder stands by its ``run.json``: ``complete``, ``interrupted``, ``failed``
    (aborted), ``partial`` (rows missing, or an eval still running), or ``None`` (no readable
    ``run.json``)."""
    from mmrobust.run.folder import read_run_info

    try:
        info = read_run_info(run_dir)
    except (OSError, ValueError):
        return None
    if info.complete:
        return "complete"
    if info.aborted:
        return "failed"
    return "interrupted" if info.interrupted else "partial"


def run_folders(out: Path) -> list[Path]:
    """Every ``OUT/<model>/<dataset>/<task>`` holding a ``run.json`` (not under ``report``),
    sorted."""
    return sorted(
        p.parent
        for p in out.glob("*/*/*/run.json")
        if p.parts[-4] != REPORT_DIR and not p.parent.is_symlink()
    )


def _label(out: Path, run_dir: Path) -> str:
    return "/".join(run_dir.relative_to(out).parts)


def _from_disk(out: Path, run_dir: Path, status: str) -> dict[str, Any]:
    """A record for a run folder no record names, from its ``run.json``."""
    from mmrobust.run.folder import read_run_info

    config = read_run_info(run_dir).config
    return {
        "model": redact(str(config.get("model", ""))),
        "data": str(config.get("data", "")),
        "task": str(config.get("task", "")),
        "run_dir": _label(out, run_dir),
        "status": status,
        "skipped": None,
        "error": None,
        "n_new": 0,
        "n_skipped": 0,
        "headline": None,
    }


def previous_records(out: Path) -> list[dict[str, Any]]:
    """The ``runs`` of the ``suite.json`` there now (empty when missing or unreadable)."""
    try:
        saved = json.loads((out / SUITE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    runs = saved.get("runs") if isinstance(saved, dict) else None
    return [r for r in runs if isinstance(r, dict) and isinstance(r.get("run_dir"), str)] if (
        isinstance(runs, list)
    ) else []  # fmt: skip


def merge_records(out: Path, runs: Sequence[SuiteRun]) -> list[dict[str, Any]]:
    """The ``runs`` of ``suite.json``: this command's plan, then the earlier ones (see the
    module docstring). Reads the run folders and the ``suite.json`` there now; call it under
    :func:`suite_lock`."""
    records: list[dict[str, Any]] = []
    mine: set[str] = set()
    for run in runs:
        record = {**run.record(), "this_command": True}
        mine.add(record["run_dir"])
        on_disk = disk_status(run.run_dir)
        if on_disk is not None and (run.status == "planned" or run.locked):
            record.update(status=on_disk, error=None, this_command=False)
        records.append(record)
    seen = set(mine)
    for old in previous_records(out):
        label = old["run_dir"]
        if label in seen:
            continue
        seen.add(label)
        on_disk = disk_status(out / label)
        if on_disk is None and old.get("status") in ("complete", "partial", "interrupted"):
            continue  # its folder has gone
        records.append({**old, "status": on_disk or old.get("status"), "this_command": False})
    for folder in run_folders(out):
        label = _label(out, folder)
        status = disk_status(folder)
        if label not in seen and status is not None:
            seen.add(label)
            records.append({**_from_disk(out, folder, status), "this_command": False})
    return records


def report_folders(out: Path, records: Sequence[dict[str, Any]]) -> tuple[list[Path], list[str]]:
    """``(folders, earlier)``: the run folders the report covers (this command's runs with a
    ``run.json``, then every complete run of an earlier command, in record order), and the
    labels of those earlier ones."""
    mine = [
        r["run_dir"]
        for r in records
        if r.get("this_command") and (out / r["run_dir"] / "run.json").is_file()
    ]
    earlier = [
        r["run_dir"] for r in records if not r.get("this_command") and r.get("status") == "complete"
    ]
    return [out / label for label in mine + earlier], earlier


__all__ = [
    "LOCK_WAIT_S",
    "SUITE_LOCK",
    "SuiteLockTimeout",
    "disk_status",
    "merge_records",
    "previous_records",
    "report_folders",
    "run_folders",
    "suite_lock",
]
