"""The run folder's files: ``run.json`` (a typed :class:`RunInfo`), ``metrics.json``.

A run folder holds ``results.sqlite`` (``mmrobust.store``), ``run.json`` (what
was run: options, dataset, key, versions, executor, how it ended) and
``metrics.json`` (the scores over the stored rows). Both JSON files are
written whole through a temporary file and a rename (:func:`write_json`), so
a reader or a crash never sees half a file.

:class:`RunInfo` is the one schema of ``run.json`` for every reader (rescore,
report, the eval's same-run check): the known blocks are typed, anything
else a run.json carries is kept as is (``extra="allow"``), so files written
by older versions read back and round-trip unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from mmrobust.atomicfile import atomic_write
from mmrobust.run.config import EvalConfig
from mmrobust.store import RunFolderWriteError, RunKey

RUN_FILE = "run.json"
METRICS_FILE = "metrics.json"


def write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON via a temporary file and a rename (the old file stays whole).

    Raises:
        RunFolderWriteError: the file cannot be written (full disk, quota, read-only).
    """
    text = json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n"
    try:
        with atomic_write(path) as f:  # a new temporary file: never a planted link's target
            f.write(text)
    except OSError as exc:
        raise RunFolderWriteError(f"cannot write {path}: {exc.strerror or exc}") from None


_atomic_write_json = write_json  # the old private name (runner.py)


class DatasetInfo(BaseModel):
    """The ``dataset`` block of ``run.json`` (loader ``info`` keys are kept as extras).

    Attributes:
        name: the dataset's name.
        benchmark: ``tamper``, ``mmr``, ``tamper-type`` ... or ``generic``.
        source: the dataset path, absolute and symlink-free when it names a file.
        data_hash: sha256 of the dataset's content (two runs on equal data have equal hashes).
        n_samples: samples the loader returned; ``n_selected``: samples evaluated (``--limit``).
        defects: one line per data problem found while loading.
    """

    model_config = ConfigDict(extra="allow")

    name: str = "?"
    benchmark: str = "generic"
    source: str | None = None
    data_hash: str = ""
    n_samples: int | None = None
    n_selected: int | None = None
    defects: list[str] = []


class RunInfo(BaseModel):
    """``run.json``: what was run and how it ended (typed; unknown keys kept).

    Attributes:
        config: the options (:class:`EvalConfig` fields, secrets masked); :meth:`options`.
        dataset: :class:`DatasetInfo`.
        key: the store key of the run's rows.
        run: the ``run`` block (model, prompt, frames, extraction, failure policy, reference).
        interrupted: the last eval stopped early (Ctrl-C or aborted); ``aborted``: why it
            stopped by itself; ``complete``: every selected sample has a row and nothing
            interrupted the last eval (``None`` while an eval is running).
        executor: the ``executor`` block (``serial``, ``threads``, ``ray``).
        rescore: what the last ``rescore`` changed.
    """

    model_config = ConfigDict(extra="allow")

    mmrobust_version: str | None = None
    config: dict[str, Any]
    dataset: DatasetInfo = DatasetInfo()
    key: RunKey
    run: dict[str, Any] = {}
    policy: dict[str, Any] | None = None
    seeds: dict[str, Any] | None = None
    versions: dict[str, str] | None = None
    git_sha: str | None = None
    started_at: str | None = None
    executor: dict[str, Any] | None = None
    finished_at: str | None = None
    interrupted: bool = False
    aborted: str | None = None
    complete: bool | None = None
    n_rows: int | None = None
    n_new: int | None = None
    frame_cache: dict[str, Any] | None = None
    rescore: dict[str, Any] | None = None
    rescored_at: str | None = None

    def options(self) -> EvalConfig:
        """The run's options as an :class:`EvalConfig` (keys it does not know are dropped)."""
        known = set(EvalConfig.__dataclass_fields__)
        return EvalConfig(**{k: v for k, v in self.config.items() if k in known})

    def as_dict(self) -> dict[str, Any]:
        """The JSON object (only the keys that were read or set)."""
        return self.model_dump(exclude_unset=True)


def read_run_info(run_dir: str | Path) -> RunInfo:
    """``run.json`` of a run folder as a :class:`RunInfo`.

    Raises:
        FileNotFoundError: no ``run.json``.
        ValueError: ``run.json`` is not valid JSON, lacks ``config``/``key``, or a block
            has the wrong type.
    """
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"not a run folder (no {RUN_FILE}): {run_dir}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    missing = [k for k in ("config", "key") if not isinstance(data, dict) or k not in data]
    if missing:
        raise ValueError(f"{path}: not written by mmrobust eval (missing {', '.join(missing)})")
    try:
        return RunInfo.model_validate(data)
    except (ValidationError, RecursionError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        where = ".".join(str(p) for p in first["loc"]) if first else "?"
        why = first["msg"] if first else "nested too deeply"
        raise ValueError(f"{path}: not a valid run.json ({where}: {why})") from None


def load_run_config(run_dir: str | Path) -> dict[str, Any]:
    """``run.json`` of a run folder as a plain dict (compatible reader; prefer
    :func:`read_run_info`).

    Raises:
        FileNotFoundError, ValueError: as :func:`read_run_info`.
    """
    return read_run_info(run_dir).as_dict()


def write_run_info(run_dir: str | Path, info: RunInfo) -> None:
    """Write ``run.json`` whole (temporary file and rename).

    Raises:
        RunFolderWriteError: the file cannot be written.
    """
    write_json(Path(run_dir) / RUN_FILE, info.as_dict())


def write_metrics(run_dir: str | Path, metrics: dict[str, Any]) -> None:
    """Write ``metrics.json`` whole (temporary file and rename).

    Raises:
        RunFolderWriteError: the file cannot be written.
    """
    write_json(Path(run_dir) / METRICS_FILE, metrics)


__all__ = [
    "METRICS_FILE",
    "RUN_FILE",
    "DatasetInfo",
    "RunInfo",
    "load_run_config",
    "read_run_info",
    "write_json",
    "write_metrics",
    "write_run_info",
]
