"""Options and helpers the ``mmrobust`` commands share.

The executor options of ``tamper`` / ``eval`` / ``mmr-data`` (issue 22,
:mod:`mmrobust.distributed`), lm-eval's ``--model-args`` comma form (issue 30), and the one-line
error exit every command uses (``error: <message>`` on stderr, exit 2 unless told otherwise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from mmrobust.distributed import RayOptions

EXECUTOR = typer.Option(
    "local", "--executor", help="local (this machine) or ray (a Ray cluster; docs/scaling.md)."
)
RAY_ADDRESS = typer.Option(
    None, "--ray-address", help="Ray cluster (default: RAY_ADDRESS, else a local Ray for the run)."
)
REPLICAS = typer.Option(
    None, "--replicas", help="Ray: model replicas / sources at once (default: fill the cluster)."
)
RAY_CPUS = typer.Option(1.0, "--ray-cpus-per-worker", help="Ray: CPUs per replica or task.")
RAY_GPUS = typer.Option(
    None, "--ray-gpus-per-worker", help="Ray: GPUs per replica (default: 1 for hf: if any, else 0)."
)
RAY_RESOURCE = typer.Option(
    [],
    "--ray-resource",
    metavar="NAME=AMOUNT",
    help="Ray: custom resource per worker (repeatable).",
)

LOG_TO = typer.Option(
    None, "--log-to", help="Also log runs to: wandb (pip install 'mmrobust[wandb]')."
)
WANDB_PROJECT = typer.Option("mmrobust", "--wandb-project", help="W&B project for --log-to.")

MODEL_ARGS_HELP = "Backend settings in lm-eval's comma form (repeatable)."


def model_args_option(help: str = MODEL_ARGS_HELP) -> list[str]:
    """``--model-args K=V,K=V`` (also ``--model_args``): lm-eval's comma form (issue 30)."""
    option: list[str] = typer.Option(
        [], "--model-args", "--model_args", metavar="K=V,K=V", help=help
    )
    return option


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error to stderr and return the exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def fail_on(exc: BaseException, code: int = 2) -> typer.Exit:
    """:func:`fail` with the first line of ``exc`` (its type name when it has no message)."""
    return fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, code)


def ray_options(
    executor: str,
    address: str | None,
    replicas: int | None,
    cpus: float,
    gpus: float | None,
    resources: list[str],
) -> RayOptions | None:
    """``RayOptions`` for ``--executor ray``, ``None`` for local; exits 2 with one line on error."""
    from mmrobust.distributed import RayUnavailableError
    from mmrobust.distributed import ray_options as make_options

    try:
        return make_options(
            executor, address=address, replicas=replicas, cpus_per_worker=cpus,
            gpus_per_worker=gpus, resources=resources,
        )  # fmt: skip
    except (ValueError, RayUnavailableError) as exc:
        raise fail(str(exc)) from None


def log_to_stderr(quiet: bool = False) -> None:
    """Show mmrobust's own log lines (downloads, unzipping, cache warnings) on stderr."""
    import logging

    logger = logging.getLogger("mmrobust")
    if not any(getattr(h, "_mmrobust", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._mmrobust = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)


__all__ = [
    "EXECUTOR",
    "LOG_TO",
    "MODEL_ARGS_HELP",
    "RAY_ADDRESS",
    "RAY_CPUS",
    "RAY_GPUS",
    "RAY_RESOURCE",
    "REPLICAS",
    "WANDB_PROJECT",
    "fail",
    "fail_on",
    "log_to_stderr",
    "model_args_option",
    "ray_options",
]
