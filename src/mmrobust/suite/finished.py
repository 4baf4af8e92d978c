"""A suite run with nothing left to ask: known from its folder, without loading the model.

Re-running a finished ``mmrobust run`` command writes no row; it should not load a single
model either (an ``hf:`` checkpoint takes seconds to minutes). :func:`finished_run` says, from
the run folder alone, that ``run_eval`` would ask nothing: the folder's ``run.json`` is
complete, records the same options as this command, and its store holds a finished row for
every selected sample under the recorded key (the same test as a resume,
:func:`mmrobust.run.checks.unfinished`: transient failures, ``--retry-failed`` and changed
samples count as work). Such a run is reported from its ``metrics.json`` as it stands.

Not seen without loading the model: a checkpoint changed in place under the same spec and
options (its fingerprint would differ). Use a new ``--out`` for a changed checkpoint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrobust.datasets import Dataset
from mmrobust.run.config import EvalConfig


@dataclass(frozen=True)
class Finished:
    """A run folder with nothing left to ask.

    Attributes:
        n_rows: the selected samples (all answered before).
        metrics: the folder's ``metrics.json``.
    """

    n_rows: int
    metrics: dict[str, Any]


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


def finished_run(config: EvalConfig, dataset: Dataset) -> Finished | None:
    """The finished state of ``config.out`` when a run of ``config`` would ask nothing, else
    ``None`` (any doubt: an unreadable file, another process holding the folder, a different
    option, a missing or unfinished row).

    ``dataset`` is ``config.data`` as loaded by the suite (before ``config.task``).
    Reads ``run.json``, ``metrics.json`` and the store; writes nothing.
    """
    from mmrobust.run.checks import unfinished_repeats
    from mmrobust.run.eval import selected
    from mmrobust.run.folder import read_run_info
    from mmrobust.run.keys import config_record
    from mmrobust.runlock import RunLock, RunLockError
    from mmrobust.store import STORE_FILE, ResultStore

    run_dir = Path(config.out)
    if not (run_dir / "run.json").is_file() or not (run_dir / STORE_FILE).is_file():
        return None
    try:
        lock = RunLock(run_dir).acquire()  # not while another eval writes the folder
    except (RunLockError, OSError):
        return None
    try:
        info = read_run_info(run_dir)
        if info.complete is not True or info.aborted or info.interrupted:
            return None
        if _canonical(info.config) != _canonical(config_record(config)):
            return None
        metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
        _, samples = selected(config, dataset)
        with ResultStore(run_dir, readonly=True) as store:
            todo = unfinished_repeats(
                store, info.key, samples, config.repeats, retry_failed=config.retry_failed
            )
            if any(todo):  # a missing (sample, repeat) row
                return None
        return Finished(len(samples), metrics) if isinstance(metrics, dict) else None
    except (OSError, ValueError):
        return None
    finally:
        lock.release()


__all__ = ["Finished", "finished_run"]
