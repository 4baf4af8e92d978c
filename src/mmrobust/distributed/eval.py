"""``mmrobust eval --executor ray``: model replicas in a pool of Ray actors, the store on the driver.

:func:`run_eval_ray` learns the model's name, fingerprint and run key from the
spec on the driver (a ``light`` backend) or from the first replica, started
before the others (the probe), then runs the ordinary
:func:`mmrobust.run.eval.run_eval` with two stand-ins: a :class:`RemoteModel`
on the driver that carries the replicas' name, fingerprint, media input,
frame encoding and batch size (so the run key, ``run.json`` and resume are
exactly those of a local run), and a :class:`RayEvalExecutor` that runs the
unfinished ``WorkItem`` s through ``distributed/pipeline.py`` (blocks of items
over a fixed pool of replica actors) and yields each block's rows.
The driver alone writes ``results.sqlite``, one transaction per block; metrics
are computed from the store as in a local run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import ray
from ray.exceptions import RayError

from mmrobust.datasets import Dataset
from mmrobust.distributed import RayOptions
from mmrobust.distributed.pipeline import PipelineStats, ReplicaPool
from mmrobust.distributed.replicas import ReplicaSpec
from mmrobust.distributed.session import (
    RaySession,
    check_paths,
    raise_path_problems,
    ray_session,
    worker_request,
)
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.models.base import MEDIA_KINDS, MediaInput, Model, Request, Response
from mmrobust.models.credentials import ray_refusal
from mmrobust.models.spec import ModelSpec, frame_encoding_of, parse_spec
from mmrobust.prompts import build_prompt
from mmrobust.run.config import EvalConfig
from mmrobust.run.eval import RunResult, run_eval
from mmrobust.run.executors import WorkItem
from mmrobust.run.interrupts import INTERRUPTS
from mmrobust.run.keys import key_difference, key_parts
from mmrobust.run.process import RunAborted, SampleProcessor
from mmrobust.status import Status
from mmrobust.store import StoredRow


class RemoteModel(Model):
    """The driver's stand-in for a model loaded in Ray replicas.

    Carries what the runner reads from a model (``name``, ``fingerprint()``,
    ``media_input``, ``media_kinds``, ``batch_size``, ``max_concurrency``) as a replica reported
    it, and the frame encoding of the model spec (``models.spec.frame_encoding_of``,
    computed without a client), so the driver's run key is a local run's;
    :meth:`generate` is never called on the driver.
    """

    media_input: ClassVar[MediaInput] = "frames"

    def __init__(self, info: dict[str, Any], encoding: FrameEncoding | None = None) -> None:
        self.name = str(info["name"])
        self.batch_size = int(info["batch_size"])
        self.max_concurrency = int(info["max_concurrency"])
        self._fingerprint = dict(info["fingerprint"])
        self._encoding = encoding or FrameEncoding()

    @classmethod
    def from_info(cls, info: dict[str, Any], encoding: FrameEncoding | None = None) -> RemoteModel:
        """The stand-in for the model a replica described in ``Replica.ready``; ``encoding``:
        the spec's frame encoding (default: JPEG q95, decoded size)."""
        media: MediaInput = info["media_input"]
        kinds = tuple(info.get("media_kinds") or MEDIA_KINDS)  # older replicas: every kind
        sub = type("RemoteModel", (cls,), {"media_input": media, "media_kinds": kinds})
        return sub(info, encoding)

    def frame_encoding(self) -> FrameEncoding:
        """The model spec's frame encoding (what the replicas' backend sends)."""
        return self._encoding

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Not available on the driver (the model lives in the replicas)."""
        raise RuntimeError(f"{self.name} runs in Ray replicas; the driver does not generate")

    def fingerprint(self) -> dict[str, Any]:
        """The replicas' fingerprint (the same as a local load of the model)."""
        return dict(self._fingerprint)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _error_rows(processor: SampleProcessor, item: WorkItem, exc: BaseException) -> list[StoredRow]:
    """``model_error`` rows for an item no replica could finish (transient: a re-run retries)."""
    text = str(exc).strip()
    msg = f"ray: {type(exc).__name__}: {text.splitlines()[0] if text else ''}"
    rows = []
    for sample in item.samples:
        prompt = build_prompt(sample, processor.prompt_config)
        rows.append(
            StoredRow(
                sample=sample,
                key=processor.key,
                status=Status.MODEL_ERROR,
                error=msg,
                rule=Status.MODEL_ERROR.value,
                answer=prompt.answer,
                options=dict(prompt.options),
                created_at=time.time(),
                repeat=item.repeat,
            )
        )
    return rows


