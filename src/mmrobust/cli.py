"""The ``mmrobust`` command: thin wrappers over library calls.

Each command parses its options and calls one library function; anything a
command does, a notebook user can do by calling that function. Heavy modules
are imported inside the commands so ``mmrobust --help`` stays fast.

Ownership: one function per sub-command; edit only the command you own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from mmrobust import __version__

if TYPE_CHECKING:
    from mmrobust.distributed import RayOptions

app = typer.Typer(
    name="mmrobust",
    help="Measure how robust multimodal LLMs are: video tampering (MVTamperBench) and "
    "leading questions (MMR).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help (issues 30, 33.11): rich's option table cuts flag names with an
    # ellipsis at 80 columns and shows a "<bool>" type on every flag; plain help wraps the
    # descriptions and prints each flag whole, without a metavar for flags
    rich_markup_mode=None,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"mmrobust {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """mmrobust command line."""


# --- executor options shared by tamper / eval / mmr-data (issue 22, mmrobust.distributed) ---

_EXECUTOR = typer.Option(
    "local", "--executor", help="local (this machine) or ray (a Ray cluster; docs/scaling.md)."
)
_RAY_ADDRESS = typer.Option(
    None, "--ray-address", help="Ray cluster (default: RAY_ADDRESS, else a local Ray for the run)."
)
_REPLICAS = typer.Option(
    None, "--replicas", help="Ray: model replicas / sources at once (default: fill the cluster)."
)
_RAY_CPUS = typer.Option(1.0, "--ray-cpus-per-worker", help="Ray: CPUs per replica or task.")
_RAY_GPUS = typer.Option(
    None, "--ray-gpus-per-worker", help="Ray: GPUs per replica (default: 1 for hf: if any, else 0)."
)
_RAY_RESOURCE = typer.Option(
    [],
    "--ray-resource",
    metavar="NAME=AMOUNT",
    help="Ray: custom resource per worker (repeatable).",
)


def _ray_options(
    executor: str,
    address: str | None,
    replicas: int | None,
    cpus: float,
    gpus: float | None,
    resources: list[str],
) -> RayOptions | None:
    """``RayOptions`` for ``--executor ray``, ``None`` for local; exits 2 with one line on error."""
    from mmrobust.distributed import RayUnavailableError, ray_options

    try:
        return ray_options(
            executor, address=address, replicas=replicas, cpus_per_worker=cpus,
            gpus_per_worker=gpus, resources=resources,
        )  # fmt: skip
    except (ValueError, RayUnavailableError) as exc:
        raise _fail(str(exc)) from None


_MODEL_ARGS_HELP = "Backend settings in lm-eval's comma form (repeatable)."


def _model_args_option(help: str = _MODEL_ARGS_HELP) -> list[str]:
    """``--model-args K=V,K=V`` (also ``--model_args``): lm-eval's comma form (issue 30)."""
    option: list[str] = typer.Option(
        [], "--model-args", "--model_args", metavar="K=V,K=V", help=help
    )
    return option


