"""Loaders for the released MVTamperBench layout and VLMEvalKit's TSV of the same data.

Released layout (``../shared/data/mvtamperbench/README.md``): a folder with
``json/<task>.json``, each a list of rows ``{video, question, candidates,
answer, tamper_type}``, and the videos somewhere below the folder (per
source dataset after unzipping). A row's ``video`` is resolved as a path
relative to the media root first, then by unique file name anywhere below
it; a missing or ambiguous file gives the sample a typed ``error`` (the
runner records ``data_error``), never a crash.

Released effect names are normalised to ours (``rotate`` -> ``rotation``).
Tampered file names ``<stem>_<position>_tampered_<effect>_<N>sec.mp4`` give
the group (the source stem), position and duration. The released
annotations carry no tamper window, so window coverage is unknown (null)
for these samples.
"""

from __future__ import annotations

import ast
import os
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
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
from mmrobust.datasets.schema import Sample

TYPE_NAMES: Mapping[str, str] = {"rotate": "rotation"}
_TAMPERED_NAME = re.compile(
    r"^(?P<stem>.+)_(?P<position>start|middle|end)_tampered_(?P<effect>[a-z]+)_(?P<dur>\d+)sec$"
)
_VIDEO_EXT = {".mp4", ".webm", ".avi", ".mkv", ".mov", ".m4v", ".gif"}


