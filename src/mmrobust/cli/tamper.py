"""``mmrobust tamper`` (issue 2): build a tampered benchmark; calls :func:`mmrobust.tamper.console.run_tamper`."""

from __future__ import annotations

from pathlib import Path

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
    ray_options,
)


@app.command("tamper", short_help="Build a tampered video benchmark from real videos.")
def tamper(
    sources: list[Path] = typer.Argument(
        ...,
        metavar="SOURCES",
        readable=False,  # an unreadable source is an errors.jsonl line, not the end (27.12)
        help="Source videos and/or folders (recursive).",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Build folder."),
    effects: str = typer.Option(
        "dropping,masking,rotation,substitution,repetition",
        "--effects",
        help="Comma list of effects (paper: the default five; also noise, shuffle, blur, flip, "
        "speed, partial_mask).",
    ),
    param: list[str] = typer.Option(
        [],
        "--param",
        "-p",
        metavar="EFFECT.KEY=VALUE",
        help="Effect parameter (repeatable), e.g. rotation.degrees=90.",
    ),
    duration: float = typer.Option(1.0, help="Window length in seconds."),
    position: str = typer.Option(
        "middle",
        help="start, middle, end or a fraction in [0, 1]; a comma list (start,middle,end) "
        "builds each into OUT/<position>/ and joins them in OUT/manifest.jsonl (for --task when).",
    ),
    seed: int = typer.Option(0, help="Seed for donors, offsets, noise, shuffles."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Parallel sources."),
    layout: str = typer.Option("native", help="native or mvtamperbench (adds json/<task>.json)."),
    style: str = typer.Option(
        "mmrobust",
        help="mmrobust (the --codec encoder, MPEG-4 Part 2 by default, at the exact fps, "
        "originals re-encoded too) or released (OpenCV mp4v, int fps, originals copied: "
        "reproduces the released dataset, label leak included).",
    ),
    codec_control: bool = typer.Option(
        True, "--codec-control/--no-codec-control", help="Re-encode originals like tampered clips."
    ),
    official_fps: bool = typer.Option(False, help="Window of int(fps) x duration frames."),
    task: str | None = typer.Option(None, help="Task name recorded in the manifest/json."),
    donor: list[Path] = typer.Option(
        [], "--donor", metavar="VIDEO", help="Substitution donor video (repeatable)."
    ),
    codec: str = typer.Option(
        "mpeg4",
        help="PyAV encoder: mpeg4 (the released dataset's codec, fixed quantiser --qscale) "
        "or libx264 (crf/preset: ~2 dB higher PSNR, 2-4x slower).",
    ),
    crf: int = typer.Option(18, help="Constant rate factor (x264/x265/vpx)."),
    preset: str = typer.Option("veryfast", help="x264/x265 preset (fast: smaller files)."),
    qscale: int | None = typer.Option(
        None,
        min=1,
        max=31,
        help="Fixed quantiser 1-31 for mpeg4/mpeg2video (3 when not given: at least the "
        "released mp4v clips' PSNR); unused by crf codecs.",
    ),
    threads: int = typer.Option(
        2,  # tamper.config.TAMPER_THREADS (not imported here: the CLI starts without PyAV)
        min=1,
        help="Encoder threads (slices per frame). Fixed, so a build's bytes do not depend "
        "on the machine's cores; another count gives other bytes.",
    ),
    segments: bool = typer.Option(
        True,
        "--segments/--no-segments",
        help="Encode shared frames once and join (fast); --no-segments: one full encode per clip.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    executor: str = EXECUTOR,
    ray_address: str | None = RAY_ADDRESS,
    replicas: int | None = REPLICAS,
    ray_cpus_per_worker: float = RAY_CPUS,
    ray_gpus_per_worker: float | None = RAY_GPUS,
    ray_resource: list[str] = RAY_RESOURCE,
) -> None:
    """Build a tampered benchmark (MVTamperBench sections 3.2-3.3) from real videos."""
    from mmrobust.schema.window import WindowError
    from mmrobust.tamper.console import config_from_options, run_tamper
    from mmrobust.tamper.effects import EffectParamError

    try:
        config = config_from_options(
            effects=effects,
            params=param,
            duration=duration,
            position=position,
            seed=seed,
            official_fps=official_fps,
            codec_control=codec_control,
            style=style,
            codec=codec,
            crf=crf,
            preset=preset,
            qscale=qscale,
            threads=threads,
            segments=segments,
            layout=layout,
            task=task,
            donors=donor,
        )
    except (EffectParamError, WindowError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    ray = ray_options(
        executor, ray_address, replicas, ray_cpus_per_worker, ray_gpus_per_worker, ray_resource
    )
    try:
        report = run_tamper(
            sources, out, config, positions=position, jobs=jobs, quiet=quiet, ray=ray
        )
    except (ValueError, FileNotFoundError) as exc:
        # no source exists; several positions on Ray, Ray unreachable, a path not seen
        raise fail(str(exc)) from None
    if report.stopped:  # a full disk: the clips built so far are kept, resumable
        raise fail(
            f"stopped at a full disk: {report.stopped}; the {len(report.entries)} clips built "
            "so far are kept: free space and re-run the same command to resume",
            3,
        )
    if not report.ok:
        raise typer.Exit(1)
