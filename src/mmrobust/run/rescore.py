"""``mmrobust rescore``: extraction and metrics again from stored raw answers.

No call to the evaluated model: rows that answered (``ok``/``parse_fail``)
and ``judge_error`` rows are read again by
:func:`mmrobust.run.process.read_reply` (the same extract -> judge path as
eval, with the same dead-judge stop rule) and updated in the store; error
rows stay. ``metrics.json`` and ``run.json`` (typed, ``RunInfo``) are rewritten.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmrobust.judge import load_judge
from mmrobust.official import (
    TAMPER_REFERENCES,
    reference_block,
    reference_versions,
    reply_path_for,
    tamper_reference,
)
from mmrobust.reasoning import field_reasoning
from mmrobust.run.config import check_rescore_options
from mmrobust.run.folder import (
    METRICS_FILE,
    RUN_FILE,
    RunInfo,
    read_run_info,
    write_metrics,
    write_run_info,
)
from mmrobust.run.process import ABORT_AFTER, StopRules, read_reply, score_rows
from mmrobust.runlock import RunLock
from mmrobust.status import Status
from mmrobust.store import STORE_FILE, TRANSIENT, ResultStore


def rescore(
    run_dir: str | Path,
    *,
    extract_mode: str | None = None,
    failures: str | None = None,
    n_resamples: int | None = None,
    judge: str | None = None,
    judge_args: Mapping[str, str] | None = None,
    reference: str | None = None,
) -> dict[str, Any]:
    """Recompute extraction and metrics from stored raw answers (no call to the evaluated model).

    Rows that answered (``ok`` / ``parse_fail``) are re-extracted from their
    raw text with ``extract_mode`` and updated in the store; error rows stay.
    ``metrics.json`` and the ``run`` block of ``run.json`` are rewritten;
    ``run.json``'s ``rescore`` block says what changed (extraction and failure
    policy before/after, rows re-extracted, rows whose letter or status changed).

    Args:
        run_dir: a folder written by :func:`mmrobust.run.eval.run_eval`.
        extract_mode: ``strict`` | ``lenient`` | ``official`` (default: the run's).
        failures: ``exclude`` | ``wrong`` (default: the run's).
        n_resamples: bootstrap draws (default: the run's).
        judge: model spec of an LLM judge for replies extraction cannot parse
            (off unless given; ``judge_error`` rows are re-judged).
        judge_args: ``--judge-arg`` pairs for the judge.
        reference: VLMEvalKit version for official tamper decisions (default: the
            run's, else the integration commit). The prompt stays the run's.

    Raises:
        FileNotFoundError: not a run folder.
        ValueError: unknown extraction mode or failure policy, an unreadable ``run.json``.
        UnknownNameError: unknown ``reference``.
        RunLockedError: another process is running in that folder.
        RunAborted: the judge's backend failed on ``ABORT_AFTER`` consecutive replies
            (nothing was changed).
    """
    check_rescore_options(extract_mode, failures)
    read_run_info(run_dir)  # not a run folder: fail before the lock file is made
    if reference is not None:
        tamper_reference(reference)
    with RunLock(run_dir):  # read, re-extract and write with no eval running there
        info = read_run_info(run_dir)
        return _rescore(
            run_dir, info, extract_mode, failures, n_resamples, judge, judge_args, reference
        )


def _rescore(
    run_dir: str | Path,
    info: RunInfo,
    extract_mode: str | None,
    failures: str | None,
    n_resamples: int | None,
    judge: str | None,
    judge_args: Mapping[str, str] | None,
    reference: str | None = None,
) -> dict[str, Any]:
    """The body of :func:`rescore`, run while the run folder's lock is held."""
    cfg = info.config
    run = dict(info.run)
    mode = extract_mode or run.get("extraction") or cfg.get("extract", "lenient")
    fail = failures or run.get("failures", "exclude")
    if mode == "official" and cfg.get("task", "detect") != "detect":
        raise ValueError(
            f"--extract official reproduces the reference's yes/no matching; a --task "
            f"{cfg['task']} run has no reference (use lenient or strict)"
        )
    previous = run.get("reference") or {}
    ref_name = (
        reference
        or (previous.get("name") if previous.get("name") in TAMPER_REFERENCES else None)
        or cfg.get("reference")
    )
    judge_model = load_judge(judge, judge_args) if judge else None
    stops = StopRules(ABORT_AFTER, judge_tail="nothing was changed")
    changed = 0
    with ResultStore(run_dir) as store:
        repeats = int(cfg.get("repeats") or 1)
        rows = [  # the samples (and repeats) eval scored
            r for r in store.rows(info.key, store.selection(info.key)) if r.repeat < repeats
        ]
        updates = []
        for row in rows:
            if row.status.is_error and row.status is not Status.JUDGE_ERROR:
                continue
            before = (row.letter, row.status)
            reading = read_reply(
                row.raw_text,
                row.options,
                sample=row.sample,
                answer=row.answer,
                mode=mode,
                reference=ref_name,
                judge=judge_model,
                reasoning=field_reasoning(row.raw_text, row.reasoning, row.reasoning_form),
                reply_path=reply_path_for(cfg.get("model")),
            )
            if reading.rule.startswith("judge"):
                failed = reading.judge_cause is not None and reading.judge_cause in TRANSIENT
                stops.judged(reading.error, failed=failed)
                stops.check(0)
            new = {
                "letter": reading.letter,
                "status": reading.status,
                "rule": reading.rule,
                "error": reading.error,
            }
            updates.append((row, new))
            row.letter, row.status = reading.letter, reading.status
            row.rule, row.error = reading.rule, reading.error
            changed += (row.letter, row.status) != before
        store.update_extractions(updates)
    recorded = "benchmark" in info.dataset.model_fields_set and info.dataset.benchmark
    benchmark = (
        info.dataset.benchmark if recorded else (rows[0].sample.benchmark if rows else "generic")
    )
    metrics = score_rows(
        rows,
        benchmark=benchmark,
        failures=fail,
        n_resamples=cfg.get("n_resamples", 1000) if n_resamples is None else n_resamples,
        seed=cfg.get("seed", 0),
        defects=info.dataset.defects,
        extract_mode=mode,
        repeats=repeats,
    )
    run = {**run, "extraction": mode, "failures": fail}
    run["reference"] = reference_block(benchmark, ref_name) if mode == "official" else None
    prompt_ref = (run.get("prompt") or {}).get("reference")
    for k, v in reference_versions(prompt_ref, run["reference"]).items():
        run[k] = v if mode == "official" and prompt_ref else None  # asked at / decided at
    run["judge"] = judge_model.describe() if judge_model is not None else None
    metrics["run"] = run
    n_selected = info.dataset.n_selected
    metrics["complete"] = len(rows) == (len(rows) if n_selected is None else n_selected * repeats)
    info.rescore = {  # what this rescore changed (``mmrobust rescore`` prints it)
        "extraction": [info.run.get("extraction"), mode],
        "failures": [info.run.get("failures"), fail],
        "rows_reextracted": len(updates),
        "rows_changed": changed,
        "rows_total": len(rows),
        "files": [STORE_FILE, METRICS_FILE, RUN_FILE],
    }
    info.run = run
    info.rescored_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_metrics(run_dir, metrics)
    write_run_info(run_dir, info)
    return metrics


__all__ = ["rescore"]
