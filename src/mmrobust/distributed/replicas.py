"""Model replicas as Ray actors, and the dispatcher that keeps them busy and survives their loss.

A :class:`Replica` is one actor holding one loaded model (an ``hf:`` model per
GPU, the forensic detector per CPU, an API client with its own request
concurrency). It turns work items into results where it runs: an eval
``WorkItem`` into ``StoredRow`` s (decoding the frames itself), an image into
an ``mmr-data`` ``ItemResult``. It never writes a file the run keeps: the
driver does.

:class:`ReplicaPool.map` hands items to the least-loaded healthy replica, at
most ``depth`` at a time each (one running per concurrent model slot, one
queued so a replica never waits for the driver), and yields ``(item,
result)`` as results arrive. When a replica dies (its process, or its node),
every item it held goes back to the front of the queue and is given to
another replica; the dead one is pinged until Ray has restarted it (actors
restart up to ``MAX_RESTARTS`` times) and then gets work again. A result is
yielded only when the driver has it, so an item is never yielded twice and
never lost. An item whose replica died ``MAX_ATTEMPTS`` times is yielded with a
:class:`ReplicaLost` error (the caller records it as a typed failure).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import ray
from ray.exceptions import ActorDiedError, ObjectLostError, RayActorError, RayError

from mmrobust.distributed.nodelocal import node_local_failures
from mmrobust.distributed.session import (
    RaySession,
    probe_paths,
    raise_path_problems,
    ray_resource_args,
)

T = TypeVar("T")

MAX_RESTARTS = 4
"""Times Ray restarts a replica whose process or node died."""
MAX_ATTEMPTS = 3
"""Times an item is given to a replica before it is reported as lost (it may kill its worker)."""
RECOVER_TIMEOUT_S = 300.0
"""How long the dispatcher waits with no healthy replica before it gives up."""
START_TIMEOUT_S = 1800.0
"""How long to wait for the first replica to load its model before giving up."""
JOIN_GRACE_S = 10.0
"""After the first replica is up, the others are waited for as long as it took, at least this
long; replicas still loading (or that Ray cannot place yet) then join while the work runs."""
ACTOR_THREADS = 64
"""Concurrent calls a replica accepts; the model's own ``max_concurrency`` gates the model."""
PING_BACKOFF_S = 1.0


class ReplicaLost(RuntimeError):
    """Every replica is gone, or one item's replica died ``MAX_ATTEMPTS`` times."""


@dataclass(frozen=True)
class ReplicaSpec:
    """What a replica loads (sent to the actor; a restarted actor loads it again).

    Attributes:
        model: the model spec (``hf:...``, ``forensic``, ``openai:...``).
        model_args: ``--model-arg`` pairs.
        cwd: the driver's working directory (relative paths are resolved against it).
        must_see: paths checked before loading (a local checkpoint folder).
        eval_config: an ``EvalConfig`` when the replica evaluates (``eval_item``).
        concurrency: model calls at once (``None``: the model's ``max_concurrency``).
    """

    model: str
    model_args: Mapping[str, str]
    cwd: str
    must_see: tuple[str, ...] = ()
    eval_config: Any = None
    concurrency: int | None = None


