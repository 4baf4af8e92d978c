"""``mmrobust audit`` (issue 15), ``mmr-data`` (issue 6) and ``list`` (issue 30).

Each calls one library function: :func:`mmrobust.audit.audit_dataset`,
:func:`mmrobust.mmrdata.command.generate`, :func:`mmrobust.catalog.catalog`.
"""

from __future__ import annotations

import typer

from mmrobust.cli._app import app
from mmrobust.cli.options import (
    EXECUTOR,
    RAY_ADDRESS,
    RAY_CPUS,
    RAY_GPUS,
    RAY_RESOURCE,
    REPLICAS,
    fail,
    fail_on,
    log_to_stderr,
    model_args_option,
    ray_options,
)


@app.command("audit", short_help="Leak audit: what metadata alone gives away.")
def audit_cmd(
    data: str = typer.Argument(
        ..., metavar="DATA", help="A tamper dataset (folder, manifest, TSV, hf:<repo>)."
    ),
    format: str | None = typer.Option(None, "--format", help="Dataset format (default: detected)."),
    images: str | None = typer.Option(
        None,
        "--media",
        "--images",
        help="Image or video folder of the dataset (--images: the same).",
    ),
    frames: int = typer.Option(8, "--frames", help="Segment-centre frames (window coverage)."),
    fps: float | None = typer.Option(None, "--fps", help="Sample F frames per second instead."),
    max_frames: int | None = typer.Option(None, "--max-frames", help="Cap for --fps."),
    out: str | None = typer.Option(None, "--out", help="Folder to write audit.json into."),
    seed: int = typer.Option(0, "--seed", help="Seed of the classifiers."),
    workers: int = typer.Option(4, "--workers", min=1, help="Threads probing clips."),
) -> None:
    """Leak audit: how well metadata alone (codec, container, fps, duration, bitrate, size)
    separates tampered from original clips, and window coverage under a frame policy."""
    from mmrobust.audit import audit_dataset, audit_text, write_audit
    from mmrobust.datasets import DatasetError, load_dataset
    from mmrobust.media.sampling import FramePolicy
    from mmrobust.registry import UnknownNameError

    log_to_stderr()
    try:
        policy = FramePolicy.choose(frames, fps, max_frames)
        dataset = load_dataset(data, format, images=images)
        result = audit_dataset(dataset, policy=policy, seed=seed, workers=workers)
    except (FileNotFoundError, DatasetError, UnknownNameError, ValueError) as exc:
        raise fail_on(exc) from None
    typer.echo(audit_text(result))
    if out:
        try:
            path = write_audit(result, out)
        except ValueError as exc:  # a read-only or full --out: the audit was printed above
            raise fail_on(exc) from None
        typer.echo(f"wrote {path}")


@app.command("mmr-data", short_help="Generate paired MMR training data (section 4).")
def mmr_data(
    images: list[str] = typer.Argument(
        ..., metavar="IMAGES", help="Image files or folders (searched recursively)."
    ),
    model: str = typer.Option(..., "--model", help="Model SPEC, e.g. openai:gpt-4o."),
    model_arg: list[str] = typer.Option(
        [], "--model-arg", metavar="KEY=VALUE", help="Backend setting (repeatable)."
    ),
    model_args: list[str] = model_args_option(),
    out: str = typer.Option(..., "--out", help="Output folder (created; reused to resume)."),
    pairs: int = typer.Option(4, "--pairs", min=1, help="Positive/negative pairs asked per image."),
    no_resume: bool = typer.Option(False, "--no-resume", help="Redo images already done."),
    executor: str = EXECUTOR,
    ray_address: str | None = RAY_ADDRESS,
    replicas: int | None = REPLICAS,
    ray_cpus_per_worker: float = RAY_CPUS,
    ray_gpus_per_worker: float | None = RAY_GPUS,
    ray_resource: list[str] = RAY_RESOURCE,
) -> None:
    """Generate paired positive/negative training data (MMR paper section 4).

    Exits 1, with the first failure, when no training sample came out (every image failed
    or every pair was dropped); 2 on bad options or inputs.
    """
    from rich.console import Console

    from mmrobust.mmrdata.command import generate, no_sample_error, summary_line
    from mmrobust.mmrdata.pipeline import ItemResult
    from mmrobust.models import parse_model_args
    from mmrobust.registry import UnknownNameError

    console = Console(stderr=True)
    ray = ray_options(
        executor, ray_address, replicas, ray_cpus_per_worker, ray_gpus_per_worker, ray_resource
    )

    first_error: list[str] = []

    def progress(item: ItemResult, reused: bool) -> None:
        console.print(f"{item.image}: {'reused' if reused else item.status.value}", markup=False)
        if item.error and not first_error:
            first_error.append(f"{item.image}: {item.error}")

    try:
        summary = generate(
            images, model, parse_model_args(model_arg, model_args), out, n_pairs=pairs,
            resume=not no_resume, ray=ray, on_item=progress,
        )  # fmt: skip
    except (ValueError, FileNotFoundError, UnknownNameError, ImportError) as exc:
        # one line, not wrapped by rich at 80 columns, brackets not read as markup
        raise fail_on(exc) from None
    typer.echo(summary_line(summary))
    if why := no_sample_error(summary, first_error[0] if first_error else None):
        raise fail(why, 1)  # nothing to train on is a failed run (issue 30)


@app.command(
    "list", short_help="List datasets, models, effects, families, tasks, templates, references."
)
def list_cmd(
    kind: str | None = typer.Argument(
        None,
        metavar="KIND",
        help="datasets | models | effects | families | tasks | templates | references (default: all).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
) -> None:
    """List what exists: datasets (built-in, hub, formats), models (backends and their
    --model-arg settings with types and defaults), tamper effects with their parameters,
    benchmark families, tasks, prompt templates and reference versions; the same registries the errors name."""
    import json

    from mmrobust.catalog import as_text, catalog
    from mmrobust.registry import UnknownNameError

    try:
        entries = catalog(kind)
    except UnknownNameError as exc:
        raise fail(str(exc)) from None
    typer.echo(json.dumps(entries, indent=2) if as_json else as_text(entries))
