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

import hashlib
from array import array
from pathlib import Path
from typing import Any

import numpy as np
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
from mmrobust.datasets.stream import SampleRows, numbered_lines
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


def _starts_array(file: Path) -> bool:
    """Whether the file's first character that is not white space is ``[`` (a JSON array)."""
    with file.open("rb") as fh:
        while chunk := fh.read(1 << 16):
            head = chunk.decode("utf-8-sig", errors="replace").lstrip()
            if head:
                return head.startswith("[")
    return False


def load_jsonl(
    path: str | Path, *, images: str | Path | None = None, text_only: bool = False, **_: Any
) -> Dataset:
    """Load a generic JSONL file (or a JSON array of the same records).

    A JSONL file is read a line at a time and its samples are not kept: ``Dataset.samples``
    is a :class:`mmrobust.datasets.stream.SampleRows` (one line number per sample), parsed
    again on each pass, so memory does not grow with the number of samples. A JSON array is
    read whole into a list.

    Raises:
        FileNotFoundError: no such file.
        DatasetError: the file is not UTF-8 or, as a JSON array, not valid JSON.
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"dataset not found: {file}")
    root = Path(images).expanduser() if images else file.parent
    if not _starts_array(file):
        return _stream_jsonl(file, root, text_only)
    try:
        text = file.read_text(encoding="utf-8-sig")  # a byte-order mark is not part of record 1
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{file}: not UTF-8 text ({exc})") from None
    defects: list[str] = []
    try:
        records = list(enumerate(loads_json(text), start=1))
    except ValueError as exc:
        raise DatasetError(f"{file}: invalid JSON ({exc})") from None
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


def _id_hash(sample_id: str) -> int:
    """A 64-bit hash of a sample id (a duplicate's candidate; equal ids, equal hashes)."""
    return int.from_bytes(hashlib.blake2b(sample_id.encode(), digest_size=8).digest(), "little")


def _repeated(hashes: array[int]) -> set[int]:
    """The values that occur more than once in ``hashes`` (an ``array('Q')``, sorted in
    place): one byte per value beside the array (``np.unique`` with counts would copy it
    and add 24 bytes per value)."""
    if len(hashes) < 2:
        return set()
    hashed = np.frombuffer(hashes, dtype=np.uint64)  # a view: sorted in place
    hashed.sort()
    same = hashed[1:] == hashed[:-1]
    return {int(h) for h in hashed[1:][same]} if same.any() else set()


def _stream_jsonl(file: Path, root: Path, text_only: bool) -> Dataset:
    """:func:`load_jsonl` of a JSONL file, a line at a time: the same samples, defects (in
    the same order), benchmark and hash as reading it whole, keeping 4 bytes per sample
    (its line number) and, while loading, 8 more (a hash of its id, to find duplicates)."""
    stamp = (file.stat().st_size, file.stat().st_mtime_ns)

    def parse(line: str, n: int) -> Sample:
        rec = loads_json(line)
        if not isinstance(rec, dict):
            raise ValueError("not a JSON object")
        return record_to_sample(check_depth(rec), n, root, text_only=text_only)

    digest = hashlib.sha256(file.name.encode())
    with file.open("rb") as fh:  # the data hash: sha256_files([file]), without holding it
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    bad_json: list[str] = []
    bad_records: list[str] = []
    errors: list[tuple[int, str]] = []  # (line, "id: error") of samples with a loader error
    lines = array("I")
    hashes = array("Q")
    benchmarks: set[str] = set()
    try:
        for n, line in numbered_lines(file):
            if not line.strip():
                continue
            try:
                rec = loads_json(line)
            except ValueError as exc:
                bad_json.append(f"{file.name}:{n}: skipped (invalid JSON: {exc})")
                continue
            try:
                if not isinstance(rec, dict):
                    raise ValueError("not a JSON object")
                sample = record_to_sample(check_depth(rec), n, root, text_only=text_only)
            except (ValueError, TypeError, ValidationError) as exc:
                bad_records.append(f"{file.name}:{n}: skipped ({skip_reason(exc)})")
                continue
            lines.append(n)
            hashes.append(_id_hash(sample.id))
            benchmarks.add(sample.benchmark)
            if sample.error:
                errors.append((n, f"{sample.id}: {sample.error}"))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{file}: not UTF-8 text ({exc})") from None
    defects = bad_json + bad_records
    rows = SampleRows(file, lines, parse, stamp)
    suspects = _repeated(hashes)
    del hashes
    if suspects:  # maybe a repeated id: find the later records exactly
        seen: set[str] = set()
        keep = array("I")
        dropped: set[int] = set()
        benchmarks = set()
        for n, sample in zip(rows.lines, rows, strict=True):
            if _id_hash(sample.id) in suspects:
                if sample.id in seen:
                    defects.append(f"duplicate sample id {sample.id!r}: later record dropped")
                    dropped.add(n)
                    continue
                seen.add(sample.id)
            keep.append(n)
            benchmarks.add(sample.benchmark)
        rows = SampleRows(file, keep, parse, stamp)
        errors = [(n, e) for n, e in errors if n not in dropped]
    defects += [e for _, e in errors]
    benchmark = benchmarks.pop() if len(benchmarks) == 1 else "generic"
    return Dataset(
        name=file.stem,
        benchmark=benchmark,  # type: ignore[arg-type]
        samples=rows,
        defects=defects,
        data_hash=digest.hexdigest(),
        source=str(file),
    )


__all__ = ["load_jsonl", "record_to_sample"]