class Replica:
    """One loaded model in a Ray actor (see module docstring).

    A failure to load is kept, not raised, so :meth:`ready` can report it in one line.
    """

    def __init__(self, spec: ReplicaSpec) -> None:
        if os.path.isdir(spec.cwd):
            os.chdir(spec.cwd)  # an actor is its own process: relative paths as on the driver
        self.error: str | None = None
        self.model: Any = None
        self.processor: Any = None
        self.key: Any = None
        self.key_parts: Any = None
        self._gate = threading.Semaphore(1)
        _, missing = probe_paths(spec.cwd, list(spec.must_see))
        if missing:
            self.error = f"path: {missing[0]}"
            return
        try:
            self._load(spec)
        except Exception as exc:  # reported by ready(): a bad spec or a checkpoint that fails
            line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            self.error = f"{type(exc).__name__}: {line}"

    def _load(self, spec: ReplicaSpec) -> None:
        from mmrobust.models.spec import load_model

        self.model = load_model(spec.model, dict(spec.model_args))
        limit = spec.concurrency or max(1, int(self.model.max_concurrency))
        self._gate = threading.Semaphore(max(1, limit))
        cfg = spec.eval_config
        if cfg is None:
            return

        from mmrobust.judge import load_judge
        from mmrobust.run.config import frame_cache
        from mmrobust.run.keys import key_from_parts, key_parts
        from mmrobust.run.process import SampleProcessor

        pconf, policy = cfg.prompt_config(), cfg.policy()
        self.key_parts = key_parts(
            self.model, pconf, policy, text_only=cfg.text_only, task=cfg.task
        )
        self.key = key_from_parts(self.key_parts)
        self.processor = SampleProcessor(
            self.model,
            self.key,
            prompt_config=pconf,
            policy=policy,
            extract_mode=cfg.extract_mode(),
            text_only=cfg.text_only,
            cache=frame_cache(cfg),
            judge=load_judge(cfg.judge, cfg.judge_args) if cfg.judge else None,
            reference=cfg.reference,
        )

    def ready(self, paths: Sequence[str] = ()) -> dict[str, Any]:
        """Where this replica runs and what it loaded (``error`` when loading failed), and
        ``problems`` with ``paths`` it cannot see."""
        ctx = ray.get_runtime_context()
        info: dict[str, Any] = {
            "node_ip": ray.util.get_node_ip_address(),
            "node_id": ctx.get_node_id(),
            "pid": os.getpid(),
            "error": self.error,
            "problems": probe_paths(os.getcwd(), list(paths))[1],
        }
        if self.model is not None:
            info.update(
                name=self.model.name,
                fingerprint=self.model.fingerprint(),
                media_input=self.model.media_input,
                batch_size=int(self.model.batch_size),
                max_concurrency=int(self.model.max_concurrency),
                key=asdict(self.key) if self.key is not None else None,
                key_parts=self.key_parts,
                gpu_ids=[str(g) for g in ray.get_gpu_ids()],
            )
        return info

    def check_paths(self, paths: Sequence[str]) -> tuple[str, list[str]]:
        """``(node ip, problems)`` for ``paths`` this replica cannot see."""
        return probe_paths(os.getcwd(), list(paths))

    def eval_item(self, item: Any) -> list[Any]:
        """One eval ``WorkItem`` -> its ``StoredRow`` s (``SampleProcessor``; frames decoded here).

        A ``media_error`` whose file this node cannot read comes back as a ``model_error``
        (:func:`node_local_failures`): the driver saw the file, so it is this node's view of
        the data, not the sample, and a re-run must ask again.
        """
        with self._gate:
            rows = list(self.processor(item))
        return node_local_failures(rows, ray.util.get_node_ip_address())

    def mmr_image(self, image: str, n_pairs: int) -> Any:
        """One image -> its ``mmr-data`` ``ItemResult`` (both stages, parsed and filtered)."""
        from pathlib import Path

        from mmrobust.mmrdata.pipeline import process_image

        with self._gate:
            return process_image(self.model, Path(image), n_pairs=n_pairs)

    def close(self) -> None:
        """Release the model (GPU memory)."""
        if self.model is not None:
            self.model.close()


RemoteReplica = ray.remote(max_restarts=MAX_RESTARTS, max_task_retries=0)(Replica)


