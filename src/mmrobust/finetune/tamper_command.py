"""The ``mmrobust tamper-data`` command: options -> :class:`TamperDataConfig` -> the build.

Registered in :mod:`mmrobust.cli` next to ``finetune``; the body is here, with the
module it drives (:mod:`mmrobust.finetune.tamper_data`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def _floats(text: str, option: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise typer.BadParameter(f"{option}: comma-separated numbers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise typer.BadParameter(f"{option}: positive numbers, got {text!r}")
    return values


def tamper_data_command(
    sources: list[Path] = typer.Argument(..., help="Video files and/or folders (your videos)."),
    out: Path = typer.Option(..., "--out", help="Output folder (train/, eval/, tamper_data.json)."),
    effects: str | None = typer.Option(
        None, "--effects", help="Comma-separated effects (default: the paper's five)."
    ),
    positions: str = typer.Option(
        "middle", "--positions", help="Training windows: start,middle,end or fractions."
    ),
    durations: str = typer.Option("1", "--durations", help="Training window lengths, seconds."),
    tasks: str = typer.Option(
        "detect,type,when", "--tasks", help="Questions per clip: detect,type,when,leading."
    ),
    eval_fraction: float = typer.Option(
        0.25, "--eval-fraction", help="Share of the sources held out (at least one)."
    ),
    frames: int = typer.Option(8, "--frames", help="Frames per clip, as eval's --frames."),
    seed: int = typer.Option(0, "--seed", help="Seeds the split, the builds, the option orders."),
    jobs: int = typer.Option(1, "--jobs", help="Builder worker processes."),
) -> None:
    """Build tamper training data from your videos, split by source video (LLaVA format + frames)."""
    from mmrobust.finetune.tamper_data import TamperDataConfig, TamperDataError, build_tamper_data
    from mmrobust.media.sampling import FramePolicy
    from mmrobust.schema.window import WindowError, parse_position
    from mmrobust.tasks import check_task

    def fail(message: str) -> typer.Exit:
        typer.echo(f"error: {message}", err=True)
        return typer.Exit(2)

    chosen: dict[str, Any] = {}
    if effects:
        chosen["effects"] = tuple(e.strip() for e in effects.split(",") if e.strip())
    try:
        config = TamperDataConfig(
            **chosen,
            positions=tuple(parse_position(p.strip()) for p in positions.split(",") if p.strip()),
            durations=_floats(durations, "--durations"),
            tasks=tuple(check_task(t.strip()) for t in tasks.split(",") if t.strip()),
            eval_fraction=eval_fraction,
            seed=seed,
            policy=FramePolicy(n_frames=frames),
            jobs=jobs,
        )
        report = build_tamper_data(sources, out, config, log=lambda m: typer.echo(m, err=True))
    except (WindowError, TamperDataError, ValueError, typer.BadParameter) as exc:
        raise fail(str(exc).splitlines()[0]) from None
    made = {side: sum(c.values()) for side, c in report.conversations.items()}
    typer.echo(
        f"{made['train']} training conversations from {len(report.train_sources)} sources, "
        f"{made['eval']} held out from {len(report.eval_sources)} (no source on both sides); "
        f"{len(report.errors)} problems; wrote {report.out}"
    )


__all__ = ["tamper_data_command"]
