"""``mmrobust eval --executor ray``: model replicas in a Ray Data pipeline, the store on the driver.

:func:`run_eval_ray` loads the model once in a probe task with a replica's
resources (name, fingerprint, run key), then runs the ordinary
:func:`mmrobust.run.eval.run_eval` with two stand-ins: a :class:`RemoteModel`
on the driver that carries the replicas' name, fingerprint, media input,
frame encoding and batch size (so the run key, ``run.json`` and resume are
exactly those of a local run), and a :class:`RayEvalExecutor` that runs the
unfinished ``WorkItem`` s through ``distributed/pipeline.py`` (a Ray Data
``map_batches`` over an actor pool of replicas) and yields each block's rows.
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

from mmrobust.distributed import RayOptions
from mmrobust.distributed.pipeline import PipelineStats, probe_model, stream
from mmrobust.distributed.replicas import ReplicaSpec
from mmrobust.distributed.session import RaySession, check_paths, ray_session, worker_request
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.models.base import MediaInput, Model, Request, Response
from mmrobust.models.spec import PLACEMENTS, ModelSpec, parse_spec
from mmrobust.prompts import build_prompt
from mmrobust.run.config import EvalConfig
from mmrobust.run.eval import RunResult, run_eval
from mmrobust.run.executors import WorkItem
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
    ``media_input``, ``frame_format``, ``frame_encoding()``, ``batch_size``,
    ``max_concurrency``) as a replica reported it; :meth:`generate` is never called on the driver.
    """

    media_input: ClassVar[MediaInput] = "frames"

    def __init__(self, info: dict[str, Any]) -> None:
        self.name = str(info["name"])
        self.batch_size = int(info["batch_size"])
        self.max_concurrency = int(info["max_concurrency"])
        self._fingerprint = dict(info["fingerprint"])
        self._encoding: FrameEncoding | None = info.get("frame_encoding")

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> RemoteModel:
        """The stand-in for the model a replica described in ``Replica.ready``."""
        media: MediaInput = info["media_input"]
        fmt = info.get("frame_format", "arrays")
        sub = type("RemoteModel", (cls,), {"media_input": media, "frame_format": fmt})
        return sub(info)

    def frame_encoding(self) -> FrameEncoding:
        """The replicas' frame encoding (part of the run key: an ``openai:`` model's JPEG
        quality and size cap differ from the default)."""
        return self._encoding if self._encoding is not None else super().frame_encoding()

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
            )
        )
    return rows


def _first_media(items: Sequence[WorkItem]) -> list[str]:
    """The first media path the driver itself can see (what every replica must see too)."""
    for item in items:
        for sample in item.samples:
            for path in (sample.video, sample.image):
                if path is not None and not sample.error and Path(path).exists():
                    return [str(path)]
    return []


@dataclass
class Replicas:
    """The model replicas of a run: what they load, what each reserves, how many, and what
    the probe load reported (``Replica.ready``: name, fingerprint, run key ...).

    The replicas themselves are the actors of a Ray Data pool started by :meth:`stream`
    (``distributed/pipeline.py``).
    """

    session: RaySession
    spec: ReplicaSpec
    request: dict[str, float]
    stats: PipelineStats
    info: dict[str, Any]

    def check_paths(self, paths: Sequence[str]) -> None:
        """Check on every node that could host a replica that it sees ``paths``.

        Raises:
            WorkerPathError: a node cannot see one (names the node and the path).
        """
        if paths:
            check_paths(self.session, self.request, paths)

    def stream(
        self, items: Sequence[Any], *, method: str, args: tuple[Any, ...] = (), concurrency: int = 1
    ) -> Iterator[list[tuple[Any, Any]]]:
        """``pipeline.stream`` over these replicas (blocks of ``(item, result)``)."""
        return stream(
            self.session, self.spec, self.request, self.stats, items,
            method=method, args=args, concurrency=concurrency,
        )  # fmt: skip

    def concurrency(self) -> int:
        """Items a replica works on at once: ``--workers``, else the model's ``max_concurrency``."""
        return max(1, self.spec.concurrency or int(self.info.get("max_concurrency") or 1))


class RayEvalExecutor:
    """An ``Executor`` (``mmrobust.run.executors``) whose work runs in a Ray Data pipeline.

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
        self._running: Iterator[list[StoredRow]] | None = None

    def run(
        self, fn: Callable[[WorkItem], list[StoredRow]], items: Iterable[WorkItem]
    ) -> Iterator[list[StoredRow]]:
        """Yield the rows of each block of items as the replicas return them (any order)."""
        if not isinstance(fn, SampleProcessor):
            raise TypeError("RayEvalExecutor runs the runner's SampleProcessor only")
        theirs = self.replicas.info.get("key")
        if theirs != asdict(fn.key):
            raise RuntimeError(
                f"the Ray replicas compute another run key ({theirs}) than the driver "
                f"({asdict(fn.key)}); install the same mmrobust on every node"
            )
        work = list(items)
        if not (fn.text_only or fn.model.media_input == "none"):
            self.replicas.check_paths(_first_media(work))
        self._running = self._rows(fn, work)
        return self._running

    def _rows(self, fn: SampleProcessor, work: list[WorkItem]) -> Iterator[list[StoredRow]]:
        written = 0
        blocks = self.replicas.stream(
            work, method="eval_item", concurrency=self.replicas.concurrency()
        )
        try:
            for block in blocks:
                rows: list[StoredRow] = []
                for item, result in block:
                    rows += (
                        _error_rows(fn, item, result) if isinstance(result, Exception) else result
                    )
                written += len(rows)
                yield rows
        except RayError as exc:
            raise RunAborted(
                f"the Ray pipeline stopped ({type(exc).__name__}: {_first_line(exc)}); "
                "finished rows are kept, re-run the same command to resume",
                written,
            ) from None

    def cancel(self) -> None:
        """Stop the pipeline (blocks in flight are dropped, never written)."""
        running, self._running = self._running, None
        close = getattr(running, "close", None)
        if close is not None:
            close()

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
    """Size the replicas of ``model`` (resources of ``options``) and load the model once in a
    probe task with a replica's resources (its name, fingerprint and run key).

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
    info = probe_model(session, replica, request)
    return Replicas(session, replica, request, PipelineStats(n, dict(request)), info)


def run_eval_ray(config: EvalConfig, options: RayOptions, *, progress: bool = True) -> RunResult:
    """:func:`mmrobust.run.eval.run_eval` with the model in Ray replicas (see module docstring).

    ``config.workers`` is the number of concurrent model calls per replica
    (default: the model's ``max_concurrency``).

    Raises:
        ValueError, WorkerPathError: Ray unreachable, no room for the replicas,
            a replica that cannot load the model or see the media.
        FileNotFoundError, DatasetError, UnknownNameError: as ``run_eval``.
    """
    config.policy()  # bad frame options fail before any replica starts
    parse_spec(config.model, config.model_args)
    with ray_session(options) as session:
        replicas = start_replicas(
            session,
            options,
            model=config.model,
            model_args=config.model_args,
            eval_config=config,
            concurrency=config.workers,
        )
        executor = RayEvalExecutor(replicas)
        model = RemoteModel.from_info(replicas.info)
        return run_eval(config, progress=progress, model=model, executor=executor)


__all__ = [
    "API_BACKENDS",
    "RayEvalExecutor",
    "RemoteModel",
    "Replicas",
    "gpus_per_replica",
    "local_checkpoint",
    "replica_count",
    "run_eval_ray",
    "start_replicas",
]
