"""Log run folders (and a report) to Weights & Biases: ``--log-to wandb`` (issue 30).

Through the official client (``pip install 'mmrobust[wandb]'``), imported inside
:func:`log_to_wandb` only, so ``mmrobust --help`` and API evals never load it:

* one W&B run per mmrobust run folder, named ``model/dataset/task``, ``job_type="eval"``;
  ``config`` is ``run.json``'s ``config`` block (``model_args`` / ``judge_args`` are
  already scrubbed there, and scrubbed again here); the ``summary`` holds every number of
  ``metrics.json`` flattened with ``/`` (``F1``, ``per_type/<type>/F1``, ``RA``,
  ``categories/<category>/MR``, ``accuracy``, ``parse_fail_rate``, ``error_rate``, ...),
  W&B's own grouping separator (``per_type/<type>/parse_fail_rate`` is over that type's
  tampered clips only, the top-level ``parse_fail_rate`` over every answer);
* with a report folder, one more W&B run (``job_type="report"``) holding each CSV table of
  the report (any depth) as a ``wandb.Table`` and the model cards (``cards/*.json``) as an artifact of
  type ``model-card`` (each card also in that run's summary under ``card/<name>``).

Offline (``WANDB_MODE=offline``) writes the runs under ``WANDB_DIR`` for a later
``wandb sync``; ``tests/test_wandb_log.py`` reads them back from there.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mmrobust.redact import scrub_args
from mmrobust.wandb_login import INSTALL_HINT, wandb_problem

DEFAULT_PROJECT = "mmrobust"
"""The W&B project runs go to unless ``--wandb-project`` names another."""


LOG_TARGETS = ("wandb",)
"""What ``--log-to`` takes."""


def check_log_to(target: str | None) -> None:
    """Fail before any run when ``--log-to`` cannot work (nothing is imported).

    Raises:
        ValueError: ``target`` is not one of :data:`LOG_TARGETS`.
        ImportError: ``wandb`` is not installed (message ends with :data:`INSTALL_HINT`).
        ValueError: not logged in to W&B and not in offline mode (:func:`wandb_problem`).
    """
    if target is None:
        return
    if target not in LOG_TARGETS:
        raise ValueError(f"--log-to {target}: expected one of {', '.join(LOG_TARGETS)}")
    problem = wandb_problem()
    if problem and "package" in problem:
        raise ImportError(problem)
    if problem:
        raise ValueError(problem)


def _import_wandb() -> Any:
    """The ``wandb`` module. Raises ImportError with :data:`INSTALL_HINT` when absent."""
    try:
        import wandb
    except ImportError:
        raise ImportError(f"--log-to wandb needs the wandb package: {INSTALL_HINT}") from None
    return wandb


def flat_numbers(data: Mapping[str, Any], prefix: str = "") -> dict[str, float | int]:
    """Every finite number (not bool) of a nested mapping, keyed ``a/b/c``.

    Lists are indexed (``ci/F1/0``); ``None``, strings and non-finite floats are left out.
    """
    out: dict[str, float | int] = {}

    def walk(value: Any, key: str) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, f"{key}/{k}" if key else str(k))
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                walk(v, f"{key}/{i}")
        elif isinstance(value, bool):
            return
        elif isinstance(value, int | float) and math.isfinite(value):
            out[key] = value

    walk(data, prefix)
    return out


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; ``{}`` when the file is absent."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def run_name(info: Mapping[str, Any]) -> str:
    """``model/dataset/task`` of a ``run.json`` (``?`` for a part it lacks)."""
    cfg = info.get("config", {})
    ds = info.get("dataset", {})
    dataset = ds.get("name") if isinstance(ds, Mapping) else None
    return f"{cfg.get('model', '?')}/{dataset or cfg.get('data', '?')}/{cfg.get('task', '?')}"


def _config(info: Mapping[str, Any]) -> dict[str, Any]:
    """``run.json``'s config block, its backend settings scrubbed once more."""
    cfg = dict(info.get("config", {}))
    for key in ("model_args", "judge_args"):
        if isinstance(cfg.get(key), Mapping):
            cfg[key] = scrub_args({str(k): str(v) for k, v in cfg[key].items()})
    return cfg


def _tables(report_dir: Path) -> Iterator[tuple[str, Path]]:
    """``(table name, csv path)`` for each CSV the report wrote, named by its path under
    the report folder without ``.csv`` (``mmr_table2``, ``mmr/constant_A/mmr_table``)."""
    for path in sorted(report_dir.rglob("*.csv")):
        rel = path.relative_to(report_dir)
        if rel.parts[0] != "thumbs":
            yield rel.with_suffix("").as_posix(), path


def log_to_wandb(
    run_dirs: Sequence[str | Path],
    report_dir: str | Path | None = None,
    *,
    project: str = DEFAULT_PROJECT,
    log: Callable[[str], None] | None = None,
) -> list[str]:
    """Log each run folder (and the report, if given) to W&B; return the W&B run ids.

    Args:
        run_dirs: folders written by ``mmrobust eval`` (a folder without ``run.json`` is
            skipped with a line to ``log``).
        report_dir: a report folder (``mmrobust report --out``, a suite's ``OUT/report``).
        project: the W&B project.
        log: where one line per logged run goes (``None``: nowhere).

    Raises:
        ImportError: wandb is not installed (message ends with :data:`INSTALL_HINT`).
    """
    wandb = _import_wandb()
    import pandas as pd

    say = log or (lambda _line: None)
    ids: list[str] = []
    for folder in map(Path, run_dirs):
        info = _read_json(folder / "run.json")
        if not info:
            say(f"wandb: skipped {folder} (no run.json)")
            continue
        metrics = _read_json(folder / "metrics.json")
        name = run_name(info)
        run = wandb.init(
            project=project, name=name, job_type="eval", config=_config(info), reinit=True
        )
        run.summary.update(flat_numbers(metrics))
        run.summary.update({"benchmark": metrics.get("benchmark"), "run_dir": str(folder)})
        ids.append(run.id)
        run.finish()
        say(f"wandb: logged {name} (run {run.id}, project {project})")
    if report_dir is not None and Path(report_dir).is_dir():
        out = Path(report_dir)
        run = wandb.init(project=project, name=f"report:{out.name}", job_type="report",
                         reinit=True)  # fmt: skip
        for table, path in _tables(out):
            frame = pd.read_csv(path)
            run.log({f"table/{table}": wandb.Table(dataframe=frame)})
        cards = sorted((out / "cards").glob("*.json"))
        if cards:
            artifact = wandb.Artifact("model-cards", type="model-card")
            for card in cards:
                artifact.add_file(str(card), name=card.name)
                run.summary[f"card/{card.stem}"] = _read_json(card)
            run.log_artifact(artifact)
        ids.append(run.id)
        run.finish()
        say(f"wandb: logged the report of {out} (run {run.id}, project {project})")
    return ids


__all__ = [
    "DEFAULT_PROJECT",
    "INSTALL_HINT",
    "LOG_TARGETS",
    "check_log_to",
    "flat_numbers",
    "log_to_wandb",
    "run_name",
    "wandb_problem",
]
