"""``mmrobust eval`` and ``rescore`` (issue 3): :func:`mmrobust.run.eval.evaluate`, :func:`mmrobust.run.rescore.rescore`."""

from __future__ import annotations

import typer

from mmrobust.cli._app import app
from mmrobust.cli.options import (
    EXECUTOR,
    LOG_TO,
    RAY_ADDRESS,
    RAY_CPUS,
    RAY_GPUS,
    RAY_RESOURCE,
    REPLICAS,
    WANDB_PROJECT,
    fail,
    fail_on,
    log_to_stderr,
    model_args_option,
    ray_options,
)


@app.command("eval", short_help="Run a model over a dataset (re-running resumes).")
def eval_cmd(
    data: str = typer.Option(
        ...,
        "--data",
        help="Dataset: manifest dir/file, MVTamperBench folder, TSV, JSONL, MMR json, mmr-demo, "
        "hf:<owner>/<name> (mmrobust list datasets).",
    ),
    model: str = typer.Option(
        ...,
        "--model",
        help="Model SPEC: constant:A, random[:seed], forensic, blind-overlap, blind-embed, "
        "openai:<m>, anthropic:<m>, gemini:<m>, hf:<id> (mmrobust list models).",
    ),
    out: str = typer.Option(
        ..., "--out", help="Run folder (results.sqlite, run.json, metrics.json)."
    ),
    model_arg: list[str] = typer.Option(
        [], "--model-arg", metavar="KEY=VALUE", help="Backend setting (repeatable)."
    ),
    model_args: list[str] = model_args_option(),
    format: str | None = typer.Option(None, "--format", help="Dataset format (default: detected)."),
    revision: str | None = typer.Option(
        None, "--revision", help="Hub revision (branch, tag or commit) of hf: data."
    ),
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
        "--tasks",
        help="Question about each tamper clip: detect (the paper's yes/no) | type | when | "
        "leading (docs/tasks.md). One task; `mmrobust run --task` takes a list.",
    ),
    prompt: str | None = typer.Option(
        None, "--prompt", help="structured | generic | cot | mmr | plain (default by benchmark)."
    ),
    option_style: str = typer.Option(
        "paper", "--option-style", help="paper ('A. Yes') | vlmevalkit ('(A) Yes')."
    ),
    permute: int = typer.Option(
        0, "--permute", min=0, help="Circularly shift the option order by K (position-bias check)."
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
        1000, "--bootstrap", min=0, help="Bootstrap resamples for 95% CIs (0 = off)."
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
    repeats: int = typer.Option(
        1,
        "--repeats",
        min=1,
        help="Ask every question K times (with --temperature): headline on the first ask, "
        "agreement, majority-vote and mean accuracy in metrics.json's stability block.",
    ),
    temperature: float | None = typer.Option(
        None,
        "--temperature",
        help="Sampling temperature of the backend (= --model-arg temperature=T).",
    ),
    log_samples: bool = typer.Option(
        False,
        "--log-samples",
        "--log_samples",
        help="Also write RUN_DIR/samples.jsonl: one line per stored row (docs/evaluation.md).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    log_to: str | None = LOG_TO,
    wandb_project: str = WANDB_PROJECT,
    executor: str = EXECUTOR,
    ray_address: str | None = RAY_ADDRESS,
    replicas: int | None = REPLICAS,
    ray_cpus_per_worker: float = RAY_CPUS,
    ray_gpus_per_worker: float | None = RAY_GPUS,
    ray_resource: list[str] = RAY_RESOURCE,
) -> None:
    """Run a model over a dataset; write RUN_DIR/{results.sqlite,run.json,metrics.json}. Re-running resumes."""
    from mmrobust.datasets import DatasetError
    from mmrobust.models.spec import parse_model_args
    from mmrobust.registry import UnknownNameError
    from mmrobust.report.tables import summary_text
    from mmrobust.report.wandb_log import check_log_to
    from mmrobust.run.config import EvalConfig
    from mmrobust.run.eval import evaluate
    from mmrobust.store import RunFolderWriteError

    log_to_stderr(quiet)
    try:
        check_log_to(log_to)
    except (ValueError, ImportError) as exc:
        raise fail_on(exc) from None
    ray = ray_options(
        executor, ray_address, replicas, ray_cpus_per_worker, ray_gpus_per_worker, ray_resource
    )
    try:
        from mmrobust.datasets.hub import with_revision

        data = with_revision(data, revision)  # hf:<owner>/<name> -> hf:<owner>/<name>@REV
        if "," in task:
            raise ValueError(
                f"eval runs one --task, got {task!r}: give one, or run several with "
                f"`mmrobust run --task {task}`"
            )
        config = EvalConfig(
            data=data, model=model, out=out, model_args=parse_model_args(model_arg, model_args),
            format=format,
            images=images, text_only=text_only, prompt=prompt, option_style=option_style,
            permute=permute, task=task, frames=frames, fps=fps, max_frames=max_frames, extract=extract,
            official=official, limit=limit, workers=workers, seed=seed, cache_dir=cache_dir,
            cache_size=cache_size, n_resamples=bootstrap, judge=judge,
            judge_args=parse_model_args(judge_arg), reference=reference,
            retry_failed=retry_failed, repeats=repeats, temperature=temperature,
        )  # fmt: skip
        result = evaluate(config, ray=ray, progress=not quiet)  # validates every option
    except RunFolderWriteError as exc:
        raise fail(
            f"{exc}; rows written so far are kept: free space (or copy the run folder "
            "elsewhere) and re-run the command to resume",
            3,
        ) from None
    except (FileNotFoundError, DatasetError, UnknownNameError, ValueError, ImportError) as exc:
        raise fail_on(exc) from None
    except KeyboardInterrupt:  # a second Ctrl-C: end now, not after the requests in flight
        _exit_now("interrupted twice: stopped at once; committed rows are kept; re-run the "
                  "same command to resume", 130)  # fmt: skip
    typer.echo(summary_text(result.metrics))
    typer.echo(f"{result.n_new} new rows, {result.n_skipped} resumed; wrote {result.run_dir}")
    if log_samples:  # also after an interrupted run: the rows stored so far
        from mmrobust.export import SAMPLES_FILE, export_run

        typer.echo(f"wrote {export_run(result.run_dir, 'jsonl', result.run_dir / SAMPLES_FILE)}")
    if log_to and not result.aborted:
        from mmrobust.report.wandb_log import log_to_wandb

        log_to_wandb([result.run_dir], project=wandb_project, log=typer.echo)
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
        raise fail(result.nothing_scored, 1)


def _exit_now(message: str, code: int) -> None:
    """Print ``error: message`` and end the process at once (worker threads still waiting on
    a server are not joined; committed rows are on disk)."""
    import os
    import sys

    typer.echo(f"error: {message}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@app.command("rescore", short_help="Re-score stored answers without calling the model.")
def rescore_cmd(
    run_dir: str = typer.Argument(
        ..., metavar="RUN_DIR", help="A run folder written by mmrobust eval."
    ),
    extract: str | None = typer.Option(
        None, "--extract", help="lenient | strict | official (default: the run's)."
    ),
    failures: str | None = typer.Option(
        None, "--failures", help="exclude | wrong: how tamper F1 counts parse failures."
    ),
    bootstrap: int | None = typer.Option(
        None, "--bootstrap", min=0, help="Bootstrap resamples (default: the run's)."
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
        raise fail(str(exc), 3) from None
    except (OSError, ValueError, UnknownNameError) as exc:  # OSError: missing, full disk
        raise fail_on(exc) from None
    typer.echo(rescore_text(run_dir))
    typer.echo(summary_text(metrics))
