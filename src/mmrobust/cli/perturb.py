"""``mmrobust perturb``: perturbed copies of a question set; calls :func:`mmrobust.perturb.perturb`."""

from __future__ import annotations

from pathlib import Path

import typer

from mmrobust.cli._app import app
from mmrobust.cli.options import fail, fail_on


@app.command(
    "perturb", short_help="Perturb the images or clips of any question set, for paired scoring."
)
def perturb(
    data: str = typer.Argument(
        ..., metavar="DATA", help="Question set: mmr-demo, a JSONL, an MMR file, a tamper set."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (eval --data OUT)."),
    effects: str = typer.Option(
        ...,
        "--effects",
        help="Comma list or all. Images: gaussian_noise, gaussian_blur, jpeg, box_mask, "
        "tilt, brightness, contrast, crop_resize, typographic. Clips: the image effects "
        "frame by frame, the tamper effects (not substitution), reverse, frame_rate. `mmrobust list effects` shows them.",
    ),
    severity: str = typer.Option("1,3,5", "--severity", help="Levels 1-5 (comma list)."),
    seed: int = typer.Option(0, help="Seed of every random choice (same seed: same bytes)."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Files built at once."),
    span: str = typer.Option(
        "window",
        "--span",
        help="Clips: window (a centred window sized by the severity) or whole (every frame).",
    ),
    format: str | None = typer.Option(None, "--format", help="Data format (as eval)."),
    images: str | None = typer.Option(None, "--images", help="Media root (as eval)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="First N samples only."),
) -> None:
    """Write OUT/questions.jsonl (clean and perturbed questions, linked by id), the media and
    a manifest; `mmrobust eval --data OUT` scores the pairs (the consistency family)."""
    from mmrobust.datasets.base import DatasetError
    from mmrobust.perturb import PerturbError
    from mmrobust.perturb import perturb as build

    try:
        result = build(
            data,
            effects,
            out,
            severities=severity,
            seed=seed,
            jobs=jobs,
            span=span,
            format=format,
            images=images,
            limit=limit,
        )
    except (PerturbError, DatasetError, FileNotFoundError, ValueError) as exc:
        raise fail_on(exc) from None
    except OSError as exc:
        raise fail(f"cannot write {out}: {exc}", 3) from None
    typer.echo(
        f"{result.questions} questions, {result.built} files built, {result.resumed} kept "
        f"from an earlier build, {result.failed} failed, {result.skipped} samples without media "
        f"skipped -> {result.out}"
    )
    if result.failed:  # as tamper: the rest is built and usable, the exit says some failed
        typer.echo(f"failed files: {result.out / 'errors.jsonl'}", err=True)
        raise typer.Exit(1)


__all__ = ["perturb"]