class MediaIndex:
    """Resolves a row's ``video`` under a root: relative path first, then unique file name.

    The name index is built lazily, once, by walking the root.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._by_name: dict[str, list[Path]] | None = None
        self._by_stem: dict[str, list[Path]] | None = None

    def _build(self) -> None:
        by_name: dict[str, list[Path]] = defaultdict(list)
        by_stem: dict[str, list[Path]] = defaultdict(list)
        for dirpath, _, filenames in os.walk(self.root):
            for f in filenames:
                path = Path(dirpath) / f
                by_name[f].append(path)
                if path.suffix.lower() in _VIDEO_EXT:
                    by_stem[path.stem].append(path)
        self._by_name, self._by_stem = dict(by_name), dict(by_stem)

    def resolve(self, ref: str) -> tuple[Path | None, str | None]:
        """``(path, None)`` when found, else ``(None, reason)``."""
        direct = self.root / ref
        if direct.is_file():
            return direct, None
        if self._by_name is None:
            self._build()
        assert self._by_name is not None and self._by_stem is not None
        name = Path(ref).name
        hits = self._by_name.get(name) or ([] if Path(ref).suffix else self._by_stem.get(name, []))
        if len(hits) == 1:
            return hits[0], None
        if not hits:
            return None, f"video not found under {self.root}: {ref}"
        return None, f"ambiguous video name {name!r}: {len(hits)} files under {self.root}"


def parse_released_name(video: str) -> dict[str, Any]:
    """Group, position, effect and duration from a released file name (empty dict if original)."""
    m = _TAMPERED_NAME.match(Path(video).stem)
    if not m:
        return {}
    return {
        "source_stem": m["stem"],
        "position": m["position"],
        "effect": TYPE_NAMES.get(m["effect"], m["effect"]),
        "duration_s": float(m["dur"]),
    }


def row_to_sample(
    row: Mapping[str, Any],
    *,
    task: str | None,
    row_id: str,
    index: MediaIndex | None,
) -> Sample:
    """One annotation row -> ``Sample`` (``index`` ``None`` = text only).

    Raises:
        KeyError, ValueError, ValidationError: the row lacks or mangles required fields.
    """
    cands = row["candidates"]
    if isinstance(cands, str):
        cands = ast.literal_eval(cands)
    if not isinstance(cands, Sequence) or isinstance(cands, str) or not cands:
        raise ValueError("candidates is not a non-empty list")
    options = {chr(ord("A") + i): str(c) for i, c in enumerate(cands)}
    answer_text = str(row["answer"])
    letters = [k for k, v in options.items() if v == answer_text]
    answer = letters[0] if letters else answer_text  # letter given directly, or invalid
    video_ref = str(row["video"])
    ttype = str(row.get("tamper_type") or "").lower() or None
    ttype = TYPE_NAMES.get(ttype, ttype) if ttype else None
    parsed = parse_released_name(video_ref)
    video, error = (None, None)
    if index is not None:
        video, error = index.resolve(video_ref)
    return Sample(
        id=row_id,
        benchmark="tamper",
        video=video,
        question=str(row.get("question") or ""),
        options=options,
        answer=answer,
        group=parsed.get("source_stem", Path(video_ref).stem),
        task=task,
        tamper_type=ttype,
        error=error,
        meta={"video_ref": video_ref, **{k: v for k, v in parsed.items() if k != "source_stem"}},
    )


def load_mvtamperbench(
    path: str | Path, *, images: str | Path | None = None, text_only: bool = False, **_: Any
) -> Dataset:
    """Load the released layout: ``path/json/<task>.json`` plus videos below ``path``.

    Args:
        path: the dataset folder.
        images: media root to resolve ``video`` under (default: ``path``).
        text_only: do not resolve media.

    Raises:
        FileNotFoundError: no ``json/*.json`` under ``path``.
    """
    root = Path(path).expanduser()
    files = sorted((root / "json").glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no json/<task>.json files under {root}")
    index = None if text_only else MediaIndex(Path(images).expanduser() if images else root)
    samples: list[Sample] = []
    defects: list[str] = []
    for f in files:
        task = f.stem
        try:
            rows = loads_json(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            defects.append(f"{f.name}: unreadable, skipped ({exc})")
            continue
        if not isinstance(rows, list):
            defects.append(f"{f.name}: not a JSON list, skipped")
            continue
        for i, row in enumerate(rows):
            try:
                rid = f"{task}/{row['video']}"
                samples.append(row_to_sample(check_depth(row), task=task, row_id=rid, index=index))
            except (KeyError, ValueError, TypeError, SyntaxError, ValidationError) as exc:
                defects.append(f"{f.name}[{i}]: skipped ({skip_reason(exc)})")
    samples = finalize_samples(samples, defects)
    return Dataset(
        name=root.name,
        benchmark="tamper",
        samples=samples,
        defects=defects,
        data_hash=sha256_files(files),
        source=str(root),
    )


def load_vlmevalkit_tsv(
    path: str | Path, *, images: str | Path | None = None, text_only: bool = False, **_: Any
) -> Dataset:
    """Load VLMEvalKit's MVTamperBench TSV.

    Columns used: ``index`` (id; row number if absent), ``video``, ``question``,
    ``candidates`` (a Python list literal), ``answer`` (option text),
    ``tamper_type``, and ``task`` or ``category`` when present. Videos are
    resolved under ``images`` (default: the TSV's folder), relative path
    first, then unique file name or stem.

    Raises:
        FileNotFoundError: no such file.
        DatasetError: not a TSV with the required columns.
    """
    import pandas as pd

    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"TSV not found: {file}")
    try:
        df = pd.read_csv(file, sep="\t", dtype=str, keep_default_na=False)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{file}: not a readable TSV ({exc})") from None
    missing = {"video", "candidates", "answer"} - set(df.columns)
    if missing:
        raise DatasetError(f"{file}: missing column(s) {sorted(missing)}")
    index = None if text_only else MediaIndex(Path(images).expanduser() if images else file.parent)
    task_col = "task" if "task" in df.columns else "category" if "category" in df.columns else None
    samples: list[Sample] = []
    defects: list[str] = []
    for i, raw in enumerate(df.to_dict(orient="records")):
        row = {str(k): v for k, v in raw.items()}
        try:
            rid = str(row.get("index") or i)
            task = row.get(task_col) if task_col else None
            samples.append(row_to_sample(row, task=task or None, row_id=rid, index=index))
        except (KeyError, ValueError, TypeError, SyntaxError, ValidationError) as exc:
            defects.append(f"{file.name} row {i}: skipped ({skip_reason(exc)})")
    samples = finalize_samples(samples, defects)
    return Dataset(
        name=file.stem,
        benchmark="tamper",
        samples=samples,
        defects=defects,
        data_hash=sha256_files([file]),
        source=str(file),
    )


__all__ = ["MediaIndex", "load_mvtamperbench", "load_vlmevalkit_tsv", "parse_released_name"]
