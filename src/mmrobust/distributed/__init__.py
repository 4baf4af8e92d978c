"""Running ``eval``, ``tamper`` and ``mmr-data`` on a Ray cluster (``--executor ray``).

This package is imported only when ``--executor ray`` is chosen; only this
file is free of a Ray import, so the options can be parsed and the "Ray is
not installed" message given without Ray. What runs where (docs/scaling.md):

* the driver (the ``mmrobust`` process) loads the dataset, plans the work,
  writes every file of the run folder (``results.sqlite``, ``run.json``,
  ``metrics.json``; ``manifest.jsonl`` / ``errors.jsonl``; ``items/*.json``)
  and shows the progress bar;
* model replicas (``distributed/replicas.py``) are a fixed pool of Ray actors
  (``distributed/pipeline.py``) that load the model once and turn blocks of
  work items into rows, decoding frames themselves;
* tamper sources are Ray tasks (``distributed/tamper.py``) that write their
  clips through the same atomic temporary-file + rename as a local build.

Modules: ``session.py`` (connect, nodes, path checks), ``replicas.py`` (one
loaded model), ``pipeline.py`` (the replica actors: blocks, dispatch,
results streamed back), ``eval.py``, ``tamper.py``, ``mmrdata.py`` (the three commands).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from mmrobust.registry import Registry

ExecutorName = Literal["local", "ray"]
EXECUTORS: tuple[str, ...] = ("local", "ray")

INSTALL_HINT = "--executor ray needs Ray: pip install -e '.[ray]'"

RAY_RUNNERS: Registry[Callable[..., Any]] = Registry("Ray runner")
"""What ``--executor ray`` runs for each command, named lazily (``"module:attr"``).

The local entry points (``run.eval.evaluate``, ``tamper.console.run_tamper``,
``mmrdata.command.generate``) look their Ray path up here instead of importing
``distributed.eval`` / ``.tamper`` / ``.mmrdata``, which import them: no import cycle
and no import from a lower layer into this one (issue 26, ``tests/test_layering.py``).
"""
RAY_RUNNERS.register("eval", "mmrobust.distributed.eval:run_eval_ray")
RAY_RUNNERS.register("tamper", "mmrobust.distributed.tamper:build_on_ray")
RAY_RUNNERS.register("mmr-data", "mmrobust.distributed.mmrdata:run_mmr_data_ray")
RAY_RUNNERS.register("perturb", "mmrobust.distributed.perturb:perturb_on_ray")


class RayUnavailableError(ImportError):
    """``--executor ray`` was chosen but Ray is not installed (one-line message)."""


class WorkerPathError(ValueError):
    """A Ray worker cannot see a path the run needs (a shared filesystem is required)."""


def ray_available() -> bool:
    """True when the ``ray`` package can be imported."""
    try:
        return importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):  # a broken install, or ``sys.modules["ray"] = None``
        return False


def require_ray() -> None:
    """Raise :class:`RayUnavailableError` unless Ray is installed."""
    if not ray_available():
        raise RayUnavailableError(INSTALL_HINT)


@dataclass(frozen=True)
class RayOptions:
    """Where and with what resources the Ray work runs (``--ray-*`` options).

    Attributes:
        address: cluster address (``host:port`` or ``ray://host:port``); ``None``
            takes ``RAY_ADDRESS`` from the environment, else starts a local Ray
            for the run (stopped at the end).
        replicas: model replicas (eval, mmr-data) or sources built at once
            (tamper); ``None`` fills the cluster (GPUs / ``gpus_per_worker``,
            else CPUs / ``cpus_per_worker``; one replica for API backends).
        cpus_per_worker: CPUs reserved per replica or tamper task (may be fractional).
        gpus_per_worker: GPUs reserved per replica; ``None``: 1 for ``hf:``
            models when the cluster has GPUs, else 0.
        resources: extra Ray custom resources per worker, e.g. ``{"A100": 1}``.
    """

    address: str | None = None
    replicas: int | None = None
    cpus_per_worker: float = 1.0
    gpus_per_worker: float | None = None
    resources: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.replicas is not None and self.replicas < 1:
            raise ValueError(f"--replicas must be at least 1, not {self.replicas}")
        if not self.cpus_per_worker >= 0 or not math.isfinite(self.cpus_per_worker):
            raise ValueError(f"--ray-cpus-per-worker must be >= 0, not {self.cpus_per_worker}")
        if self.gpus_per_worker is not None and not (
            self.gpus_per_worker >= 0 and math.isfinite(self.gpus_per_worker)
        ):
            raise ValueError(f"--ray-gpus-per-worker must be >= 0, not {self.gpus_per_worker}")
        if self.cpus_per_worker == 0 and not self.gpus_per_worker and not self.resources:
            raise ValueError(
                "a worker must reserve something: --ray-cpus-per-worker, "
                "--ray-gpus-per-worker or --ray-resource"
            )
        for name, amount in self.resources.items():
            if name in ("CPU", "GPU"):
                raise ValueError(
                    f"--ray-resource {name}: use --ray-{name.lower()}s-per-worker instead"
                )
            if not amount > 0 or not math.isfinite(amount):
                raise ValueError(f"--ray-resource {name}={amount}: the amount must be > 0")

    def describe(self) -> dict[str, Any]:
        """JSON form of the options (for ``run.json``)."""
        return {**asdict(self), "resources": dict(self.resources)}


def parse_resources(pairs: Sequence[str]) -> dict[str, float]:
    """Parse ``["NAME=AMOUNT", ...]`` (``--ray-resource``) into a dict.

    Raises:
        ValueError: a pair without ``=`` or with an amount that is not a number.
    """
    out: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"bad --ray-resource {pair!r}: expected NAME=AMOUNT")
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"bad --ray-resource {pair!r}: {value!r} is not a number") from None
    return out


def ray_options(
    executor: str,
    *,
    address: str | None = None,
    replicas: int | None = None,
    cpus_per_worker: float = 1.0,
    gpus_per_worker: float | None = None,
    resources: Sequence[str] = (),
) -> RayOptions | None:
    """The options of the ``--executor`` / ``--ray-*`` command-line flags.

    Returns:
        ``None`` for ``--executor local``; else the ``RayOptions``.

    Raises:
        ValueError: unknown executor, bad resources, or ``--ray-*`` flags with
            ``--executor local``.
        RayUnavailableError: ``--executor ray`` without Ray installed.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"--executor must be one of {', '.join(EXECUTORS)}, not {executor!r}")
    if executor == "local":
        given = [
            flag
            for flag, value in (
                ("--ray-address", address),
                ("--replicas", replicas),
                ("--ray-gpus-per-worker", gpus_per_worker),
                ("--ray-resource", resources or None),
            )
            if value is not None
        ]
        if given:
            raise ValueError(f"{', '.join(given)} only apply with --executor ray")
        return None
    require_ray()
    return RayOptions(
        address=address or None,
        replicas=replicas,
        cpus_per_worker=cpus_per_worker,
        gpus_per_worker=gpus_per_worker,
        resources=parse_resources(resources),
    )


__all__ = [
    "EXECUTORS",
    "INSTALL_HINT",
    "RayOptions",
    "RayUnavailableError",
    "WorkerPathError",
    "parse_resources",
    "ray_available",
    "ray_options",
    "require_ray",
]
