"""Eval and ``mmr-data`` work as a Ray Data pipeline over an actor pool of model replicas.

The driver hands :func:`stream` the work it still has to do (after the resume
check): eval ``WorkItem`` s (one ``Model.generate`` batch each, cut by the
model's ``batch_size`` exactly as a local run cuts them) or ``mmr-data``
image paths. The items are put in the object store once; the dataset is their
indices, in blocks of :func:`block_items` items, made on the driver
(:func:`index_dataset`: ``ray.data.from_blocks``; no Ray task runs to make them). One stage,
``map_batches(ReplicaStage, concurrency=replicas, num_cpus/num_gpus/resources
from --ray-*)``, runs over a fixed pool of actors that each load the model
once (``replicas.Replica``) and turn a block of items into their results
(prompt, frames decoded on the replica, model call, extraction), with up to
``concurrency`` items of a block at once (API backends). Results stream back
to the driver block by block (``iter_batches``); the caller writes each block
in one store transaction.

What Ray Data does for us (and the old dispatcher did by hand): scheduling
blocks to idle actors, backpressure, restarting an actor whose process or
node died and re-running the block it held (its actor-pool defaults,
``max_restarts=-1`` and ``max_task_retries=-1``: a bounded count gave up
while a lost node's actor was still "unavailable", before Ray had restarted
it). A block's results reach the driver once or not at all, so a row is never
lost or written twice. What it cannot express (docs/scaling.md): a typed
per-item failure for an item that kills its worker every time (Ray retries
its block without end; the old dispatcher wrote ``model_error`` rows after 3
deaths), and an attempt count per item.
An exception raised for one item (not a dead worker) is returned as that
item's result (the caller records typed ``model_error`` rows).

Ray 2.60 logs "has constructor arguments in the object store and max_restarts > 0"
once per replica actor: Ray Data passes its own wrapped UDF and ``DataContext`` to
each actor by object reference (ray-project/ray#57733), whatever our constructor
arguments (``ReplicaSpec`` and one reference to the items, about 600 bytes pickled);
only ``max_restarts=0`` silences it, giving up the restarts above (docs/scaling.md).
"""

from __future__ import annotations

import logging
import math
import os
import pickle
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import ray

from mmrobust.distributed.replicas import Replica, ReplicaSpec
from mmrobust.distributed.session import RaySession, ray_resource_args

BLOCK_ITEMS_MAX = 256
"""Most work items in one block (a killed driver or replica loses at most the blocks in flight;
each block costs the driver a fixed amount of Ray Data bookkeeping, so fewer blocks cost less)."""
BLOCKS_PER_REPLICA = 4
"""Blocks per replica at least, while items last (so a slow replica does not hold the tail)."""
START_TIMEOUT_S = 1800.0
"""How long the driver waits for the model probe (one load of the model) before giving up."""
STAGE_NAME = "ReplicaStage"
"""The stage's class name (Ray names its actors ``MapWorker(MapBatches(ReplicaStage))``)."""


