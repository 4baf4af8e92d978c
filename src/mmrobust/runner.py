"""The public Python API of a run: one import for a notebook or a script (docs/evaluation.md).

``from mmrobust.runner import EvalConfig, run_eval, rescore``: the names below are the
supported surface of an evaluation run from Python, kept stable across the modules they live
in. mmrobust's own code imports from ``mmrobust.run.<module>``, never from here:

* ``run.config``: ``EvalConfig``, ``frame_cache``, ``default_cache_dir``
* ``run.executors``: ``WorkItem``, ``Executor``, ``SerialExecutor``, ``ThreadExecutor``,
  ``batches``, ``choose_executor``, ``describe_executor``
* ``run.process``: ``SampleProcessor``, ``read_reply``, ``StopRules``, ``score_rows``,
  ``load_image``, ``RunAborted``, ``ABORT_AFTER``, ``judge_failed``
* ``run.keys``: ``run_key``, ``config_record``, ``run_block``
* ``run.folder``: ``RunInfo``, ``read_run_info``, ``load_run_config``, ``RUN_FILE``,
  ``METRICS_FILE``
* ``run.checks``: ``RunConflictError``, ``check_same_run``, ``unfinished``, ``nothing_scored`` ...
* ``run.eval``: ``evaluate``, ``run_eval``, ``RunResult``; ``run.rescore``: ``rescore``
"""

from __future__ import annotations

import os  # noqa: F401  (tests patch ``mmrobust.runner.os.replace``)

from mmrobust.run.checks import (
    RunConflictError,
    check_nonempty,
    check_same_run,
    check_usable,
    nothing_scored,
    same_source,
    select_samples,
    unfinished,
)
from mmrobust.run.config import EvalConfig, default_cache_dir, frame_cache
from mmrobust.run.eval import RunResult, evaluate, run_eval
from mmrobust.run.executors import (
    Executor,
    SerialExecutor,
    ThreadExecutor,
    WorkItem,
    batches,
    choose_executor,
    describe_executor,
)
from mmrobust.run.folder import METRICS_FILE, RUN_FILE, RunInfo, load_run_config, read_run_info
from mmrobust.run.keys import config_record, run_block, run_key
from mmrobust.run.process import (
    ABORT_AFTER,
    RunAborted,
    SampleProcessor,
    judge_failed,
    load_image,
    score_rows,
)
from mmrobust.run.rescore import rescore

__all__ = [
    "ABORT_AFTER",
    "METRICS_FILE",
    "RUN_FILE",
    "EvalConfig",
    "Executor",
    "RunAborted",
    "RunConflictError",
    "RunInfo",
    "RunResult",
    "SampleProcessor",
    "SerialExecutor",
    "ThreadExecutor",
    "WorkItem",
    "batches",
    "check_nonempty",
    "check_same_run",
    "check_usable",
    "choose_executor",
    "config_record",
    "default_cache_dir",
    "describe_executor",
    "evaluate",
    "frame_cache",
    "judge_failed",
    "load_image",
    "load_run_config",
    "nothing_scored",
    "read_run_info",
    "rescore",
    "run_block",
    "run_eval",
    "run_key",
    "same_source",
    "score_rows",
    "select_samples",
    "unfinished",
]