# --- tamper (issue 2) ---------------------------------------------------------------------


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
    segments: bool = typer.Option(
        True,
        "--segments/--no-segments",
        help="Encode shared frames once and join (fast); --no-segments: one full encode per clip.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    executor: str = _EXECUTOR,
    ray_address: str | None = _RAY_ADDRESS,
    replicas: int | None = _REPLICAS,
    ray_cpus_per_worker: float = _RAY_CPUS,
    ray_gpus_per_worker: float | None = _RAY_GPUS,
    ray_resource: list[str] = _RAY_RESOURCE,
) -> None:
    """Build a tampered benchmark (MVTamperBench sections 3.2-3.3) from real videos."""
    from mmrobust.tamper.console import config_from_options, run_tamper
    from mmrobust.tamper.effects import EffectParamError
    from mmrobust.tamper.positions import parse_positions
    from mmrobust.tamper.window import WindowError

    try:
        positions = parse_positions(position)
        config = config_from_options(
            effects=effects,
            params=param,
            duration=duration,
            position=position.split(",")[0],
            seed=seed,
            official_fps=official_fps,
            codec_control=codec_control,
            style=style,
            codec=codec,
            crf=crf,
            preset=preset,
            qscale=qscale,
            segments=segments,
            layout=layout,
            task=task,
            donors=donor,
        )
    except (EffectParamError, WindowError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    ray = _ray_options(
        executor, ray_address, replicas, ray_cpus_per_worker, ray_gpus_per_worker, ray_resource
    )
    try:
        report = run_tamper(
            sources, out, config, positions=positions, jobs=jobs, quiet=quiet, ray=ray
        )
    except ValueError as exc:  # several positions on Ray, Ray unreachable, a path not seen
        raise _fail(str(exc)) from None
    if not report.ok:
        raise typer.Exit(1)


# --- eval / rescore / report / compare (issue 3) ------------------------------------------


def _log_to_stderr(quiet: bool = False) -> None:
    """Show mmrobust's own log lines (downloads, unzipping, cache warnings) on stderr."""
    import logging

    logger = logging.getLogger("mmrobust")
    if not any(getattr(h, "_mmrobust", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._mmrobust = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)


def _exit_now(message: str, code: int) -> None:
    """Print ``error: message`` and end the process at once (worker threads still waiting on
    a server are not joined; committed rows are on disk)."""
    import os
    import sys

    typer.echo(f"error: {message}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error to stderr and return the exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@app.command("eval", short_help="Run a model over a dataset (re-running resumes).")
def eval_cmd(
    data: str = typer.Option(
        ...,
        "--data",
        help="Dataset: manifest dir/file, MVTamperBench folder, TSV, JSONL, MMR json, mmr-demo.",
    ),
    model: str = typer.Option(
        ...,
        "--model",
        help="Model SPEC: constant:A, random[:seed], forensic, blind-overlap, blind-embed, openai:<m>, hf:<id>.",
    ),
    out: str = typer.Option(
        ..., "--out", help="Run folder (results.sqlite, run.json, metrics.json)."
    ),
    model_arg: list[str] = typer.Option(
        [], "--model-arg", metavar="KEY=VALUE", help="Backend setting (repeatable)."
    ),
    model_args: list[str] = typer.Option(
        [],
        "--model-args",
        "--model_args",
        metavar="K=V,K=V",
        help="Backend settings in lm-eval's comma form (repeatable).",
    ),
    format: str | None = typer.Option(None, "--format", help="Dataset format (default: detected)."),
    images: str | None = typer.Option(
        None,
        "--media",
        "--images",
        help="Folder the dataset's image or video paths are relative to (--images: the same).",
    ),
    text_only: bool = typer.Option(False, "--text-only", help="Send no media (blind ablation)."),
    task: str = typer.Option(
        "detect",
        "--task",
        help="Question about each tamper clip: detect (the paper's yes/no) | type | when | "
        "leading (docs/tasks.md).",
    ),
    prompt: str | None = typer.Option(
        None, "--prompt", help="structured | generic | cot | mmr | plain (default by benchmark)."
    ),
    option_style: str = typer.Option(
        "paper", "--option-style", help="paper ('A. Yes') | vlmevalkit ('(A) Yes')."
    ),
    permute: int = typer.Option(
        0, "--permute", help="Circularly shift the option order by K (position-bias check)."
    ),
    frames: int = typer.Option(8, "--frames", help="Segment-centre frames per video."),
    fps: float | None = typer.Option(
        None, "--fps", help="Sample F frames per second instead of --frames."
    ),
    max_frames: int | None = typer.Option(None, "--max-frames", help="Cap for --fps."),
    extract: str = typer.Option(
        "lenient", "--extract", help="Answer extraction: lenient | strict | official."
    ),
    official: bool = typer.Option(
        False,
        "--official",
        help="Reference protocol: the reference's prompt, frames and decisions; failures wrong.",
    ),
    reference: str | None = typer.Option(
        None,
        "--reference",
        help="VLMEvalKit version --official reproduces: eb58e9e/integration (default) or e8e78f0/head.",
    ),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N samples."),
    workers: int | None = typer.Option(
        None, "--workers", help="Concurrent batches (default: the model's max_concurrency)."
    ),
    seed: int = typer.Option(
        0, "--seed", help="Seed (bootstrap; --task option order; recorded in run.json)."
    ),
    cache_dir: str | None = typer.Option(
        None,
        "--cache-dir",
        help="Frame cache folder (default ~/.cache/mmrobust/frames; 'none' switches it off).",
    ),
    cache_size: str | None = typer.Option(
        None, "--cache-size", help="Frame cache cap, e.g. 10GB (default), 500MB; LRU eviction."
    ),
    bootstrap: int = typer.Option(
        1000, "--bootstrap", help="Bootstrap resamples for 95% CIs (0 = off)."
    ),
    judge: str | None = typer.Option(
        None,
        "--judge",
        help="Model SPEC of an LLM judge for replies extraction cannot parse (off).",
    ),
    judge_arg: list[str] = typer.Option(
        [], "--judge-arg", metavar="KEY=VALUE", help="Setting of the judge (repeatable)."
    ),
    retry_failed: bool = typer.Option(
        False,
        "--retry-failed",
        help="On resume, also ask again samples whose row is a final error "
        "(rejected, empty_reply, media_error, ...).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    executor: str = _EXECUTOR,
    ray_address: str | None = _RAY_ADDRESS,
    replicas: int | None = _REPLICAS,
    ray_cpus_per_worker: float = _RAY_CPUS,
    ray_gpus_per_worker: float | None = _RAY_GPUS,
    ray_resource: list[str] = _RAY_RESOURCE,
) -> None:
    """Run a model over a dataset; write RUN_DIR/{results.sqlite,run.json,metrics.json}. Re-running resumes."""
    from mmrobust.datasets import DatasetError
    from mmrobust.models.spec import parse_model_args
    from mmrobust.registry import UnknownNameError
    from mmrobust.report.tables import summary_text
    from mmrobust.run.config import EvalConfig
    from mmrobust.run.eval import evaluate
    from mmrobust.store import RunFolderWriteError

    _log_to_stderr(quiet)
    ray = _ray_options(
        executor, ray_address, replicas, ray_cpus_per_worker, ray_gpus_per_worker, ray_resource
    )
    try:
        config = EvalConfig(
            data=data, model=model, out=out, model_args=parse_model_args(model_arg, model_args),
            format=format,
            images=images, text_only=text_only, prompt=prompt, option_style=option_style,
            permute=permute, task=task, frames=frames, fps=fps, max_frames=max_frames, extract=extract,
            official=official, limit=limit, workers=workers, seed=seed, cache_dir=cache_dir,
            cache_size=cache_size, n_resamples=bootstrap, judge=judge,
            judge_args=parse_model_args(judge_arg), reference=reference,
            retry_failed=retry_failed,
        )  # fmt: skip
        result = evaluate(config, ray=ray, progress=not quiet)  # validates every option
    except RunFolderWriteError as exc:
        raise _fail(
            f"{exc}; rows written so far are kept: free space (or copy the run folder "
            "elsewhere) and re-run the command to resume",
            3,
        ) from None
    except (FileNotFoundError, DatasetError, UnknownNameError, ValueError, ImportError) as exc:
        raise _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    except KeyboardInterrupt:  # a second Ctrl-C: end now, not after the requests in flight
        _exit_now("interrupted twice: stopped at once; committed rows are kept; re-run the "
                  "same command to resume", 130)  # fmt: skip
    typer.echo(summary_text(result.metrics))
    typer.echo(f"{result.n_new} new rows, {result.n_skipped} resumed; wrote {result.run_dir}")
    if result.first_error and not result.aborted:
        typer.echo(f"first failure: {result.first_error}", err=True)
    if result.aborted:
        typer.echo(f"error: {result.aborted}", err=True)
        raise typer.Exit(3)
    if result.interrupted:
        typer.echo(
            "interrupted: finished rows are kept; re-run the same command to resume", err=True
        )
        raise typer.Exit(130)
    if result.nothing_scored:
        raise _fail(result.nothing_scored, 1)


@app.command("rescore", short_help="Re-score stored answers without calling the model.")
def rescore_cmd(
    run_dir: str = typer.Argument(..., help="A run folder written by mmrobust eval."),
    extract: str | None = typer.Option(
        None, "--extract", help="lenient | strict | official (default: the run's)."
    ),
    failures: str | None = typer.Option(
        None, "--failures", help="exclude | wrong: how tamper F1 counts parse failures."
    ),
    bootstrap: int | None = typer.Option(
        None, "--bootstrap", help="Bootstrap resamples (default: the run's)."
    ),
    judge: str | None = typer.Option(
        None, "--judge", help="Model SPEC of an LLM judge for replies extraction cannot parse."
    ),
    judge_arg: list[str] = typer.Option(
        [], "--judge-arg", metavar="KEY=VALUE", help="Setting of the judge (repeatable)."
    ),
    reference: str | None = typer.Option(
        None,
        "--reference",
        help="VLMEvalKit version for official tamper decisions (default: the run's).",
    ),
) -> None:
    """Recompute extraction and metrics from stored raw answers, without calling the model."""
    from mmrobust.models.spec import parse_model_args
    from mmrobust.registry import UnknownNameError
    from mmrobust.report.tables import rescore_text, summary_text
    from mmrobust.run.process import RunAborted
    from mmrobust.run.rescore import rescore

    try:  # rescore validates --extract / --failures
        metrics = rescore(
            run_dir, extract_mode=extract, failures=failures, n_resamples=bootstrap,
            judge=judge, judge_args=parse_model_args(judge_arg), reference=reference,
        )  # fmt: skip
    except RunAborted as exc:  # a dead judge: nothing was changed
        raise _fail(str(exc), 3) from None
    except (OSError, ValueError, UnknownNameError) as exc:  # OSError: missing, full disk
        raise _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    typer.echo(rescore_text(run_dir))
    typer.echo(summary_text(metrics))


@app.command("report", short_help="index.html, tables and plots over run folders.")
def report_cmd(
    run_dirs: list[str] = typer.Argument(..., metavar="RUN_DIRS", help="One or more run folders."),
    out: str = typer.Option(
        ..., "--out", help="Output folder (index.html, report.md, CSV tables, PNG plots)."
    ),
    title: str = typer.Option("mmrobust report", "--title", help="Title of index.html."),
    audit: list[str] = typer.Option(
        [],
        "--audit",
        metavar="AUDIT_JSON",
        help="audit.json from `mmrobust audit --out` to show as a panel (repeatable).",
    ),
    published: bool | None = typer.Option(
        None,
        "--published/--no-published",
        help="The papers' published rows (MVTamperBench Table 7, MMR Table 2) as grey reference "
        "rows in the leaderboards: by default shown for runs on the released benchmarks and "
        "hidden (a toggle in the page) otherwise; --published shows them, --no-published "
        "leaves them out.",
    ),
    thumbs: int = typer.Option(
        400, "--thumbs", min=0, help="Samples that get a thumbnail strip in the sample browser."
    ),
    thumb_seconds: float = typer.Option(
        20.0,
        "--thumb-seconds",
        min=0,
        help="Time budget for drawing thumbnails (strips already drawn in --out are reused).",
    ),
) -> None:
    """index.html plus tables (Markdown/CSV, MVTamperBench Table 7 / MMR Table 2 layouts) and plots."""
    from mmrobust.report.site import build_site

    try:
        site = build_site(
            run_dirs, out, title=title, published=published, max_thumbs=thumbs,
            thumb_seconds=thumb_seconds, audits=audit,
        )  # fmt: skip
    except (OSError, ValueError) as exc:  # OSError: missing folder, full disk under --out
        raise _fail(str(exc).splitlines()[0]) from None
    typer.echo(site.summary())


@app.command("compare", short_help="Paired comparison of two runs (McNemar's test).")
def compare_cmd(
    run_a: str = typer.Argument(..., help="First run folder."),
    run_b: str = typer.Argument(..., help="Second run folder (same samples)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of the table."),
) -> None:
    """Paired comparison of two runs on their common samples: the 2x2 table of right/wrong,
    each run's accuracy, and McNemar's exact test."""
    import json

    from mmrobust.report import compare_runs

    try:
        result = compare_runs(run_a, run_b)
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc).splitlines()[0]) from None
    typer.echo(json.dumps(result.as_dict(), indent=2) if as_json else result.as_text())


# --- audit (issue 15) ---------------------------------------------------------------------


@app.command("audit", short_help="Leak audit: what metadata alone gives away.")
def audit_cmd(
    data: str = typer.Argument(..., help="A tamper dataset (folder, manifest, TSV, hf:<repo>)."),
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
    import json

    from mmrobust.audit import audit_dataset, audit_text
    from mmrobust.datasets import DatasetError, load_dataset
    from mmrobust.media.sampling import FramePolicy
    from mmrobust.registry import UnknownNameError

    _log_to_stderr()
    try:
        policy = (
            FramePolicy(mode="fps", fps=fps, max_frames=max_frames)
            if fps is not None
            else FramePolicy(mode="segments", n_frames=frames)
        )
        dataset = load_dataset(data, format, images=images)
        result = audit_dataset(dataset, policy=policy, seed=seed, workers=workers)
    except (FileNotFoundError, DatasetError, UnknownNameError, ValueError) as exc:
        raise _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    typer.echo(audit_text(result))
    if out:
        path = Path(out) / "audit.json"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:  # a read-only or full --out: the audit was printed above
            raise _fail(f"cannot write {path}: {exc.strerror or type(exc).__name__}") from None
        typer.echo(f"wrote {path}")


# --- mmr-data (issue 6) -------------------------------------------------------------------


@app.command("mmr-data", short_help="Generate paired MMR training data (section 4).")
def mmr_data(
    images: list[str] = typer.Argument(
        ..., metavar="IMAGES", help="Image files or folders (searched recursively)."
    ),
    model: str = typer.Option(..., "--model", help="Model SPEC, e.g. openai:gpt-4o."),
    model_arg: list[str] = typer.Option(
        [], "--model-arg", metavar="KEY=VALUE", help="Backend setting (repeatable)."
    ),
    model_args: list[str] = _model_args_option(),
    out: str = typer.Option(..., "--out", help="Output folder (created; reused to resume)."),
    pairs: int = typer.Option(4, "--pairs", min=1, help="Positive/negative pairs asked per image."),
    no_resume: bool = typer.Option(False, "--no-resume", help="Redo images already done."),
    executor: str = _EXECUTOR,
    ray_address: str | None = _RAY_ADDRESS,
    replicas: int | None = _REPLICAS,
    ray_cpus_per_worker: float = _RAY_CPUS,
    ray_gpus_per_worker: float | None = _RAY_GPUS,
    ray_resource: list[str] = _RAY_RESOURCE,
) -> None:
    """Generate paired positive/negative training data (MMR paper section 4).

    Exits 1, with the first failure, when no training sample came out (every image failed
    or every pair was dropped); 2 on bad options or inputs.
    """
    from rich.console import Console

    from mmrobust.mmrdata.command import generate
    from mmrobust.mmrdata.pipeline import ItemResult
    from mmrobust.models import parse_model_args
    from mmrobust.registry import UnknownNameError

    console = Console(stderr=True)
    ray = _ray_options(
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
        raise _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    typer.echo(
        f"{summary.images} images {summary.statuses}; pairs kept {summary.pairs_kept} of "
        f"{summary.pairs_parsed}; LLaVA samples {summary.turns_kept}; dropped {summary.dropped}; "
        f"outputs in {summary.out_dir}"
    )
    if summary.turns_kept == 0:  # nothing to train on is a failed run (issue 30)
        why = first_error[0] if first_error else f"statuses {summary.statuses}"
        if summary.dropped and not first_error:
            why += f", dropped {summary.dropped}"
        raise _fail(f"generated no training sample from {summary.images} images ({why})", 1)


# --- list (issue 30): what exists, from the registries (mmrobust.catalog) ---------------


@app.command("list", short_help="List datasets, models, effects, tasks, templates, references.")
def list_cmd(
    kind: str | None = typer.Argument(
        None,
        metavar="KIND",
        help="datasets | models | effects | tasks | templates | references (default: all).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
) -> None:
    """List what exists: datasets (built-in, hub, formats), models (backends and their
    --model-arg settings with types and defaults), tamper effects with their parameters,
    tasks, prompt templates and reference versions; the same registries the errors name."""
    import json

    from mmrobust.catalog import as_text, catalog
    from mmrobust.registry import UnknownNameError

    try:
        entries = catalog(kind)
    except UnknownNameError as exc:
        raise _fail(str(exc)) from None
    typer.echo(json.dumps(entries, indent=2) if as_json else as_text(entries))


# --- finetune (issue 21): options and body live in mmrobust.finetune.command -------------

from mmrobust.finetune.command import finetune_command  # noqa: E402  (light: typer + pydantic)

app.command("finetune", short_help="Fine-tune a VLM on MMR paired data (LoRA).")(finetune_command)


# --- run (issue 30): options and body live in mmrobust.suite.command ----------------------

from mmrobust.suite.command import run_command  # noqa: E402  (light: typer only)

app.command("run", short_help="Several models x datasets x tasks, then one report.")(run_command)


# --- demo (issue 7) -----------------------------------------------------------------------


@app.command("demo", short_help="The main job on built-in real data.")
def demo_cmd(
    out: str = typer.Option(
        "mmrobust-demo", "--out", help="Output folder (tamper-set/, runs/, report/)."
    ),
    model: list[str] = typer.Option(
        [],
        "--model",
        metavar="SPEC",
        help="Extra model to evaluate on both benchmarks (repeatable).",
    ),
    model_arg: list[str] = typer.Option(
        [], "--model-arg", metavar="KEY=VALUE", help="Setting of the extra models (repeatable)."
    ),
    model_args: list[str] = _model_args_option(
        "Settings of the extra models in lm-eval's comma form (repeatable)."
    ),
    mmr_json: str | None = typer.Option(
        None, "--mmr-json", help="Also run on the official MMR-benchmark.json."
    ),
    mmr_images: str | None = typer.Option(
        None, "--mmr-images", help="Image folder for --mmr-json (else text-only)."
    ),
    jobs: int = typer.Option(2, "--jobs", help="Worker processes for the tamper build."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples for 95% CIs."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """The main job on built-in real data: build, evaluate, report (index.html)."""
    from pathlib import Path

    from rich.console import Console
    from rich.table import Table

    from mmrobust.demo import DemoConfig, run_demo
    from mmrobust.models.spec import parse_model_args
    from mmrobust.registry import UnknownNameError

    console = Console(stderr=False, soft_wrap=True)
    if not console.is_terminal:  # a log file: never truncate the summary table
        console = Console(stderr=False, soft_wrap=True, width=160)
    try:
        result = run_demo(
            DemoConfig(
                out=Path(out), models=model, model_args=parse_model_args(model_arg, model_args),
                mmr_json=Path(mmr_json) if mmr_json else None,
                mmr_images=Path(mmr_images) if mmr_images else None,
                jobs=jobs, progress=not quiet, n_resamples=bootstrap,
            ),
            log=lambda msg: console.print(msg, highlight=False),
        )  # fmt: skip
    except (FileNotFoundError, UnknownNameError, ValueError, RuntimeError, ImportError) as exc:
        raise _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    from mmrobust.report.units import pct_sign

    table = Table(title="mmrobust demo (scores and rates in %)", expand=False)
    for col in ("run", "benchmark", "input", "n", "score", "parse-fail", "errors"):
        left = col in ("run", "benchmark", "input", "score")
        table.add_column(col, justify="left" if left else "right", no_wrap=True)
    for row in result.summary:
        table.add_row(
            row["run"], str(row["benchmark"]), row["input"], str(row["n"]),
            str(row.get("score", "")), pct_sign(row["parse_fail_rate"] or 0),
            pct_sign(row["error_rate"] or 0),
        )  # fmt: skip
    console.print(table)
    console.print(f"report: {result.index_html}")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
