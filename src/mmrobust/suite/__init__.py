"""A whole evaluation in one command (``mmrobust run``): models x datasets x tasks.

============== ==========================================================================
module         owns
============== ==========================================================================
``names``      safe, collision-free folder names; the ``--task`` list
``config``     :class:`SuiteConfig` (what ``mmrobust run`` takes)
``plan``       the plan: run folders, runs skipped (task or media kind not applicable)
``runner``     :func:`run_suite` (one ``run_eval`` per run folder, one report at the end)
``state``      ``suite.json`` and the report's folders from the run folders on disk, under a
               suite-level lock (earlier and concurrent commands kept)
``file``       :class:`SuiteFile`: the suite file of ``--config`` (YAML/JSON), each key with
               its flag; ``load``: reading one, its one-line errors (line, key, nearest)
``flags``      the command line over a ``--config`` file (a flag given overrides its key)
``command``    ``mmrobust run``: options generated from :class:`SuiteFile`'s fields
``reproduce``  ``report/suite.yaml`` and the report's "Reproduce" panel
============== ==========================================================================

Layer: above ``run`` and ``report`` (it calls both), below ``cli``.
"""

from typing import TYPE_CHECKING, Any

from mmrobust.suite.names import ALL_TASKS, SUITE_FILE, folder_names, parse_tasks, safe_name

if TYPE_CHECKING:
    from mmrobust.suite.runner import SuiteConfig, SuiteResult, SuiteRun, plan_suite, run_suite

_RUNNER = ("SuiteConfig", "SuiteResult", "SuiteRun", "plan_suite", "run_suite")


def __getattr__(name: str) -> Any:
    """The runner's names, imported on first use: the runner imports ``mmrobust.run`` (PyAV,
    NumPy, OpenCV), and ``mmrobust.cli`` imports this package for ``mmrobust run``'s options,
    so ``mmrobust --help`` would pay for them (issue 32 item 3)."""
    if name in _RUNNER:
        from mmrobust.suite import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'mmrobust.suite' has no attribute {name!r}")


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
