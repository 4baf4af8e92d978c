"""Loader for our tamper manifest (``DIR/manifest.jsonl`` written by ``mmrobust tamper``).

One JSON object per output clip (originals included), fields as in
``docs/CONTRACTS.md`` ("tamper manifest"). Each becomes a tamper
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
    TAMPER_QUESTION,
    YES_NO,
    Dataset,
    DatasetError,
    check_depth,
    finalize_samples,
    loads_json,
    skip_reason,
)
from mmrobust.datasets.schema import TAMPER_ORIGINAL, Sample, Window

_META_KEYS = (
    "source", "source_sha256", "video_sha256", "params", "position", "duration_s", "fps",
    "frames_source", "frames_output", "width", "height", "padded", "encoder", "seed", "donor",
    "window_source", "mmrobust_version",
)  # fmt: skip


def manifest_record_to_sample(
    rec: dict[str, Any], root: Path, *, text_only: bool = False
) -> Sample:
    """Turn one manifest record into a ``Sample``.

    Args:
        rec: the parsed JSON object.
        root: the manifest's folder (``video`` is relative to it).
        text_only: leave ``video`` unset and skip the existence check.

    Raises:
        KeyError, ValueError, ValidationError: the record lacks required fields.
    """
    ttype = str(rec["tamper_type"])
    video = (root / str(rec["video"])) if rec.get("video") else None
    error = None
    if video is None:
        error = "manifest record has no video"
    elif not text_only and not video.is_file():
        error = f"video file missing: {video}"
    win = rec.get("window_output")
    return Sample(
        id=str(rec["id"]),
        benchmark="tamper",
        video=None if text_only else video,
        question=TAMPER_QUESTION,
        options=dict(YES_NO),
        answer="B" if ttype == TAMPER_ORIGINAL else "A",
        group=str(rec.get("source_sha256") or rec.get("source") or rec["id"]),
        task=rec.get("task"),
        tamper_type=ttype,
        window=Window(**win) if win else None,
        error=error,
        meta={k: rec[k] for k in _META_KEYS if k in rec},
    )


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
    file = p / "manifest.jsonl" if p.is_dir() else p
    if not file.is_file():
        raise FileNotFoundError(f"manifest not found: {file}")
    root = Path(images).expanduser() if images else file.parent
    raw = file.read_bytes()
    try:
        lines = raw.decode("utf-8").splitlines()
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
    errors = file.parent / "errors.jsonl"
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


__all__ = ["load_manifest", "manifest_record_to_sample"]