def media_paths(items: Sequence[WorkItem]) -> list[str]:
    """Every media file of ``items`` the driver itself can see, once, in item order: what each
    replica must see too (a file the driver lacks is the sample's ``data_error`` already)."""
    seen: dict[str, None] = {}
    for item in items:
        for sample in item.samples:
            for path in (sample.video, sample.image):
                if path is None or sample.error or str(path) in seen:
                    continue
                if Path(path).exists():
                    seen[str(path)] = None
    return list(seen)


@dataclass
class Replicas:
    """The model replicas of a run: what they load, what each reserves, how many, and what
    the probe reported (``Replica.ready``: name, fingerprint, run key ...).

    The replicas themselves are the actors of ``pool`` (``distributed/pipeline.py``): the
    probe replica, if any, already started; the others start with :meth:`stream`.
    :meth:`close` ends them all (``stream`` does when it ends).
    """

    session: RaySession
    spec: ReplicaSpec
    request: dict[str, float]
    stats: PipelineStats
    info: dict[str, Any]
    pool: ReplicaPool

    def check_paths(self, paths: Sequence[str]) -> None:
        """Check on every node that could host a replica that it sees ``paths``: the replicas
        (started now) check their own nodes, a task checks each node none of them is on.

        Raises:
            WorkerPathError: a node cannot see one (names the node and the path).
        """
        if paths:
            covered, reports = self.pool.check_paths(paths)
            raise_path_problems(reports)
            check_paths(self.session, self.request, paths, skip=covered)

    def stream(
        self, items: Sequence[Any], *, method: str, args: tuple[Any, ...] = (), concurrency: int = 1
    ) -> Iterator[list[tuple[Any, Any]]]:
        """``ReplicaPool.stream`` over these replicas (blocks of ``(item, result)``)."""
        return self.pool.stream(items, method=method, args=args, concurrency=concurrency)

    def close(self) -> None:
        """End every replica actor (none is left on a long-lived cluster)."""
        self.pool.close()

    def concurrency(self) -> int:
        """Items a replica works on at once: ``--workers``, else the model's ``max_concurrency``."""
        return max(1, self.spec.concurrency or int(self.info.get("max_concurrency") or 1))


class RayEvalExecutor:
    """An ``Executor`` (``mmrobust.run.executors``) whose work runs in Ray replica actors.

    Before the first item it checks that the replicas computed the driver's run
    key and that every node that could host one sees the first media file. It
    yields the rows of one block at a time (the driver writes them in one
    transaction). An item whose replica raised comes back as ``model_error``
    rows; when the pipeline fails (replicas that cannot start, a cluster
    that went away) the run stops like any aborted run
    (``RunAborted``: finished rows kept, exit 3, re-run to resume).
    """

    def __init__(self, replicas: Replicas) -> None:
        self.replicas = replicas
        self.session = replicas.session
        self.workers = replicas.stats.replicas * replicas.concurrency()
        self._stop = False

    def run(
        self, fn: Callable[[WorkItem], list[StoredRow]], items: Iterable[WorkItem]
    ) -> Iterator[list[StoredRow]]:
        """Yield the rows of each block of items as the replicas return them (any order)."""
        if not isinstance(fn, SampleProcessor):
            raise TypeError("RayEvalExecutor runs the runner's SampleProcessor only")
        theirs = self.replicas.info.get("key")
        if theirs != asdict(fn.key):  # run_eval_ray checked the parts; another caller may not
            raise ValueError(
                f"the Ray replicas compute another run key ({theirs}) than the driver "
                f"({asdict(fn.key)}); install the same mmrobust on every node"
            )
        work = list(items)
        if not (fn.text_only or fn.model.media_input == "none"):
            self.replicas.check_paths(media_paths(work))
        return self._rows(fn, work)

    def _rows(self, fn: SampleProcessor, work: list[WorkItem]) -> Iterator[list[StoredRow]]:
        """The blocks' rows as they arrive; after a stop request (Ctrl-C) the next block that
        arrives is the last (its answers are paid for), and the pipeline is closed."""
        blocks = self.replicas.stream(
            work, method="eval_item", concurrency=self.replicas.concurrency()
        )
        written = 0
        try:
            for block in blocks:
                rows: list[StoredRow] = []
                for item, result in block:
                    rows += (
                        _error_rows(fn, item, result) if isinstance(result, Exception) else result
                    )
                if any(row.key != fn.key for row in rows):  # a node with another mmrobust
                    other = next(row.key for row in rows if row.key != fn.key)
                    raise ValueError(
                        f"the Ray replicas compute another run key ({asdict(other)}) than the "
                        f"driver ({asdict(fn.key)}); install the same mmrobust on every node"
                    )
                written += len(rows)
                yield rows
                if self._stop:
                    return
        except RayError as exc:
            raise RunAborted(
                f"the Ray pipeline stopped ({type(exc).__name__}: {_first_line(exc)}); "
                "finished rows are kept, re-run the same command to resume",
                written,
            ) from None
        finally:
            close = getattr(blocks, "close", None)
            if close is not None:
                close()  # ends the replica actors (blocks in flight are dropped)

    def request_stop(self) -> None:
        """End after the next block that arrives (signal-safe: sets a flag; Ctrl-C). The other
        blocks in flight are dropped (a re-run asks for them again); the driver is not woken
        while it waits for a block (a second Ctrl-C ends at once)."""
        self._stop = True

    def cancel(self) -> None:
        """Stop the pipeline (blocks in flight are dropped, never written)."""
        self._stop = True

    def describe(self) -> dict[str, Any]:
        """The ``executor`` block of ``run.json``."""
        return {
            "name": "ray",
            "address": self.session.address,
            "ray_version": ray.__version__,
            **self.replicas.stats.describe(),
        }


