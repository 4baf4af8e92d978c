"""Eval and ``mmr-data`` work over a fixed pool of Ray actors, one model replica each.

The driver hands :meth:`ReplicaPool.stream` the work it still has to do (after the resume
check): eval ``WorkItem`` s (one ``Model.generate`` batch each, cut by the model's
``batch_size`` exactly as a local run cuts them) or ``mmr-data`` image paths, cut into
blocks of :func:`block_items` items. Each replica is a plain Ray actor
(:class:`ReplicaStage`: ``max_restarts=-1``, ``max_task_retries=-1``, the ``--ray-*``
resources, spread over the nodes) that loads the model once (``replicas.Replica``) and
turns a block of items into their results (prompt, frames decoded on the replica, model
call, extraction), with up to ``concurrency`` items of a block at once (API backends). The
driver keeps ``IN_FLIGHT_PER_REPLICA`` blocks queued at each replica (one running, the next
waiting: a replica never idles while the driver writes) and takes each block's results as
it finishes (``ray.wait``, any order); the caller writes each block in one store transaction.

The first replica is also the probe: for a backend whose run key only a loaded model can
tell (``hf:``, ``openai:`` ...), :meth:`ReplicaPool.probe` starts it and asks it what it
loaded (name, fingerprint, run key) before the resume check, and the pipeline then uses it
like the others: the model is loaded once per replica, never once more for the probe.

What Ray does for us: restarting an actor whose process or node died and running the
blocks it held again (``max_restarts=-1``, ``max_task_retries=-1``: a bounded count gave up
while a lost node's actor was still "unavailable", before Ray had restarted it). A block's
results reach the driver once or not at all, so a row is never lost or written twice. What
it cannot express (docs/scaling.md): a typed per-item failure for an item that kills its
worker every time (Ray retries its block without end), and an attempt count per item.
An exception raised for one item (not a dead worker) is returned as that item's result (the
caller records typed ``model_error`` rows).

Until this module used plain actors it was a Ray Data pipeline (``map_batches`` over an
actor pool): Ray Data's import (pandas, pyarrow) in every replica and in the driver, its
three helper actors on the cluster and its executor's polling cost more CPU than a short
run's work (docs/scaling.md, "What a run costs"). The pool is ended at the end of every run
(``ray.kill`` of each actor), on a long-lived cluster too.
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import RayError

from mmrobust.distributed.replicas import Replica, ReplicaSpec
from mmrobust.distributed.session import RaySession, probe_paths, ray_resource_args

BLOCK_ITEMS_MAX = 256
"""Most work items in one block (a killed driver or replica loses at most the blocks in flight;
each block costs the driver one ``ray.wait`` and one store transaction, so fewer cost less)."""
BLOCKS_PER_REPLICA = 4
"""Blocks per replica at least, while items last (so a slow replica does not hold the tail)."""
IN_FLIGHT_PER_REPLICA = 2
"""Blocks queued at a replica at once: the one it works on and the next."""
START_TIMEOUT_S = 1800.0
"""How long the driver waits for the probe replica (one load of the model) before giving up."""
STAGE_NAME = "ReplicaStage"
"""The actors' class name (in Ray's actor table and their process titles)."""
DISPATCH = "ray actors (one per replica, blocks of items)"
"""``run.json``'s ``executor.dispatch``."""


