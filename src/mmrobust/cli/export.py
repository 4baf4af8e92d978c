"""``mmrobust export``: a run's per-sample log as JSON Lines, CSV or Parquet
(:func:`mmrobust.export.write_records`; where it may write: :mod:`mmrobust.export_targets`)."""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path

import typer

from mmrobust.cli._app import app
from mmrobust.cli.options import fail, fail_on

FULL_DISK = (errno.ENOSPC, errno.EDQUOT)
"""A full disk or quota: exit 3, as ``eval`` and ``tamper`` do (nothing half-written)."""


@app.command("export", short_help="Per-sample log of runs (jsonl, csv, parquet), or a model-index.")
def export_cmd(
    run_dirs: list[str] = typer.Argument(
        ..., metavar="RUN_DIRS", help="One or more run folders (model-index: a suite folder too)."
    ),
    format: str = typer.Option(
        "jsonl",
        "--format",
        help="jsonl | csv | parquet (any case), or model-index: the model-index block of a "
        "Hugging Face model card per model of a suite or run folder (docs/suite.md).",
    ),
    out: str | None = typer.Option(
        None,
        "--out",
        help="File to write ('-': standard output; default RUN_DIR/samples.<format>, one per "
        "run). With several runs, one file holding all of them. DIR/ (or an existing folder): "
        "one file per run inside DIR.",
    ),
    force: bool = typer.Option(False, "--force", help="Replace a file --out names that exists."),
) -> None:
    """One record per stored row: id, prompt as sent, media, raw answer, reasoning, letter,
    rule, status, correctness, latency, tokens (schema: docs/evaluation.md). CSV cells that a
    spreadsheet would run as a formula start with ' there."""
    from mmrobust.export import FORMATS, sample_records, write_records
    from mmrobust.export_targets import ExportTargetError, check_run_folder, plan_targets
    from mmrobust.report.inputs import skip_report_files

    run_dirs, note = skip_report_files(run_dirs)  # `suite/*/*/*` also matches suite/report/...
    if note:
        typer.echo(note, err=True)
    if not run_dirs:
        raise fail("no run folder given (only report files)")

    if format.lower() == "model-index":
        _model_index(run_dirs, out, force)
        return
    fmt = format.lower()
    if fmt not in FORMATS:
        raise fail(
            f"--format must be one of {', '.join((*FORMATS, 'model-index'))}, not {format!r}"
        )
    try:
        runs = [check_run_folder(d) for d in run_dirs]
        targets, made = plan_targets(runs, fmt, out, force=force)
    except ExportTargetError as exc:
        raise fail_on(exc) from None
    for t in targets:
        try:
            records = [rec for d in t.runs for rec in sample_records(d)]
            path = write_records(records, t.path if t.path is not None else "-", fmt)
        except OSError as exc:
            _remove_if_empty(made)
            code = 3 if exc.errno in FULL_DISK else 2
            where = t.path if t.path is not None else "standard output"
            raise fail(
                f"cannot write {where}: {exc.strerror or exc}; nothing written there", code
            ) from None
        except (ValueError, ImportError) as exc:
            _remove_if_empty(made)
            raise fail_on(exc) from None
        if path is not None:
            typer.echo(f"wrote {path}", err=True)


def _remove_if_empty(folder: Path | None) -> None:
    """Remove the ``--out DIR/`` folder this command made, when nothing is in it."""
    if folder is not None:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _model_index(targets: list[str], out: str | None, force: bool) -> None:
    """``--format model-index`` of one suite or run folder
    (:func:`mmrobust.report.model_index.write_model_index`)."""
    from mmrobust.report.model_index import write_model_index

    if len(targets) != 1:
        raise fail("--format model-index takes one suite or run folder")
    try:
        written = write_model_index(targets[0], out, force=force)
    except FileNotFoundError as exc:
        raise fail_on(exc) from None
    except OSError as exc:
        code = 3 if exc.errno in FULL_DISK else 2
        raise fail(
            f"cannot write {out}: {exc.strerror or exc}; nothing written there", code
        ) from None
    except ValueError as exc:
        raise fail_on(exc) from None
    for path in written:
        typer.echo(f"wrote {path}", err=True)
