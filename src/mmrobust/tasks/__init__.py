"""Tasks beyond the paper's yes/no question: ``type``, ``when`` and ``leading`` (docs/tasks.md).

``mmrobust eval --task NAME`` asks one of them about every clip of a tamper
dataset; ``detect`` (the default) is MVTamperBench's question, unchanged.

* :mod:`mmrobust.tasks.templates`: the question wording, loaded from
  ``mmrobust/data/tasks/questions.json`` (with the source of each choice);
* :mod:`mmrobust.tasks.truth`: the truth of each task from the manifest
  (type, the third holding the window's centre);
* :mod:`mmrobust.tasks.derive`: the questions (seeded option order, option keys,
  the leading pairs);
* :mod:`mmrobust.tasks.answer`: a detector's verdict as an answer.

Metrics: :mod:`mmrobust.metrics.tasks`.
"""

from __future__ import annotations

from mmrobust.tasks.answer import answer_from_detection
from mmrobust.tasks.derive import (
    META_KEY,
    TASK_BENCHMARK,
    TASKS,
    check_task,
    check_task_options,
    derive_task,
    option_keys,
    task_fingerprint,
)
from mmrobust.tasks.templates import Templates, load_templates
from mmrobust.tasks.truth import NONE, NOWHERE, PARTS, REJECT, third_of, when_truth

__all__ = [
    "META_KEY",
    "NONE",
    "NOWHERE",
    "PARTS",
    "REJECT",
    "TASKS",
    "TASK_BENCHMARK",
    "Templates",
    "answer_from_detection",
    "check_task",
    "check_task_options",
    "derive_task",
    "load_templates",
    "option_keys",
    "task_fingerprint",
    "third_of",
    "when_truth",
]
