"""``mmrobust export`` (issue 30): a run's per-sample log as JSON Lines, CSV or Parquet
(:func:`mmrobust.export.export_run`)."""

from __future__ import annotations

import typer

from mmrobust.cli._app import app
from mmrobust.cli.options import fail


@app.command("export", short_help="Per-sample log of runs: jsonl, csv or parquet.")
def export_cmd(
    run_dirs: list[str] = typer.Argument(..., metavar="RUN_DIRS", help="One or more run folders."),
    format: str = typer.Option("jsonl", "--format", help="jsonl | csv | parquet."),
    out: str | None = typer.Option(
        None,
        "--out",
        help="File to write ('-': standard output; default RUN_DIR/samples.<format>, one per "
        "run). With several runs, one file holding all of them.",
    ),
) -> None:
    """One record per stored row: id, prompt as sent, media, raw answer, reasoning, letter,
    rule, status, correctness, latency, tokens (schema: docs/evaluation.md)."""
    from mmrobust.export import FORMATS, export_run, sample_records, write_records
    from mmrobust.report.inputs import skip_report_files

    run_dirs, note = skip_report_files(run_dirs)  # `suite/*/*/*` also matches suite/report/...
    if note:
        typer.echo(note, err=True)
    if not run_dirs:
        raise fail("no run folder given (only report files)")
    if format not in FORMATS:
        raise fail(f"--format must be one of {', '.join(FORMATS)}, not {format!r}")
    try:
        if out is not None and len(run_dirs) > 1:
            records = [rec for d in run_dirs for rec in sample_records(d)]
            written = [write_records(records, out, format)]
        else:
            written = [export_run(d, format, out) for d in run_dirs]
    except (OSError, ValueError, ImportError) as exc:  # OSError: missing run, full disk
        raise fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    for path in written:
        if path is not None:
            typer.echo(f"wrote {path}", err=True)
