"""``mmrobust finetune`` (issue 21; options and body in :mod:`mmrobust.finetune.command`),
``mmrobust tamper-data`` (issue 31; :mod:`mmrobust.cli.tamper_data`),
``mmrobust run`` (issue 30; options and body in :mod:`mmrobust.suite.command`) and
``mmrobust demo`` (issue 7, :func:`mmrobust.demo.run_demo`).
"""

from __future__ import annotations

import typer

from mmrobust.cli._app import app
from mmrobust.cli.options import (
    fail_on,
    model_args_option,
)
from mmrobust.cli.tamper_data import tamper_data_command  # light: typer only
from mmrobust.finetune.command import finetune_command  # light: typer + pydantic
from mmrobust.suite.command import run_command  # light: typer only

app.command("finetune", short_help="Fine-tune a VLM on MMR pairs or tamper clips (LoRA).")(
    finetune_command
)
app.command(
    "tamper-data", short_help="Training clips and questions from your videos, split by source."
)(tamper_data_command)
app.command("run", short_help="Several models x datasets x tasks, then one report.")(run_command)


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
    model_args: list[str] = model_args_option(
        "Settings of the extra models in lm-eval's comma form (repeatable)."
    ),
    mmr_json: str | None = typer.Option(
        None, "--mmr-json", help="Also run on the official MMR-benchmark.json."
    ),
    mmr_images: str | None = typer.Option(
        None, "--mmr-images", help="Image folder for --mmr-json (else text-only)."
    ),
    jobs: int = typer.Option(2, "--jobs", help="Worker processes for the tamper build."),
    bootstrap: int = typer.Option(
        1000, "--bootstrap", min=0, help="Bootstrap resamples for 95% CIs."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """The main job on built-in real data: build, evaluate, report (index.html)."""
    from pathlib import Path

    from rich.console import Console

    from mmrobust.demo import DemoConfig, run_demo, summary_table
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
        raise fail_on(exc) from None
    console.print(summary_table(result))
    console.print(f"report: {result.index_html}")
