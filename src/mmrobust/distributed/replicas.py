"""A model replica: one loaded model, and what it turns work items into.

A :class:`Replica` holds one loaded model (an ``hf:`` model per GPU, the
forensic detector per CPU, an API client with its own request concurrency)
and turns work items into results where it runs: an eval ``WorkItem`` into
``StoredRow`` s (decoding the frames itself), an image into an ``mmr-data``
``ItemResult``. It never writes a file the run keeps: the driver does.

Replicas live in Ray actors (``distributed/pipeline.py``: ``ReplicaStage``,
one per replica, sent blocks of items); retries and restarts are Ray's. The
hand-written dispatcher that lived here (one remote call per item, least-loaded
pick, its own re-queue, pings and timeouts) is gone (issue 29).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import ray

from mmrobust.distributed.nodelocal import node_local_failures
from mmrobust.distributed.session import probe_paths
from mmrobust.plugins import load_plugins


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
        load_plugins()  # the job's setup hook did, unless the driver was connected before us
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
                media_kinds=list(self.model.media_kinds),
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


__all__ = ["Replica", "ReplicaSpec"]