def replica_count(
    session: RaySession, options: RayOptions, request: dict[str, float], spec: ModelSpec
) -> int:
    """``options.replicas``, else as many as fit (one for ``placement == "api"``).

    Raises:
        ValueError: no node can host a replica, or more replicas asked than fit.
    """
    slots = session.slots(request)
    want = options.replicas or (1 if spec.placement == "api" else slots)
    if slots < 1 or want > slots:
        have = ", ".join(
            f"{k}={v:g}"
            for k, v in sorted(session.cluster_resources().items())
            if not k.startswith(("node:", "memory", "object"))
        )
        asks = ", ".join(f"{k}={v:g}" for k, v in request.items())
        raise ValueError(
            f"{want or 1} replica(s) of {asks} each do not fit in the Ray cluster "
            f"(room for {slots}; cluster: {have}); lower --replicas or the per-worker resources"
        )
    return want


def gpus_per_replica(session: RaySession, options: RayOptions, spec: ModelSpec) -> float:
    """``--ray-gpus-per-worker``, else 1 for ``placement == "gpu"`` (``hf:``) on a cluster
    with GPUs, else 0."""
    if options.gpus_per_worker is not None:
        return options.gpus_per_worker
    has_gpus = session.cluster_resources().get("GPU", 0.0) >= 1
    return 1.0 if spec.placement == "gpu" and has_gpus else 0.0


def local_checkpoint(spec: ModelSpec) -> tuple[str, ...]:
    """A local checkpoint folder of a ``gpu`` spec (``hf:<folder>``; every replica must see
    it), else ``()``."""
    if spec.placement == "gpu" and spec.arg and Path(spec.arg).exists():
        return (spec.arg,)
    return ()


def start_replicas(
    session: RaySession,
    options: RayOptions,
    *,
    model: str,
    model_args: dict[str, str],
    eval_config: EvalConfig | None = None,
    concurrency: int | None = None,
) -> Replicas:
    """Size the replicas of ``model`` (resources of ``options``) and learn its name,
    fingerprint and run key: on the driver for a ``light`` backend (:func:`driver_info`),
    else from the first replica, started now (``ReplicaPool.probe``; it stays for the run).
    The caller ends the replicas (``Replicas.close``).

    Raises:
        ValueError, WorkerPathError: bad spec, no room, a replica that cannot load or see a path;
            a setting that holds a password (``models.credentials.ray_refusal``).
    """
    spec = parse_spec(model, model_args)
    why = ray_refusal(spec.args, eval_config.judge_args if eval_config is not None else {})
    if why:  # the replicas get their settings through Ray's task arguments
        raise ValueError(why)
    request = worker_request(options, gpus=gpus_per_replica(session, options, spec))
    n = replica_count(session, options, request, spec)
    replica = ReplicaSpec(
        model=model,
        model_args=dict(spec.args),
        cwd=session.cwd,
        must_see=local_checkpoint(spec),
        eval_config=eval_config,
        concurrency=concurrency,
    )
    stats = PipelineStats(n, dict(request))
    pool = ReplicaPool(session, replica, request, stats)
    info = driver_info(spec, eval_config)  # a light backend: no replica started yet
    if info is None:
        info = pool.probe()  # the first replica, kept for the run
    return Replicas(session, replica, request, stats, info, pool)


