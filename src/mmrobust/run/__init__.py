"""Running an evaluation: config, executors, sample processing, run keys, the run folder,
eval and rescore (one module per job).

============== ==========================================================================
module         owns
============== ==========================================================================
``config``     :class:`EvalConfig` and its validation, the frame cache options
``executors``  :class:`WorkItem`, serial/thread executors, the executor choice
``process``    :class:`SampleProcessor`, the one extract -> judge -> stop path, ``score_rows``
``keys``       run keys, fingerprints, the ``config``/``run`` blocks, versions
``folder``     the run folder's files: the typed ``run.json`` (:class:`RunInfo`), atomic writes
``checks``     same-run, nothing-to-ask and nothing-scored checks, resume selection
``eval``       :func:`evaluate` / :func:`run_eval` and the driver
``rescore``    :func:`rescore`
============== ==========================================================================

``mmrobust.runner`` is the public one-import API of these names for notebooks and scripts
(docs/evaluation.md); mmrobust's own code imports from the modules.
"""

from mmrobust.run.checks import RunConflictError
from mmrobust.run.config import EvalConfig
from mmrobust.run.eval import RunResult, evaluate, run_eval
from mmrobust.run.executors import Executor, SerialExecutor, ThreadExecutor, WorkItem
from mmrobust.run.folder import METRICS_FILE, RUN_FILE, RunInfo, load_run_config, read_run_info
from mmrobust.run.process import RunAborted, SampleProcessor
from mmrobust.run.rescore import rescore

__all__ = [
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
    "evaluate",
    "load_run_config",
    "read_run_info",
    "rescore",
    "run_eval",
]
