"""Per-sample logs of a run folder: ``samples.jsonl`` and ``mmrobust export RUN --format F``.

:func:`sample_records` turns each stored row of a run (the rows its last ``eval``
scored: ``results.sqlite``, the run's configuration key and selection, as ``report``
reads them) into one flat dict with the fields of :data:`SAMPLE_FIELDS`, in that
order; :func:`export_run` writes them as JSON Lines (one object per line, UTF-8,
the lmms-eval ``--log_samples`` habit), CSV or Parquet (pandas; Parquet needs
pyarrow). In CSV and Parquet the nested fields (``options``, ``frame_indices``)
are JSON text, so every format holds the same values. ``eval --log-samples`` and
``run --log-samples`` write ``RUN_DIR/samples.jsonl`` after the run.

The schema is documented in docs/evaluation.md ("Per-sample logs").
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

SAMPLES_FILE = "samples.jsonl"
"""What ``--log-samples`` writes into the run folder."""

FORMATS = ("jsonl", "csv", "parquet")
"""``mmrobust export --format`` values."""

SAMPLE_FIELDS: tuple[tuple[str, str], ...] = (
    ("model", "model spec of the run (str)"),
    ("dataset", "dataset name (str)"),
    ("benchmark", "metric family of the sample: tamper, mmr, tamper-type, ... (str)"),
    ("task", "--task of a tamper run: detect, type, when, leading; null for other data"),
    ("id", "sample id (str)"),
    ("group", "bootstrap / pairing cluster: source clip, MMR pair (str)"),
    ("polarity", "MMR and --task leading: positive or negative, else null"),
    ("category", "MMR category, else null"),
    ("tamper_type", "effect name or original, else null"),
    ("question", "the question stem (str)"),
    ("options", "option letter -> text, in the order shown to the model (object)"),
    ("answer", "the correct letter, in the order shown (str)"),
    (
        "prompt",
        "the prompt as sent: [system] line, user text, [assistant prefill] line "
        "(str; null for rows stored before prompts were kept)",
    ),
    ("video", "path of the clip as the dataset names it, else null"),
    ("image", "path of the image as the dataset names it, else null"),
    ("frame_indices", "frames shown to the model (list of int; null: none sent or not video)"),
    ("window_covered", "a shown frame lies inside the tamper window (bool; null: unknown)"),
    ("raw_answer", "the model's reply as received, reasoning included ('' on failure)"),
    ("reasoning", "a thinking model's reasoning, separated from its answer, else null"),
    ("reasoning_form", "none, closed, unopened, cut, field or harmony; null for older rows"),
    ("letter", "the extracted option letter, else null"),
    ("rule", "the extraction rule that decided, or the failure kind (str or null)"),
    ("status", "ok, parse_fail, api_error, timeout, media_error, ... (str)"),
    ("error", "one-line reason of an error status, else null"),
    ("correct", "letter == answer for an ok row (bool); null for a row that is not ok"),
    ("latency_s", "seconds the model took (float or null)"),
    ("prompt_tokens", "prompt tokens the backend reported (int or null)"),
    ("completion_tokens", "completion tokens the backend reported (int or null)"),
    ("created_at", "UNIX time the row was stored (float, seconds)"),
    ("repeat", "which of the --repeats asks of the sample the row is (int; 0 without repeats)"),
)
"""Each exported field and what it holds, in column order."""

_NESTED = ("options", "frame_indices")


def sample_records(run_dir: str | Path) -> list[dict[str, Any]]:
    """One dict per stored row of ``run_dir`` (fields :data:`SAMPLE_FIELDS`, in order).

    Raises:
        FileNotFoundError: no ``run.json`` or no ``results.sqlite``.
        ValueError: an unreadable ``run.json`` or database.
    """
    from mmrobust.families import get_family
    from mmrobust.run.folder import read_run_info
    from mmrobust.status import Status
    from mmrobust.store import ResultStore

    d = Path(run_dir)
    info = read_run_info(d)
    record = info.as_dict()
    config = record.get("config") or {}
    dataset = (record.get("dataset") or {}).get("name")
    with ResultStore(d, readonly=True) as store:
        rows = store.rows(info.key, store.selection(info.key))
    rows = [r for r in rows if r.repeat < int(config.get("repeats") or 1)]
    out: list[dict[str, Any]] = []
    for r in rows:
        s = r.sample
        ok = r.status is Status.OK
        task = config.get("task") or "detect"
        if task == "detect" and not get_family(s.benchmark).tamper_clips:
            task = None  # MMR, generic: the dataset's own question, no --task
        out.append(
            {
                "model": config.get("model"),
                "dataset": dataset,
                "benchmark": s.benchmark,
                "task": task,
                "id": s.id,
                "group": s.group or s.id,
                "polarity": s.polarity,
                "category": s.category,
                "tamper_type": s.tamper_type,
                "question": s.question,
                "options": dict(r.options or s.options),
                "answer": r.answer or s.answer,
                "prompt": r.prompt,
                "video": str(s.video) if s.video is not None else None,
                "image": str(s.image) if s.image is not None else None,
                "frame_indices": r.frame_indices,
                "window_covered": r.window_covered,
                "raw_answer": r.raw_text,
                "reasoning": r.reasoning,
                "reasoning_form": r.reasoning_form,
                "letter": r.letter,
                "rule": r.rule,
                "status": r.status.value,
                "error": r.error,
                "correct": (r.letter == (r.answer or s.answer)) if ok else None,
                "latency_s": r.latency_s,
                "prompt_tokens": r.prompt_tokens,
                "completion_tokens": r.completion_tokens,
                "created_at": r.created_at,
                "repeat": r.repeat,
            }
        )
    return out


CSV_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP, CSV Injection)."""