class ReplicaStage:
    """The Ray actor of one replica: one loaded model; a block of items -> their results.

    A failure to load is kept (:meth:`ready` reports it, :meth:`run` raises it), so the
    probe can name it in one line.

    Args:
        spec: what to load (``ReplicaSpec``; a restarted actor loads it again).
    """

    def __init__(self, spec: ReplicaSpec) -> None:
        self.replica = Replica(spec)
        self.threads: ThreadPoolExecutor | None = None
        self.n_threads = 0
        ctx = ray.get_runtime_context()
        self.where = (
            ray.util.get_node_ip_address(),
            ctx.get_node_id(),
            ctx.get_actor_id() or "",
            os.getpid(),
        )

    def ready(self) -> dict[str, Any]:
        """``Replica.ready``: where it runs, what it loaded, ``error`` when loading failed."""
        return self.replica.ready()

    def check_paths(self, cwd: str, paths: Sequence[str]) -> tuple[str, str, list[str]]:
        """``(node ip, node id, problems)``: the ``paths`` (relative ones to ``cwd``, the
        driver's) that this replica's node cannot see (``session.probe_paths``)."""
        ip, problems = probe_paths(cwd, list(paths))
        return ip, self.where[1], problems

    def run(
        self, method: str, items: Sequence[Any], args: tuple[Any, ...], concurrency: int
    ) -> tuple[list[Any], tuple[str, str, str, int]]:
        """``Replica.<method>(item, *args)`` for each item, ``concurrency`` at once.

        Returns:
            ``(results in item order, (node ip, node id, actor id, pid))``; a result is the
            method's return value or the exception it raised for that item.

        Raises:
            RuntimeError: the model did not load (the run stops with this message).
        """
        if self.replica.error:
            raise RuntimeError(f"replica cannot load the model: {self.replica.error}")
        fn = getattr(self.replica, method)

        def one(item: Any) -> Any:
            try:
                return fn(item, *args)
            except Exception as exc:  # one item's failure is its typed result, not the block's
                return RuntimeError(f"{type(exc).__name__}: {_first_line(exc)}")

        if concurrency > 1 and len(items) > 1:
            if self.threads is None or self.n_threads != concurrency:
                self.threads, self.n_threads = ThreadPoolExecutor(concurrency), concurrency
            return list(self.threads.map(one, items)), self.where
        return [one(item) for item in items], self.where


_REMOTE_STAGE = ray.remote(ReplicaStage)


def block_items(n: int, replicas: int, concurrency: int) -> int:
    """Items per block: enough for ``BLOCKS_PER_REPLICA`` blocks per replica, at most
    ``BLOCK_ITEMS_MAX``, at least ``concurrency`` (one block keeps a replica's slots busy)."""
    spread = math.ceil(n / max(1, replicas * BLOCKS_PER_REPLICA))
    return max(1, concurrency, min(BLOCK_ITEMS_MAX, spread))


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
            "dispatch": DISPATCH,
        }