class ReplicaPool:
    """Replica actors and the retrying dispatcher (see module docstring).

    Work starts as soon as one replica has loaded its model; the others join
    when they answer (a replica Ray cannot place yet just waits to join).

    Attributes:
        handles: the actors.
        infos: each replica's latest :meth:`Replica.ready` answer (``None``: not started yet).
        request: Ray resources each replica reserves.
        depth: items held by one replica at once.
        media: paths a replica must see before it gets work (checked when it joins).
        retried: items handed to another replica after theirs died.
        replica_failures: times a replica was found dead or unreachable.
    """

    def __init__(self, handles: list[Any], request: Mapping[str, float]) -> None:
        self.handles = handles
        self.infos: list[dict[str, Any] | None] = [None] * len(handles)
        self.request = dict(request)
        self.depth = 2
        self.media: list[str] = []
        self.retried = 0
        self.replica_failures = 0
        self._joining: dict[Any, int] = {h.ready.remote(): i for i, h in enumerate(handles)}
        self._started: set[int] = set()
        self._inflight: dict[Any, tuple[int, Any, int]] = {}
        self._cancelled = False

    @classmethod
    def start(
        cls,
        session: RaySession,
        spec: ReplicaSpec,
        request: Mapping[str, float],
        replicas: int,
        *,
        timeout: float = START_TIMEOUT_S,
    ) -> ReplicaPool:
        """Start ``replicas`` actors; return once all have loaded the model, or once the first
        has and the others were given as long again (``JOIN_GRACE_S`` at least).

        Raises:
            WorkerPathError: a replica cannot see a path in ``spec.must_see``.
            ValueError: a replica failed to load the model (its first error line),
                or none started within ``timeout`` seconds.
        """
        actor = RemoteReplica.options(
            max_concurrency=ACTOR_THREADS,
            runtime_env=session.runtime_env(),
            **ray_resource_args(request),
        )
        pool = cls([actor.remote(spec) for _ in range(replicas)], request)
        t0 = time.monotonic()
        deadline = t0 + timeout
        try:
            while pool._joining:
                now = time.monotonic()
                if now >= deadline and not pool._started:
                    asks = ", ".join(f"{k}={v:g}" for k, v in request.items())
                    raise ValueError(
                        f"no Ray replica ({asks}) started within {timeout:.0f} s; "
                        "the cluster may be busy or lack these resources"
                    )
                if now >= deadline:
                    break  # the rest join while the work runs
                done, _ = ray.wait(
                    list(pool._joining), num_returns=1, timeout=min(deadline - now, 1.0)
                )
                for ref in done:
                    pool._admit(pool._joining.pop(ref), ray.get(ref))
                    if len(pool._started) == 1:  # wait as long again for the others, at least
                        waited = time.monotonic() - t0  # JOIN_GRACE_S: they load in parallel
                        deadline = min(deadline, time.monotonic() + max(JOIN_GRACE_S, waited))
        except BaseException:
            pool.shutdown()
            raise
        first = pool.first_info
        concurrency = spec.concurrency or int(first.get("max_concurrency") or 1)
        pool.depth = max(1, concurrency) + 1
        return pool

    def _admit(self, r: int, info: dict[str, Any]) -> bool:
        """Take a replica's ``ready`` answer; ``True`` when it may get work.

        Raises:
            WorkerPathError, ValueError: a replica starting for the first time that cannot
                see a path or load the model (a restarted one is dropped instead).
        """
        error, problems = info.get("error"), info.get("problems") or []
        if r not in self._started:
            if error and error.startswith("path: "):
                raise_path_problems([(info["node_ip"], [error.removeprefix("path: ")])])
            if error:
                raise ValueError(f"replica on {info['node_ip']} cannot load the model: {error}")
            raise_path_problems([(info["node_ip"], list(problems))])
        if error or problems:
            return False
        self._started.add(r)
        self.infos[r] = info
        return True

    @property
    def first_info(self) -> dict[str, Any]:
        """The ``ready`` answer of a started replica (name, fingerprint, run key)."""
        return next(info for info in self.infos if info is not None)

    @property
    def capacity(self) -> int:
        """Items in flight when every replica is busy."""
        return len(self.handles) * self.depth

    def check_paths(self, paths: Sequence[str]) -> None:
        """Ask every started replica whether it sees ``paths`` (replicas joining later are
        asked when they join).

        Raises:
            WorkerPathError: the first replica that cannot see one (names the node and path).
        """
        self.media = list(paths)
        started = [self.handles[r] for r in sorted(self._started)]
        raise_path_problems(ray.get([h.check_paths.remote(self.media) for h in started]))

    def map(self, method: str, items: Iterable[T], *args: Any) -> Iterator[tuple[T, Any]]:
        """Call ``replica.<method>(item, *args)`` for every item; yield ``(item, result)``.

        ``result`` is the method's return value, or an exception: the method
        raised (``RayTaskError``) or the item's replica died ``MAX_ATTEMPTS``
        times (:class:`ReplicaLost`). Order: as results arrive.

        Raises:
            ReplicaLost: no replica has been healthy for ``RECOVER_TIMEOUT_S``.
            WorkerPathError, ValueError: a replica joining late cannot see the media or
                load the model.
        """
        n = len(self.handles)
        load = [0] * n
        healthy = set(self._started)
        pings = self._joining  # ready() calls not answered yet -> replica
        ping_at: dict[int, float] = {}  # replica -> when to ping it (again)
        dead: set[int] = set()
        queue: deque[tuple[T, int]] = deque()
        source = iter(items)
        exhausted = False
        unhealthy_since: float | None = None
        inflight = self._inflight
        inflight.clear()

        def lose(r: int) -> None:
            if r in healthy:
                healthy.discard(r)
                self.replica_failures += 1
            if r not in dead and r not in ping_at and r not in pings.values():
                ping_at[r] = time.monotonic()  # a ping answers once Ray has restarted it

        try:
            while not self._cancelled:
                while healthy and not self._cancelled:
                    r = min(healthy, key=lambda i: load[i])
                    if load[r] >= self.depth:
                        break
                    if queue:
                        item, attempts = queue.popleft()
                    elif not exhausted:
                        nxt = next(source, _END)
                        if nxt is _END:
                            exhausted = True
                            break
                        item, attempts = nxt, 0  # type: ignore[assignment]
                    else:
                        break
                    ref = getattr(self.handles[r], method).remote(item, *args)
                    inflight[ref] = (r, item, attempts)
                    load[r] += 1
                if exhausted and not queue and not inflight:
                    return
                now = time.monotonic()
                for r, when in list(ping_at.items()):
                    if when <= now:
                        del ping_at[r]
                        pings[self.handles[r].ready.remote(self.media)] = r
                if healthy:
                    unhealthy_since = None
                elif unhealthy_since is None:
                    unhealthy_since = now
                if len(dead) == n or (
                    unhealthy_since is not None and now - unhealthy_since > RECOVER_TIMEOUT_S
                ):
                    raise ReplicaLost(
                        f"every Ray replica is gone ({self.replica_failures} failures); "
                        "finished rows are kept, re-run the same command to resume"
                    )
                done, _ = ray.wait([*inflight, *pings], num_returns=1, timeout=0.5)
                for ref in done:
                    if ref in pings:
                        r = pings.pop(ref)
                        try:
                            info = ray.get(ref)
                        except ActorDiedError:
                            dead.add(r)  # out of restarts, or no longer restartable
                            continue
                        except RayActorError:  # unreachable for now (its node is going down)
                            ping_at[r] = time.monotonic() + PING_BACKOFF_S
                            continue
                        if self._admit(r, info):
                            healthy.add(r)
                        else:
                            dead.add(r)  # restarted, but cannot load the model or see the media
                        continue
                    r, item, attempts = inflight.pop(ref)
                    load[r] -= 1
                    try:
                        result = ray.get(ref)
                    except (RayActorError, ObjectLostError) as exc:
                        lose(r)
                        if attempts + 1 >= MAX_ATTEMPTS:
                            lost = f"its Ray replica died {attempts + 1} times: {_first_line(exc)}"
                            yield item, ReplicaLost(lost)
                        else:
                            self.retried += 1
                            queue.appendleft((item, attempts + 1))
                        continue
                    except RayError as exc:
                        yield item, exc
                        continue
                    yield item, result
        finally:
            self._drop_inflight()

    def _drop_inflight(self) -> None:
        for ref in list(self._inflight):
            try:
                ray.cancel(ref)
            except Exception:  # already finished, or its actor is gone
                continue
        self._inflight.clear()

    def cancel(self) -> None:
        """Stop handing out items; cancel the queued ones (their results are dropped)."""
        self._cancelled = True
        self._drop_inflight()

    def request_stop(self) -> None:
        """Stop handing out items (signal-safe: sets the flag :meth:`map` polls; Ctrl-C)."""
        self._cancelled = True

    def describe(self) -> dict[str, Any]:
        """Replicas, where they run and what each reserves (for ``run.json``)."""
        nodes: dict[str, int] = {}
        started = [info for info in self.infos if info is not None]
        for info in started:
            nodes[info["node_ip"]] = nodes.get(info["node_ip"], 0) + 1
        return {
            "replicas": len(self.handles),
            "replicas_started": len(started),
            "resources_per_replica": dict(self.request),
            "items_per_replica": self.depth,
            "nodes": nodes,
            "n_nodes": len({info["node_id"] for info in started}),
            "retried_items": self.retried,
            "replica_failures": self.replica_failures,
        }

    def shutdown(self) -> None:
        """Kill every replica actor (frees their GPUs/CPUs at once)."""
        for handle in self.handles:
            try:
                ray.kill(handle, no_restart=True)
            except Exception:  # already dead
                continue


class _End:
    pass


_END: Any = _End()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


__all__ = [
    "MAX_ATTEMPTS",
    "MAX_RESTARTS",
    "RemoteReplica",
    "Replica",
    "ReplicaLost",
    "ReplicaPool",
    "ReplicaSpec",
]