def neutralise_cell(value: Any) -> Any:
    """``value`` with ``'`` in front when it is text starting with one of :data:`CSV_TRIGGERS`
    (``=HYPERLINK(...)`` -> ``'=HYPERLINK(...)``), so a spreadsheet shows it as text; anything
    else as it is. CSV only: JSON Lines and Parquet keep the exact text.

    Source: OWASP, "CSV Injection" (prefix the cell with a single quote).
    """
    if isinstance(value, str) and value.startswith(CSV_TRIGGERS):
        return "'" + value
    return value


def _tabular(records: Iterable[dict[str, Any]], *, csv: bool = False) -> Any:
    """The records as a pandas DataFrame (nested fields as JSON text, every column kept;
    ``csv``: text cells neutralised by :func:`neutralise_cell`)."""
    import pandas as pd

    cell = neutralise_cell if csv else (lambda v: v)
    flat = [
        {k: cell(json.dumps(v, ensure_ascii=False) if k in _NESTED and v is not None else v)
         for k, v in rec.items()}
        for rec in records
    ]  # fmt: skip
    return pd.DataFrame(flat, columns=[name for name, _ in SAMPLE_FIELDS])


def write_records(records: list[dict[str, Any]], out: str | Path, fmt: str) -> Path | None:
    """Write ``records`` to ``out`` (``-``: standard output, JSON Lines and CSV only).

    A file is written whole or not at all (:func:`mmrobust.atomicfile.atomic_write`: a new
    temporary file beside it, then a rename): a full disk leaves the old file (or none) and
    no temporary file; a link at ``out`` is replaced, its target never written. Where ``out``
    may be written is :func:`mmrobust.export_targets.plan_targets`'s job.

    Returns:
        The file written, or ``None`` for standard output.

    Raises:
        ValueError: an unknown format, or Parquet to standard output.
        ImportError: Parquet without pyarrow.
        OSError: the file cannot be written (nothing is left at ``out``'s place).
    """
    from mmrobust.atomicfile import atomic_write

    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    to_stdout = str(out) == "-"
    if fmt == "parquet":
        if to_stdout:
            raise ValueError("--format parquet needs --out FILE (it is not text)")
        try:
            import pyarrow  # noqa: F401
        except ImportError as exc:
            raise ImportError("--format parquet needs pyarrow: pip install pyarrow") from exc
        with atomic_write(out, binary=True) as fb:
            _tabular(records).to_parquet(fb, index=False)
        return Path(out)
    if to_stdout:
        _write_text(records, fmt, sys.stdout)
        return None
    with atomic_write(out) as f:
        _write_text(records, fmt, f)
    return Path(out)


def _write_text(records: list[dict[str, Any]], fmt: str, f: IO[str]) -> None:
    if fmt == "jsonl":
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    else:
        _tabular(records, csv=True).to_csv(
            f, index=False, lineterminator="\r\n"
        )  # RFC 4180; quotes a lone CR


def export_run(
    run_dir: str | Path, fmt: str = "jsonl", out: str | Path | None = None
) -> Path | None:
    """Write the per-sample log of ``run_dir`` as ``fmt`` to ``out`` (default:
    ``RUN_DIR/samples.<jsonl|csv|parquet>``); returns the file (``None``: standard output).

    Raises:
        as :func:`sample_records` and :func:`write_records`.
    """
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    target = out if out is not None else Path(run_dir) / f"samples.{fmt}"
    return write_records(sample_records(run_dir), target, fmt)


__all__ = [
    "CSV_TRIGGERS",
    "FORMATS",
    "SAMPLES_FILE",
    "SAMPLE_FIELDS",
    "export_run",
    "neutralise_cell",
    "sample_records",
    "write_records",
]
