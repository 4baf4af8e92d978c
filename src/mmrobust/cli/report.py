"""``mmrobust report`` and ``compare`` (issue 3): :func:`mmrobust.report.site.build_site`, :func:`mmrobust.report.compare_runs`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from mmrobust.cli._app import app
from mmrobust.cli.options import LOG_TO, WANDB_PROJECT, fail, fail_on


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
    log_to: str | None = LOG_TO,
    wandb_project: str = WANDB_PROJECT,
    push_to_hub: str | None = typer.Option(
        None,
        "--push-to-hub",
        metavar="REPO",
        help="Upload the report, cards and each run's run.json, metrics.json and "
        "samples.jsonl to this hub dataset repository (one commit; token: HF_TOKEN).",
    ),
    private: bool = typer.Option(False, "--private", help="--push-to-hub: create it private."),
    model_card: list[str] = typer.Option(
        [],
        "--model-card",
        metavar="[SPEC=]REPO_ID",
        help="With --push-to-hub: open a pull request adding the model's scores to the "
        "model-index of this hub model's card (repeatable).",
    ),
) -> None:
    """index.html plus tables (Markdown/CSV, MVTamperBench Table 7 / MMR Table 2 layouts) and plots."""
    from mmrobust.report.inputs import skip_report_files
    from mmrobust.report.site import build_site
    from mmrobust.report.wandb_log import check_log_to, log_to_wandb

    run_dirs, note = skip_report_files(run_dirs)  # `suite/*/*/*` also matches suite/report/...
    if note:
        typer.echo(note, err=True)
    if not run_dirs:
        raise fail_on(ValueError("no run folder given (only report files)"))
    hub = _hub_target(push_to_hub, private, model_card, run_dirs)  # refused before any work
    try:
        check_log_to(log_to)
        site = build_site(
            run_dirs, out, title=title, published=published, max_thumbs=thumbs,
            thumb_seconds=thumb_seconds, audits=audit,
        )  # fmt: skip
    except (OSError, ValueError, ImportError) as exc:  # OSError: missing folder, full disk
        raise fail_on(exc) from None
    typer.echo(site.summary())
    if log_to:
        log_to_wandb(run_dirs, out, project=wandb_project, log=typer.echo)
    if hub is not None:
        from mmrobust.report.hub_push import push_report

        try:
            for line in push_report(hub, out, run_dirs):
                typer.echo(line)
        except (OSError, ValueError) as exc:
            raise fail(f"--push-to-hub {hub.repo_id}: {str(exc).splitlines()[0]}", 3) from None


def _hub_target(repo: str | None, private: bool, cards: list[str], run_dirs: list[str]) -> Any:
    """The checked ``--push-to-hub`` target, or ``None``; exits 2 with one line (no token, a
    bad repository id, ``--model-card`` without ``--push-to-hub``)."""
    if not repo:
        if cards:
            raise fail("--model-card needs --push-to-hub REPO: the scores' source")
        return None
    from mmrobust.report.hub_push import HubTarget, card_pairs
    from mmrobust.run.folder import read_run_info

    try:
        specs: list[str] = []
        if any("=" not in c for c in cards):
            for d in run_dirs:
                model = (read_run_info(Path(d)).as_dict().get("config") or {}).get("model")
                specs += [str(model)] if model and str(model) not in specs else []
        return HubTarget.check(repo, private=private, cards=card_pairs(cards, specs))
    except (OSError, ValueError) as exc:
        raise fail_on(exc) from None


@app.command("compare", short_help="Paired comparison of two runs (McNemar's test).")
def compare_cmd(
    run_a: str = typer.Argument(..., metavar="RUN_A", help="First run folder."),
    run_b: str = typer.Argument(..., metavar="RUN_B", help="Second run folder (same samples)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of the table."),
) -> None:
    """Paired comparison of two runs on their common samples: the 2x2 table of right/wrong,
    each run's accuracy, and McNemar's exact test."""
    import json

    from mmrobust.report import compare_runs

    try:
        result = compare_runs(run_a, run_b)
    except (FileNotFoundError, ValueError) as exc:
        raise fail_on(exc) from None
    typer.echo(json.dumps(result.as_dict(), indent=2) if as_json else result.as_text())
