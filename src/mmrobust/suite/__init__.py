"""A whole evaluation in one command (``mmrobust run``): models x datasets x tasks.

============== ==========================================================================
module         owns
============== ==========================================================================
``names``      safe, collision-free folder names; the ``--task`` list
``runner``     :class:`SuiteConfig`, the plan, :func:`run_suite` (one ``run_eval`` per
               run folder, one report at the end)
============== ==========================================================================

Layer: above ``run`` and ``report`` (it calls both), below ``cli``.
"""

from mmrobust.suite.names import ALL_TASKS, SUITE_FILE, folder_names, parse_tasks, safe_name
from mmrobust.suite.runner import SuiteConfig, SuiteResult, SuiteRun, plan_suite, run_suite

__all__ = [
    "ALL_TASKS",
    "SUITE_FILE",
    "SuiteConfig",
    "SuiteResult",
    "SuiteRun",
    "folder_names",
    "parse_tasks",
    "plan_suite",
    "run_suite",
    "safe_name",
]
