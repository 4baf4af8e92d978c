"""Loader for our tamper manifest (``DIR/manifest.jsonl`` written by ``mmrobust tamper``).

One JSON object per output clip (originals included), each validated with
:class:`mmrobust.schema.ManifestEntry`, the model the builder writes (fields
as in ``docs/CONTRACTS.md``, "tamper manifest"). Each becomes a tamper
``Sample``: options ``A. Yes`` / ``B. No``, answer ``A`` for a tampered clip
and ``B`` for an original, ``group`` = the source video (so bootstrap
resampling keeps a source's clips together), ``window`` = ``window_output``
(the clip's own timeline).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mmrobust.datasets.base import (
    Dataset,
    DatasetError,
    check_depth,
    finalize_samples,
    loads_json,
    skip_reason,
)
from mmrobust.datasets.checks import media_problem
from mmrobust.schema import (
    ERRORS_NAME,
    MANIFEST_NAME,
    SAMPLE_META_FIELDS,
    TAMPER_ORIGINAL,
    TAMPER_QUESTION,
    YES_NO,
    ManifestEntry,
    Sample,
)


def entry_to_sample(entry: ManifestEntry, root: Path, *, text_only: bool = False) -> Sample:
    """Turn one manifest entry into a tamper ``Sample``.

    Args:
        entry: the validated entry.
        root: the folder ``entry.video`` is relative to (the manifest's, or ``--images``).
        text_only: leave ``video`` unset and skip the existence check.

    The sample's ``meta`` holds the entry's :data:`~mmrobust.schema.SAMPLE_META_FIELDS`
    that the line gives (JSON values, as written).
    """
    video = (root / entry.video) if entry.video else None
    error = None
    if video is None:
        error = "manifest record has no video"
    elif not text_only:
        error = media_problem(video, "video")
    given = set(SAMPLE_META_FIELDS) & entry.model_fields_set
    return Sample(
        id=entry.id,
        benchmark="tamper",
        video=None if text_only else video,
        question=TAMPER_QUESTION,
        options=dict(YES_NO),
        answer="B" if entry.tamper_type == TAMPER_ORIGINAL else "A",
        group=entry.source_sha256 or entry.source or entry.id,
        task=entry.task,
        tamper_type=entry.tamper_type,
        window=entry.window_output,
        error=error,
        meta=entry.model_dump(mode="json", include=given),
    )


def manifest_record_to_sample(
    rec: dict[str, Any], root: Path, *, text_only: bool = False
) -> Sample:
    """Turn one parsed manifest line (a JSON object) into a ``Sample`` (see :func:`entry_to_sample`).

    Raises:
        ValidationError: the record is not a manifest entry (lacks ``id`` or ``tamper_type``,
            or a field has the wrong type).
    """
    return entry_to_sample(ManifestEntry.model_validate(rec), root, text_only=text_only)


def load_manifest(
    path: str | Path, *, images: str | Path | None = None, text_only: bool = False, **_: Any
) -> Dataset:
    """Load ``manifest.jsonl`` (or its folder).

    Args:
        path: the manifest file or the folder holding ``manifest.jsonl``.
        images: folder the ``video`` paths are relative to (default: the manifest's folder).
        text_only: no media (blind ablations).

    Returns:
        A tamper ``Dataset``; malformed lines are skipped and listed in ``defects``,
        as are the builder's failures from ``errors.jsonl``.

    Raises:
        FileNotFoundError: no manifest there.
        DatasetError: the file is not UTF-8 text.
    """
    p = Path(path).expanduser()
    file = p / MANIFEST_NAME if p.is_dir() else p
    if not file.is_file():
        raise FileNotFoundError(f"manifest not found: {file}")
    root = Path(images).expanduser() if images else file.parent
    raw = file.read_bytes()
    try:
        lines = raw.decode("utf-8-sig").splitlines()  # a byte-order mark is not a record
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{file}: not UTF-8 text ({exc})") from None
    samples: list[Sample] = []
    defects: list[str] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = check_depth(loads_json(line))
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
            samples.append(manifest_record_to_sample(rec, root, text_only=text_only))
        except (KeyError, ValueError, TypeError, ValidationError) as exc:
            defects.append(f"{file.name}:{n}: skipped ({skip_reason(exc)})")
    errors = file.parent / ERRORS_NAME
    if errors.is_file():
        for line in errors.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                err = check_depth(loads_json(line))
                defects.append(f"builder failed on {err.get('source')}: {err.get('reason')}")
            except ValueError:
                continue
    samples = finalize_samples(samples, defects)
    if not samples and not defects:
        defects.append(f"{file}: no records")
    return Dataset(
        name=file.parent.name,
        benchmark="tamper",
        samples=samples,
        defects=defects,
        data_hash=hashlib.sha256(raw).hexdigest(),
        source=str(file),
    )


__all__ = ["entry_to_sample", "load_manifest", "manifest_record_to_sample"]