class ReplicaPool:
    """The replicas of one run: Ray actors started on first need, ended by :meth:`close`.

    Args:
        session: the driver's connection.
        spec: what each replica loads.
        request: Ray resources each replica reserves.
        stats: what the driver sees of the pool (``run.json``); ``stats.replicas`` actors.
    """

    def __init__(
        self,
        session: RaySession,
        spec: ReplicaSpec,
        request: Mapping[str, float],
        stats: PipelineStats,
    ) -> None:
        self.session, self.spec, self.request, self.stats = session, spec, dict(request), stats
        self.actors: list[Any] = []

    def _start(self, n: int) -> None:
        """Start actors until there are ``n`` (each loads the model in its own process)."""
        cls = _REMOTE_STAGE.options(
            max_restarts=-1,
            max_task_retries=-1,
            scheduling_strategy="SPREAD",
            runtime_env=self.session.runtime_env(),
            **ray_resource_args(self.request),
        )
        while len(self.actors) < n:
            self.actors.append(cls.remote(self.spec))

    def probe(self, *, timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
        """Start the first replica and return its ``Replica.ready`` (name, fingerprint, media
        input, batch size, run key): what the driver needs before the resume check. The
        replica then works like the others.

        Raises:
            WorkerPathError: the replica cannot see a path in ``spec.must_see``.
            ValueError: the model does not load (its first error line), the actor cannot
                start (mmrobust missing on the node), or no node gave it its resources
                within ``timeout`` seconds.
        """
        from ray.exceptions import GetTimeoutError, RayTaskError

        from mmrobust.distributed.session import raise_path_problems

        self._start(1)
        try:
            info: dict[str, Any] = ray.get(self.actors[0].ready.remote(), timeout=timeout)
        except GetTimeoutError:
            self.close()
            asks = ", ".join(f"{k}={v:g}" for k, v in self.request.items())
            raise ValueError(
                f"no Ray replica ({asks}) started within {timeout:.0f} s; "
                "the cluster may be busy or lack these resources"
            ) from None
        except RayError as exc:  # the actor could not even start (mmrobust missing on the node)
            self.close()
            cause = exc.cause if isinstance(exc, RayTaskError) else exc
            line = _last_line(cause) if isinstance(cause, BaseException) else ""
            raise ValueError(
                f"a Ray replica cannot start: {type(cause).__name__}: {line} "
                "(install the same mmrobust on every node)"
            ) from None
        error = info.get("error")
        if error:
            self.close()
        if error and error.startswith("path: "):
            raise_path_problems([(info["node_ip"], [error.removeprefix("path: ")])])
        if error:
            raise ValueError(f"replica on {info['node_ip']} cannot load the model: {error}")
        return info

    def check_paths(
        self, paths: Sequence[str], *, timeout: float = START_TIMEOUT_S
    ) -> tuple[set[str], list[tuple[str, list[str]]]]:
        """Start the pool's ``stats.replicas`` actors (as :meth:`stream` would) and have each
        check ``paths`` on its node: no process of its own per node for the check, which
        ``session.check_paths`` then runs only on the nodes no replica covers.

        Returns:
            ``(ids of the nodes checked, [(node ip, problems), ...])``; ``(set(), [])`` when
            the replicas did not all answer within ``timeout`` seconds or one could not start
            (the caller checks every node itself; :meth:`stream` reports the replica).
        """
        from ray.exceptions import GetTimeoutError

        self._start(self.stats.replicas)
        refs = [a.check_paths.remote(self.session.cwd, list(paths)) for a in self.actors]
        try:
            answers = ray.get(refs, timeout=timeout)
        except (GetTimeoutError, RayError):
            return set(), []
        return {str(node) for _, node, _ in answers}, [(ip, p) for ip, _, p in answers]

    def stream(
        self,
        items: Sequence[Any],
        *,
        method: str,
        args: tuple[Any, ...] = (),
        concurrency: int = 1,
    ) -> Iterator[list[tuple[Any, Any]]]:
        """Run ``Replica.<method>(item, *args)`` over ``items`` on ``stats.replicas`` actors;
        yield each block's ``[(item, result), ...]`` as it finishes (any order). ``result``
        is the method's return value or the exception it raised for that item. Closing the
        generator (or its end) ends every actor of the pool; blocks in flight are dropped.

        Raises:
            ray.exceptions.RayError: a replica cannot load the model, or the cluster went away.
        """
        if not items:
            self.close()
            return
        n, conc = len(items), max(1, concurrency)
        k = block_items(n, self.stats.replicas, conc)
        self.stats.items_per_block = k
        queue = deque(range(0, n, k))
        pending: dict[Any, tuple[int, int]] = {}

        def submit(a: int) -> None:
            if queue:
                lo = queue.popleft()
                block = list(items[lo : lo + k])
                pending[self.actors[a].run.remote(method, block, tuple(args), conc)] = (a, lo)

        try:
            self._start(self.stats.replicas)
            for _ in range(IN_FLIGHT_PER_REPLICA):
                for a in range(len(self.actors)):
                    submit(a)
            while pending:
                [ref], _ = ray.wait(list(pending), num_returns=1)
                a, lo = pending.pop(ref)
                results, (ip, node_id, actor, pid) = ray.get(ref)
                self.stats.saw(str(ip), str(node_id), str(actor), int(pid))
                submit(a)  # before the caller writes: the replica keeps two blocks queued
                yield list(zip(items[lo : lo + k], results, strict=True))
        finally:
            self.close()

    def close(self) -> None:
        """End every actor of the pool (no restart); record where they ran first."""
        if not self.actors:
            return
        actors, self.actors = self.actors, []
        self.stats.placed(_pool_actors(actors))
        for actor in actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # the cluster went away: nothing left to end
                continue


def _pool_actors(actors: Sequence[Any]) -> list[dict[str, Any]]:
    """The GCS actor-table entries of ``actors`` (``[]`` if unavailable): one lookup per
    actor, not the whole table (a long-lived cluster keeps every actor it ever ran)."""
    try:
        from ray._private import state

        return [dict(state.actors(actor_id=a._actor_id.hex())) for a in actors]
    except Exception:  # a private API: the figures are informative only
        return []


def _last_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


__all__ = [
    "BLOCKS_PER_REPLICA",
    "BLOCK_ITEMS_MAX",
    "DISPATCH",
    "IN_FLIGHT_PER_REPLICA",
    "PipelineStats",
    "ReplicaPool",
    "ReplicaStage",
    "block_items",
]
