"""The ``mmrobust tamper-data`` command: options -> :class:`TamperDataConfig` -> the build,
then the leak audit of every build (:mod:`mmrobust.audit_builds`) and the held-out chance levels.

Registered in :mod:`mmrobust.cli.demo` next to ``finetune``. It lives in ``cli`` (not
beside :mod:`mmrobust.finetune.tamper_data`) because the audit is an app above
``finetune`` (``tests/test_layering.py``). Exit 2: bad options, a build that cannot be
made, or a training build whose encoding gives the label away (unless ``--allow-leak``).
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
    sources: list[Path] = typer.Argument(
        ..., metavar="SOURCES", help="Video files and/or folders (your videos)."
    ),
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
    no_audit: bool = typer.Option(False, "--no-audit", help="Skip the leak audit of the builds."),
    allow_leak: bool = typer.Option(
        False, "--allow-leak", help="Exit 0 even when the audit finds a training-set leak."
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress lines (notes, problems and results stay)."
    ),
    no_codec_control: bool = typer.Option(
        False,
        "--no-codec-control",
        help="Copy originals as they are (leaks the label; audit demonstrations only).",
    ),
) -> None:
    """Build tamper training data from your videos, split by source video (LLaVA format +
    frames), audit every build for metadata leaks and print the held-out chance levels."""
    from mmrobust.audit_builds import audit_tamper_data, leaking
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
            codec_control=not no_codec_control,
        )
        say = lambda m: typer.echo(m, err=True)  # noqa: E731
        report = build_tamper_data(
            sources, out, config, log=(lambda m: None) if quiet else say, note=say
        )
    except (WindowError, TamperDataError, ValueError, typer.BadParameter) as exc:
        raise fail(str(exc).splitlines()[0]) from None
    audits = {}
    if not no_audit:
        audits = audit_tamper_data(
            report, policy=config.policy, seed=seed, workers=jobs, log=typer.echo
        )
    made = {side: sum(c.values()) for side, c in report.conversations.items()}
    typer.echo(
        f"{made['train']} training conversations from {len(report.train_sources)} source(s), "
        f"{made['eval']} held out from {len(report.eval_sources)} (no source on both sides); "
        f"{len(report.errors)} problem(s); wrote {report.out}"
    )
    for line in problem_lines(report.errors, report.out):
        typer.echo(line, err=True)
    for line in chance_lines(report.chance):
        typer.echo(line)
    if leaking(audits, training=False):
        typer.echo(
            "warning: leak audit: the held-out clips' encoding gives the label away; their "
            "scores flatter a model that reads it",
            err=True,
        )
    leaks = leaking(audits)
    if leaks and not allow_leak:
        fields = sorted({f for n in leaks for f in audits[n]["separating"]})
        raise fail(
            f"leak audit: in {', '.join(leaks)} the {' and '.join(fields)} alone "
            f"{'tells' if len(fields) == 1 else 'tell'} originals from tampered clips: a model "
            "could learn the encoding, not the tampering; rebuild "
            "with codec control (the default) or pass --allow-leak"
        )


def problem_lines(errors: list[str], out: Path, shown: int = 5) -> list[str]:
    """The first ``shown`` problems, one ``problem: ...`` line each, then where the rest are."""
    lines = [f"problem: {e}" for e in errors[:shown]]
    if len(errors) > shown:
        lines.append(f"... and {len(errors) - shown} more in {out / 'tamper_data.json'} (errors)")
    return lines


def chance_lines(chance: dict[str, dict[str, Any]]) -> list[str]:
    """The held-out chance levels, one line per task (percent, the console's convention)."""
    from mmrobust.report.units import pct

    lines = []
    for task, c in chance.items():
        if task == "detect":
            text = (
                f"always-Yes F1 {pct(c['always_yes_f1'])}, accuracy "
                f"{pct(c['always_yes_accuracy'])}; coin-flip F1 {pct(c.get('coin_flip_f1'))}; "
                f"majority ({c['majority']}) accuracy {pct(c['majority_accuracy'])}"
            )
        else:
            k = "/".join(map(str, c["n_options"]))
            tied = f", {c['majority_tied']} tied" if c["majority_tied"] > 1 else ""
            text = (
                f"uniform guess (1/{k} options) {pct(c['uniform_accuracy'])}; majority option "
                f"({c['majority']}{tied}) {pct(c['majority_accuracy'])}"
            )
        lines.append(f"held-out chance, %, {task} ({c['n']} questions): {text}")
    return lines


__all__ = ["chance_lines", "problem_lines", "tamper_data_command"]