def driver_info(spec: ModelSpec, eval_config: EvalConfig | None) -> dict[str, Any] | None:
    """What a probe replica reports (``Replica.ready``: name, fingerprint, media input, batch
    size, run key), computed on the driver when the spec decides it: a ``light`` backend
    (the baselines, ``forensic``: no client, no weights, nothing a node could load
    otherwise). ``None`` for any other backend (its replicas are probed). The replicas' rows
    are still checked against the driver's key as they arrive (:class:`RayEvalExecutor`).

    Raises:
        ValueError, UnknownNameError: the backend refuses its arguments.
    """
    from mmrobust.models.spec import MODELS, load_model
    from mmrobust.run.keys import key_from_parts

    if spec.name not in MODELS or not MODELS.get(spec.name).light:
        return None
    model = load_model(spec)
    try:
        info: dict[str, Any] = {
            "node_ip": None, "node_id": None, "pid": None, "error": None, "problems": [],
            "name": model.name, "fingerprint": model.fingerprint(),
            "media_input": model.media_input, "media_kinds": list(model.media_kinds),
            "batch_size": int(model.batch_size), "max_concurrency": int(model.max_concurrency),
            "key": None, "key_parts": None, "gpu_ids": [], "probe": "driver",
        }  # fmt: skip
        if eval_config is not None:
            cfg = eval_config
            parts = key_parts(
                model, cfg.prompt_config(), cfg.policy(), text_only=cfg.text_only, task=cfg.task
            )
            info.update(key=asdict(key_from_parts(parts)), key_parts=parts)
        return info
    finally:
        model.close()


def check_same_key(config: EvalConfig, model: Model, info: dict[str, Any]) -> None:
    """Refuse to run when the replicas key the run otherwise than the driver, naming the
    fields that differ in one line (another mmrobust or library version on a node).

    Raises:
        ValueError: the key parts differ.
    """
    ours = key_parts(
        model, config.prompt_config(), config.policy(), text_only=config.text_only,
        task=config.task,
    )  # fmt: skip
    theirs = info.get("key_parts")
    diff = key_difference(ours, theirs) if isinstance(theirs, dict) else "key_parts missing"
    if diff:
        raise ValueError(
            f"the Ray replicas key this run otherwise than the driver ({diff}); "
            "install the same mmrobust on every node"
        )


def run_eval_ray(
    config: EvalConfig,
    options: RayOptions,
    *,
    progress: bool = True,
    dataset: Dataset | None = None,
) -> RunResult:
    """:func:`mmrobust.run.eval.run_eval` with the model in Ray replicas (see module docstring).

    ``config.workers`` is the number of concurrent model calls per replica
    (default: the model's ``max_concurrency``). ``dataset``: ``config.data`` already loaded
    (``run.eval.evaluate`` loads it, and refuses a model that can answer none of its
    samples, before this is called: before the cluster is contacted).

    Raises:
        ValueError, WorkerPathError: Ray unreachable, no room for the replicas,
            a replica that cannot load the model or see the media.
        FileNotFoundError, DatasetError, UnknownNameError: as ``run_eval``.
    """
    config.validate()  # bad options fail before any replica starts
    parse_spec(config.model, config.model_args)
    with INTERRUPTS.watch(), ray_session(options) as session:
        replicas = start_replicas(
            session,
            options,
            model=config.model,
            model_args=config.model_args,
            eval_config=config,
            concurrency=config.workers,
        )
        try:
            executor = RayEvalExecutor(replicas)
            encoding = frame_encoding_of(config.model, config.model_args)
            model = RemoteModel.from_info(replicas.info, encoding)
            check_same_key(config, model, replicas.info)
            return run_eval(
                config, progress=progress, model=model, executor=executor, dataset=dataset
            )
        finally:
            replicas.close()  # nothing left to ask, or a refusal before the first block


__all__ = [
    "RayEvalExecutor",
    "RemoteModel",
    "Replicas",
    "check_same_key",
    "gpus_per_replica",
    "local_checkpoint",
    "media_paths",
    "replica_count",
    "run_eval_ray",
    "start_replicas",
]