class ReplicaStage:
    """Ray Data callable class: one loaded model per actor; a block of item indices -> results.

    Args:
        spec: what to load (``ReplicaSpec``).
        items: ``[ObjectRef]`` of the list of work items (wrapped so Ray does not resolve it
            into every actor's constructor message).
        method: ``"eval_item"`` or ``"mmr_image"`` (a ``Replica`` method).
        args: extra arguments of ``method``.
        concurrency: items of one block processed at once (threads).

    Raises:
        RuntimeError: the model cannot be loaded or a path is not visible (the actor dies
            during start-up; Ray Data counts it and the run stops with this message).
    """

    def __init__(
        self,
        spec: ReplicaSpec,
        items: list[Any],
        method: str,
        args: tuple[Any, ...],
        concurrency: int,
    ) -> None:
        self.replica = Replica(spec)
        if self.replica.error:
            raise RuntimeError(f"replica cannot load the model: {self.replica.error}")
        self.items: list[Any] = ray.get(items[0])
        self.fn = getattr(self.replica, method)
        self.args = args
        self.threads = ThreadPoolExecutor(concurrency) if concurrency > 1 else None
        ctx = ray.get_runtime_context()
        self.where = (
            ray.util.get_node_ip_address(),
            ctx.get_node_id(),
            ctx.get_actor_id() or "",
            os.getpid(),
        )

    def _one(self, i: int) -> Any:
        try:
            return self.fn(self.items[i], *self.args)
        except Exception as exc:  # one item's failure is its typed result, not the block's
            return RuntimeError(f"{type(exc).__name__}: {_first_line(exc)}")

    def __call__(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``{"data": (n,) int64 item indices}`` -> one row: the pickled ``(indices, results)``
        and where it ran (node ip, node id, actor id, pid)."""
        idx = [int(i) for i in batch["data"]]
        if self.threads is not None:
            results = list(self.threads.map(self._one, idx))
        else:
            results = [self._one(i) for i in idx]
        ip, node, actor, pid = self.where
        return {
            "results": np.array([pickle.dumps((idx, results))], dtype=object),
            "node": np.array([ip]),
            "node_id": np.array([node]),
            "actor": np.array([actor]),
            "pid": np.array([pid], dtype=np.int64),
        }


def block_items(n: int, replicas: int, concurrency: int) -> int:
    """Items per block: enough for ``BLOCKS_PER_REPLICA`` blocks per replica, at most
    ``BLOCK_ITEMS_MAX``, at least ``concurrency`` (one block keeps a replica's slots busy)."""
    spread = math.ceil(n / max(1, replicas * BLOCKS_PER_REPLICA))
    return max(1, concurrency, min(BLOCK_ITEMS_MAX, spread))


def configure_data_context() -> Any:
    """Ray Data on the driver: no progress bars, no execution banners or stats in the log."""
    from ray.data import DataContext

    ctx = DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.enable_auto_log_stats = False
    ctx.execution_options.preserve_order = False
    for name in ("ray.data", "ray.data._internal"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return ctx


@dataclass
class PipelineStats:
    """What the driver saw of the pool (for ``run.json``).

    Attributes:
        replicas: actors in the pool.
        request: Ray resources each replica reserves.
        items_per_block: work items in one block.
        restarts: replica restarts Ray made (the GCS actor table).
        seen: actor id -> (node ip, node id of its latest block, pids it ran in).
    """

    replicas: int
    request: dict[str, float]
    items_per_block: int = 0
    restarts: int = 0
    seen: dict[str, tuple[str, str, set[int]]] = field(default_factory=dict)

    def saw(self, ip: str, node_id: str, actor: str, pid: int) -> None:
        """Record that ``actor`` (in process ``pid`` on node ``node_id`` at ``ip``) returned
        a block."""
        pids = self.seen.get(actor, (ip, node_id, set()))[2]
        self.seen[actor] = (ip, node_id, pids | {pid})

    def placed(self, actors: Sequence[Mapping[str, Any]]) -> None:
        """Take the pool's actors from the GCS actor table: where each was (last) placed, and
        Ray's restart count."""
        self.restarts = max(self.restarts, sum(int(a.get("NumRestarts") or 0) for a in actors))
        for a in actors:
            address = a.get("Address") or {}
            ip, node_id = address.get("IPAddress"), address.get("NodeID")
            if ip and node_id:
                pids = self.seen.get(str(a.get("ActorID")), ("", "", set()))[2]
                self.seen[str(a.get("ActorID"))] = (str(ip), str(node_id), pids)

    def describe(self) -> dict[str, Any]:
        """``replicas``, where they ran, restarts (Ray's count, or an actor seen in a new
        process)."""
        nodes: dict[str, int] = {}
        for ip, _, _ in self.seen.values():
            nodes[ip] = nodes.get(ip, 0) + 1
        return {
            "replicas": self.replicas,
            "replicas_started": len(self.seen),
            "resources_per_replica": dict(self.request),
            "items_per_block": self.items_per_block,
            "nodes": nodes,
            "n_nodes": len({node_id for _, node_id, _ in self.seen.values()}),
            "replica_failures": max(
                self.restarts, sum(max(0, len(p) - 1) for _, _, p in self.seen.values())
            ),
            "dispatch": "ray.data map_batches (actor pool)",
        }


def probe_model(
    session: RaySession,
    spec: ReplicaSpec,
    request: Mapping[str, float],
    *,
    timeout: float = START_TIMEOUT_S,
) -> dict[str, Any]:
    """Load the model once in a Ray task with a replica's resources; return ``Replica.ready``
    (name, fingerprint, media input, batch size, run key): what the driver needs before the
    resume check.

    Raises:
        WorkerPathError: the replica cannot see a path in ``spec.must_see``.
        ValueError: the model does not load (its first error line), or no node gave the
            task its resources within ``timeout`` seconds.
    """
    from ray.exceptions import GetTimeoutError, RayTaskError

    from mmrobust.distributed.session import raise_path_problems

    task = ray.remote(max_retries=1)(_probe).options(
        runtime_env=session.runtime_env(), **ray_resource_args(request)
    )
    ref = task.remote(spec)
    try:
        info: dict[str, Any] = ray.get(ref, timeout=timeout)
    except RayTaskError as exc:  # the task could not even run (mmrobust missing on the node)
        cause = exc.cause if isinstance(exc.cause, BaseException) else exc
        raise ValueError(
            f"a Ray replica cannot start: {type(cause).__name__}: {_last_line(cause)} "
            "(install the same mmrobust on every node)"
        ) from None
    except GetTimeoutError:
        ray.cancel(ref, force=True)
        asks = ", ".join(f"{k}={v:g}" for k, v in request.items())
        raise ValueError(
            f"no Ray replica ({asks}) started within {timeout:.0f} s; "
            "the cluster may be busy or lack these resources"
        ) from None
    error = info.get("error")
    if error and error.startswith("path: "):
        raise_path_problems([(info["node_ip"], [error.removeprefix("path: ")])])
    if error:
        raise ValueError(f"replica on {info['node_ip']} cannot load the model: {error}")
    return info


def _probe(spec: ReplicaSpec) -> dict[str, Any]:
    replica = Replica(spec)
    try:
        return replica.ready()
    finally:
        replica.close()


def stream(
    session: RaySession,
    spec: ReplicaSpec,
    request: Mapping[str, float],
    stats: PipelineStats,
    items: Sequence[Any],
    *,
    method: str,
    args: tuple[Any, ...] = (),
    concurrency: int = 1,
) -> Iterator[list[tuple[Any, Any]]]:
    """Run ``Replica.<method>(item, *args)`` over ``items`` on ``stats.replicas`` actors; yield
    each block's ``[(item, result), ...]`` as it arrives (any order). ``result`` is the
    method's return value or the exception it raised for that item.

    Raises:
        ray.exceptions.RayError: the pipeline failed (replicas cannot start, the cluster
            went away).
    """
    if not items:
        return
    configure_data_context()
    ref = ray.put(list(items))
    n = len(items)
    k = block_items(n, stats.replicas, concurrency)
    stats.items_per_block = k
    blocks = [np.arange(a, min(n, a + k), dtype=np.int64) for a in range(0, n, k)]
    ds = _dataset(session, spec, request, stats, ref, blocks, k, method, args, concurrency)
    try:
        for batch in ds.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=0):
            where = zip(batch["node"], batch["node_id"], batch["actor"], batch["pid"], strict=True)
            for blob, (ip, node_id, actor, pid) in zip(batch["results"], where, strict=True):
                idx, results = pickle.loads(blob)
                stats.saw(str(ip), str(node_id), str(actor), int(pid))
                yield [(items[i], r) for i, r in zip(idx, results, strict=True)]
    finally:
        stats.placed(_pool_actors())


def _pool_actors() -> list[dict[str, Any]]:
    """This job's replica actors in the GCS actor table (``[]`` if unavailable)."""
    try:
        from ray._private import state

        job = ray.get_runtime_context().get_job_id()
        return [
            a
            for a in state.actors().values()
            if STAGE_NAME in str(a.get("ActorClassName", "")) and a.get("JobID") == job
        ]
    except Exception:  # a private API: the figures are informative only
        return []


def _dataset(
    session: RaySession,
    spec: ReplicaSpec,
    request: Mapping[str, float],
    stats: PipelineStats,
    ref: Any,
    blocks: list[np.ndarray],
    k: int,
    method: str,
    args: tuple[Any, ...],
    concurrency: int,
) -> Any:
    """The dataset: index blocks made on the driver -> ``map_batches`` over the actor pool."""
    resources = ray_resource_args(request)
    return index_dataset(blocks).map_batches(
        ReplicaStage,
        fn_constructor_args=(spec, [ref], method, tuple(args), max(1, concurrency)),
        batch_size=k,  # one call per block; the replica cuts it into the model's batches
        batch_format="numpy",
        concurrency=stats.replicas,  # a fixed pool of replicas
        num_cpus=resources["num_cpus"],
        num_gpus=resources["num_gpus"] or None,
        resources=resources["resources"] or None,
        runtime_env=session.runtime_env(),
    )  # Ray Data's defaults: max_restarts=-1, max_task_retries=-1 (see module docstring)


def index_dataset(blocks: list[np.ndarray]) -> Any:
    """A Ray dataset of one block per array of ``blocks`` (column ``data``: the int64 item
    indices), its blocks made on the driver and put in the object store.

    ``ray.data.from_numpy`` makes the same blocks in one Ray task per array (a worker
    process per node that imports Ray Data: seconds of CPU before the first replica starts,
    on every run); ``from_blocks`` runs none. A Ray without ``from_blocks``: ``from_numpy``.
    """
    from_blocks = getattr(ray.data, "from_blocks", None)
    if from_blocks is None:  # pragma: no cover - an older Ray
        return ray.data.from_numpy(blocks)
    import pyarrow as pa

    return from_blocks([pa.table({"data": b}) for b in blocks])


def _last_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


__all__ = [
    "BLOCKS_PER_REPLICA",
    "BLOCK_ITEMS_MAX",
    "PipelineStats",
    "ReplicaStage",
    "block_items",
    "configure_data_context",
    "index_dataset",
    "probe_model",
    "stream",
]
