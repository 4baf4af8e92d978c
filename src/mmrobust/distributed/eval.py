"""``mmrobust eval --executor ray``: model replicas on a Ray cluster, the store on the driver.

:func:`run_eval_ray` starts the replicas (each loads the model once), then runs
the ordinary :func:`mmrobust.run.eval.run_eval` with two stand-ins: a
:class:`RemoteModel` on the driver that carries the replicas' name,
fingerprint, media input and batch size (so the run key, ``run.json`` and
resume are exactly those of a local run), and a :class:`RayEvalExecutor`
that sends each ``WorkItem`` to a replica and yields the rows it returns.
The driver alone writes ``results.sqlite``; metrics are computed from the
store as in a local run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

import ray

from mmrobust.distributed import RayOptions
from mmrobust.distributed.replicas import ReplicaLost, ReplicaPool, ReplicaSpec
from mmrobust.distributed.session import RaySession, ray_session, worker_request
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.models.base import MediaInput, Model, Request, Response
from mmrobust.models.spec import PLACEMENTS, ModelSpec, frame_encoding_of, parse_spec
from mmrobust.prompts import build_prompt
from mmrobust.run.config import EvalConfig
from mmrobust.run.eval import RunResult, run_eval
from mmrobust.run.executors import WorkItem
from mmrobust.run.interrupts import INTERRUPTS
from mmrobust.run.keys import key_difference, key_parts
from mmrobust.run.process import RunAborted, SampleProcessor
from mmrobust.status import Status
from mmrobust.store import StoredRow

API_BACKENDS = frozenset(n for n, p in PLACEMENTS.items() if p == "api")
"""Built-in backends of placement ``"api"`` (kept for old imports; the code asks
``ModelSpec.placement``): their replicas only send requests, so one replica by
default (raise its ``concurrency`` instead: the server is what scales)."""


class RemoteModel(Model):
    """The driver's stand-in for a model loaded in Ray replicas.

    Carries what the runner reads from a model (``name``, ``fingerprint()``,
    ``media_input``, ``batch_size``, ``max_concurrency``) as a replica reported
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
        sub = type("RemoteModel", (cls,), {"media_input": media})
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


class RayEvalExecutor:
    """An ``Executor`` (``mmrobust.run.executors``) whose work runs in a :class:`ReplicaPool`.

    Before the first item it asks every replica whether it sees every media
    file of the items (not only the first: a node may lack one sub-folder),
    and checks that the replicas computed the driver's run key. A media file
    a replica's node cannot read during the run gives a ``model_error`` row
    (``Replica.eval_item``), which a re-run asks again, not a final ``media_error``.
    Items whose replicas kept dying come back as ``model_error`` rows; when
    every replica is gone the run stops like any aborted run (``RunAborted``:
    finished rows kept, exit 3, re-run to resume).
    """

    def __init__(self, pool: ReplicaPool, session: RaySession) -> None:
        self.pool = pool
        self.session = session
        self.workers = pool.capacity

    def run(
        self, fn: Callable[[WorkItem], list[StoredRow]], items: Iterable[WorkItem]
    ) -> Iterator[list[StoredRow]]:
        """Yield each item's rows as a replica returns them (any order)."""
        if not isinstance(fn, SampleProcessor):
            raise TypeError("RayEvalExecutor runs the runner's SampleProcessor only")
        theirs = self.pool.first_info.get("key")
        if theirs != asdict(fn.key):  # run_eval_ray checked the parts; another caller may not
            raise ValueError(
                f"the Ray replicas compute another run key ({theirs}) than the driver "
                f"({asdict(fn.key)}); install the same mmrobust on every node"
            )
        todo = list(items)
        if not (fn.text_only or fn.model.media_input == "none"):
            media = media_paths(todo)
            if media:
                self.pool.check_paths(media)
        written = 0
        try:
            for item, result in self.pool.map("eval_item", todo):
                rows = _error_rows(fn, item, result) if isinstance(result, Exception) else result
                written += len(rows)
                yield rows
        except ReplicaLost as exc:
            raise RunAborted(str(exc), written) from None

    def cancel(self) -> None:
        """Hand out no more items; cancel the queued ones."""
        self.pool.cancel()

    def request_stop(self) -> None:
        """Hand out no more items (signal-safe; Ctrl-C)."""
        self.pool.request_stop()

    def describe(self) -> dict[str, Any]:
        """The ``executor`` block of ``run.json``."""
        return {
            "name": "ray",
            "address": self.session.address,
            "ray_version": ray.__version__,
            **self.pool.describe(),
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
) -> ReplicaPool:
    """Start the replicas of ``model`` with the resources of ``options``; wait until loaded.

    Raises:
        ValueError, WorkerPathError: bad spec, no room, a replica that cannot load or see a path.
    """
    spec = parse_spec(model, model_args)
    request = worker_request(options, gpus=gpus_per_replica(session, options, spec))
    n = replica_count(session, options, request, spec)
    replica = ReplicaSpec(
        model=model,
        model_args=dict(model_args),
        cwd=session.cwd,
        must_see=local_checkpoint(spec),
        eval_config=eval_config,
        concurrency=concurrency,
    )
    return ReplicaPool.start(session, replica, request, n)


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


def run_eval_ray(config: EvalConfig, options: RayOptions, *, progress: bool = True) -> RunResult:
    """:func:`mmrobust.run.eval.run_eval` with the model in Ray replicas (see module docstring).

    ``config.workers`` is the number of concurrent model calls per replica
    (default: the model's ``max_concurrency``).

    Raises:
        ValueError, WorkerPathError: Ray unreachable, no room for the replicas,
            a replica that cannot load the model or see the media.
        FileNotFoundError, DatasetError, UnknownNameError: as ``run_eval``.
    """
    config.validate()  # bad options fail before any replica starts
    parse_spec(config.model, config.model_args)
    with INTERRUPTS.watch(), ray_session(options) as session:
        pool = start_replicas(
            session,
            options,
            model=config.model,
            model_args=config.model_args,
            eval_config=config,
            concurrency=config.workers,
        )
        try:
            executor = RayEvalExecutor(pool, session)
            encoding = frame_encoding_of(config.model, config.model_args)
            model = RemoteModel.from_info(pool.first_info, encoding)
            check_same_key(config, model, pool.first_info)
            return run_eval(config, progress=progress, model=model, executor=executor)
        finally:
            pool.shutdown()


__all__ = [
    "API_BACKENDS",
    "RayEvalExecutor",
    "RemoteModel",
    "check_same_key",
    "gpus_per_replica",
    "local_checkpoint",
    "media_paths",
    "replica_count",
    "run_eval_ray",
    "start_replicas",
]
