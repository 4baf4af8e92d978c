"""The ``--task`` list of ``mmrobust run`` and the suite folder's own names.

Folder names come from :mod:`mmrobust.safenames` (credentials scrubbed, safe,
collision-free); :func:`folder_names` here also keeps clear of the suite's own
``report`` folder and ``suite.json``.
"""

from __future__ import annotations

from collections.abc import Sequence

from mmrobust.safenames import MAX_NAME, safe_name
from mmrobust.safenames import folder_names as _folder_names

REPORT_DIR = "report"
"""The report folder inside ``--out``."""

SUITE_FILE = "suite.json"
"""The plan and outcome file in the suite's ``--out`` folder."""

ALL_TASKS = ("detect", "type", "when", "leading")
"""``--task all``: every task, in this order."""


def folder_names(items: Sequence[str]) -> dict[str, str]:
    """:func:`mmrobust.safenames.folder_names` clear of ``report`` and ``suite.json``."""
    return _folder_names(items, taken=(REPORT_DIR, SUITE_FILE))


def parse_tasks(values: Sequence[str]) -> list[str]:
    """``--task`` values (repeatable, each a comma list; ``all`` = :data:`ALL_TASKS`) as a list
    of distinct task names in the order given.

    Raises:
        ValueError: an unknown task name (one line listing the known ones), or none given.
    """
    from mmrobust.tasks import check_task

    names: list[str] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part:
                names.extend(ALL_TASKS if part == "all" else [check_task(part)])
    if not names:
        raise ValueError("--task: no task given; expected all or a list of " + ",".join(ALL_TASKS))
    return list(dict.fromkeys(names))


__all__ = [
    "ALL_TASKS",
    "MAX_NAME",
    "REPORT_DIR",
    "SUITE_FILE",
    "folder_names",
    "parse_tasks",
    "safe_name",
]
