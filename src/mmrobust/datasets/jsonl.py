"""Generic JSONL (or JSON array) loader: one question per record.

Record fields are ``Sample``'s (``id``, ``question``, ``options``, ``answer``,
``video``/``image``, ``benchmark``, ``group``, ``task``, ``tamper_type``,
``window``, ``category``, ``polarity``, ``prompt``, ``meta``) with two
conveniences: ``options`` may be a list (lettered A, B, ... Z; more than 26
is a record defect) and ``answer`` may be the option text instead of its
letter (a correct option whose text another option repeats is a record
defect: which one is meant cannot be told). A UTF-8 byte-order mark is allowed. ``id`` defaults
to the line number. Media paths are relative to ``images`` (default: the
file's folder); a missing file sets ``Sample.error``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mmrobust.datasets.base import (
    Dataset,
    DatasetError,
    check_depth,
    finalize_samples,
    loads_json,
    sha256_files,
    skip_reason,
)
from mmrobust.datasets.checks import answer_letter, letter_options, media_problem
from mmrobust.schema import Sample

_FIELDS = set(Sample.model_fields)


def record_to_sample(rec: dict[str, Any], n: int, root: Path, *, text_only: bool = False) -> Sample:
    """One generic record -> ``Sample``.

    Raises:
        ValueError, ValidationError: missing question/options/answer or an invalid answer.
    """
    data = {k: v for k, v in rec.items() if k in _FIELDS}
    extra = {k: v for k, v in rec.items() if k not in _FIELDS}
    opts = data.get("options")
    if isinstance(opts, list):
        opts = letter_options(opts)
    if not isinstance(opts, dict) or not opts:
        raise ValueError("options must be a non-empty list or letter -> text object")
    data["options"] = {str(k): str(v) for k, v in opts.items()}
    data["answer"] = answer_letter(str(data.get("answer", "")), data["options"])
    data.setdefault("id", str(n))
    data["id"] = str(data["id"])
    error = None
    for key in ("video", "image"):
        if data.get(key):
            if text_only:
                data[key] = None
                continue
            p = root / str(data[key])
            data[key] = p
            error = error or media_problem(p, key)
    if error and not data.get("error"):
        data["error"] = error
    if extra:
        data["meta"] = {**extra, **(data.get("meta") or {})}
    return Sample.model_validate(data)


def load_jsonl(
    path: str | Path, *, images: str | Path | None = None, text_only: bool = False, **_: Any
) -> Dataset:
    """Load a generic JSONL file (or a JSON array of the same records).

    Raises:
        FileNotFoundError: no such file.
        DatasetError: the file is not UTF-8 or, as a JSON array, not valid JSON.
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"dataset not found: {file}")
    try:
        text = file.read_text(encoding="utf-8-sig")  # a byte-order mark is not part of record 1
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{file}: not UTF-8 text ({exc})") from None
    root = Path(images).expanduser() if images else file.parent
    defects: list[str] = []
    records: list[tuple[int, Any]] = []
    if text.lstrip().startswith("["):
        try:
            records = list(enumerate(loads_json(text), start=1))
        except ValueError as exc:
            raise DatasetError(f"{file}: invalid JSON ({exc})") from None
    else:
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append((n, loads_json(line)))
            except ValueError as exc:
                defects.append(f"{file.name}:{n}: skipped (invalid JSON: {exc})")
    samples: list[Sample] = []
    for n, rec in records:
        try:
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
            samples.append(record_to_sample(check_depth(rec), n, root, text_only=text_only))
        except (ValueError, TypeError, ValidationError) as exc:
            defects.append(f"{file.name}:{n}: skipped ({skip_reason(exc)})")
    samples = finalize_samples(samples, defects)
    benchmarks = {s.benchmark for s in samples}
    benchmark = benchmarks.pop() if len(benchmarks) == 1 else "generic"
    return Dataset(
        name=file.stem,
        benchmark=benchmark,
        samples=samples,
        defects=defects,
        data_hash=sha256_files([file]),
        source=str(file),
    )


__all__ = ["load_jsonl", "record_to_sample"]
