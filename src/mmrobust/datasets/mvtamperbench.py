"""Loaders for the released MVTamperBench layout and VLMEvalKit's TSV of the same data.

Released layout (``../shared/data/mvtamperbench/README.md``): a folder with
``json/<task>.json``, each a list of rows ``{video, question, candidates,
answer, tamper_type}``, and the videos below ``video/<source folder>/``
after unzipping. ``--data`` may name that folder, its ``json/`` folder or
one ``json/<task>.json`` file (that task only). A row's ``video`` is looked
up in its task's source folder (:mod:`mmrobust.datasets.resolve`); a
missing or ambiguous file gives the sample a typed ``error`` (the runner
records ``data_error``), never a crash and never another source's clip.

Released effect names are normalised to ours (``rotate`` -> ``rotation``).
Tampered file names ``<stem>_<position>_tampered_<effect>_<N>sec.mp4`` give
the group (the source stem), position and duration. The released
annotations carry no tamper window; the runner derives it by the released
rule from the original's frame count (``meta["original_video"]`` names the
original of the same task and stem) and flags it as derived.
"""

from __future__ import annotations

import ast
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mmrobust.datasets.base import (
    RELEASED_ROW_KEYS,
    Dataset,
    DatasetError,
    check_depth,
    finalize_samples,
    is_released_rows,
    loads_json,
    sha256_files,
    skip_reason,
)
from mmrobust.datasets.checks import answer_letter, letter_options
from mmrobust.datasets.resolve import (
    HOW_NAME,
    TASK_FOLDERS,
    TaskMediaResolver,
    folder_of_prefix,
    task_slug,
)
from mmrobust.schema import TAMPER_ORIGINAL, Sample, normalise_type

_TAMPERED_NAME = re.compile(
    r"^(?P<stem>.+)_(?P<position>start|middle|end)_tampered_(?P<effect>[a-z]+)_(?P<dur>\d+)sec$"
)


def _stem(video: str) -> str:
    """File stem of a row's ``video`` (``os.path``: this runs per row)."""
    return os.path.splitext(os.path.basename(video.replace("\\", "/")))[0]


def parse_released_name(video: str) -> dict[str, Any]:
    """Group, position, effect and duration from a released file name (empty dict if original)."""
    m = _TAMPERED_NAME.match(_stem(video))
    if not m:
        return {}
    return {
        "source_stem": m["stem"],
        "position": m["position"],
        "effect": normalise_type(m["effect"]),
        "duration_s": float(m["dur"]),
    }


def row_to_sample(
    row: Mapping[str, Any],
    *,
    task: str | None,
    row_id: str,
    resolver: TaskMediaResolver | None,
    folder: str | None = None,
) -> Sample:
    """One annotation row -> ``Sample`` (``resolver`` ``None`` = text only).

    Args:
        row: the annotation row.
        task: its task (file stem), used for the source folder and ``per_task`` metrics.
        row_id: the sample id.
        resolver: finds the video (``None``: text only, no media).
        folder: the row's source folder when the data says it (a TSV ``prefix``).

    Raises:
        KeyError, ValueError, ValidationError: the row lacks or mangles required fields.
    """
    cands = row["candidates"]
    if isinstance(cands, str):
        cands = ast.literal_eval(cands)
    if not isinstance(cands, Sequence) or isinstance(cands, str) or not cands:
        raise ValueError("candidates is not a non-empty list")
    options = letter_options(cands)
    answer = answer_letter(
        str(row["answer"]), options, text_first=True
    )  # text or letter; invalid stays invalid
    video_ref = str(row["video"])
    ttype = normalise_type(str(row.get("tamper_type") or "")) or None
    parsed = parse_released_name(video_ref)
    meta: dict[str, Any] = {"video_ref": video_ref}
    meta.update({k: v for k, v in parsed.items() if k != "source_stem"})
    video, error = None, None
    if resolver is not None:
        found = resolver.resolve(video_ref, task=task, folder=folder)
        video, error = found.path, found.error
        if found.how == HOW_NAME:
            meta["resolved_by"] = "file name outside its task folder"
    source = folder if folder is not None else TASK_FOLDERS.get(task or "")
    stem = parsed.get("source_stem") or _stem(video_ref)
    return Sample(
        id=row_id,
        benchmark="tamper",
        video=video,
        question=str(row.get("question") or ""),
        options=options,
        answer=answer,
        group=f"{source}/{stem}" if source else stem,
        task=task,
        tamper_type=ttype,
        error=error,
        meta=meta,
    )


def link_originals(samples: list[Sample]) -> list[Sample]:
    """Record each tampered clip's original (same task and group) in ``meta["original_video"]``.

    The released rule places the window by the original's frame count, so the
    runner needs the original to derive it. Samples without a found original
    are returned unchanged.
    """
    originals = {
        (s.task, s.group): s.video
        for s in samples
        if s.tamper_type == TAMPER_ORIGINAL and s.video is not None
    }
    out = []
    for s in samples:
        orig = originals.get((s.task, s.group))
        if s.tamper_type not in (None, TAMPER_ORIGINAL) and orig is not None:
            s = s.model_copy(update={"meta": {**s.meta, "original_video": str(orig)}})
        out.append(s)
    return out


def _report_resolution(
    samples: Sequence[Sample], resolver: TaskMediaResolver | None, defects: list[str]
) -> dict[str, Any]:
    """``Dataset.info["media"]``: videos found / missing / found by name; one defect line for the last."""
    if resolver is None:
        return {"media": "text only"}
    fallbacks = resolver.fallbacks
    if resolver.misplaced:
        ref, path = resolver.misplaced[0]
        defects.append(
            f"{len(resolver.misplaced)} video(s) found by file name outside their task folder, "
            f"not at <root>/video/<task folder>/ (first: {ref} -> {path})"
        )
    if resolver.folderless:
        ref, path, _ = resolver.folderless[0]
        tasks = sorted({t for _, _, t in resolver.folderless if t})
        defects.append(
            f"{len(resolver.folderless)} video(s) found by file name under {resolver.root} "
            f"for task(s) with no known source folder ({', '.join(tasks) or 'no task'}); "
            f"<root>/video/<task>/ is where they are looked for first (first: {ref} -> {path})"
        )
    errors = Counter(
        "ambiguous" if "ambiguous" in (s.error or "") else "missing" for s in samples if s.error
    )
    return {
        "media": {
            "root": str(resolver.root),
            "found": sum(1 for s in samples if s.video is not None),
            "missing": errors.get("missing", 0),
            "ambiguous": errors.get("ambiguous", 0),
            "found_by_name": len(fallbacks),
        }
    }


def released_files(path: str | Path) -> tuple[list[Path], Path]:
    """The task files and the data root of a released folder, ``json/`` folder or one task file.

    Raises:
        FileNotFoundError: no ``<task>.json`` there.
    """
    p = Path(path).expanduser()
    if p.is_file():
        return [p], (p.parent.parent if p.parent.name == "json" else p.parent)
    if (p / "json").is_dir():
        files, root = sorted((p / "json").glob("*.json")), p
    else:
        files, root = sorted(p.glob("*.json")), (p.parent if p.name == "json" else p)
    if not files:
        raise FileNotFoundError(f"no json/<task>.json files under {p}")
    return files, root


def load_mvtamperbench(
    path: str | Path, *, images: str | Path | None = None, text_only: bool = False, **_: Any
) -> Dataset:
    """Load the released layout: ``json/<task>.json`` plus videos below ``video/``.

    Args:
        path: the dataset folder, its ``json/`` folder, or one ``json/<task>.json``.
        images: media root to resolve ``video`` under (default: the dataset folder).
        text_only: do not resolve media.

    Raises:
        FileNotFoundError: no task json file at ``path``.
    """
    files, root = released_files(path)
    media_root = Path(images).expanduser() if images else root
    resolver = None if text_only else TaskMediaResolver(media_root)
    samples: list[Sample] = []
    defects: list[str] = []
    for f in files:
        task = f.stem
        try:
            rows = loads_json(f.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError) as exc:
            defects.append(f"{f.name}: unreadable, skipped ({exc})")
            continue
        if not isinstance(rows, list):
            defects.append(f"{f.name}: not a JSON list, skipped")
            continue
        for i, row in enumerate(rows):
            try:
                rid = f"{task}/{row['video']}"
                samples.append(
                    row_to_sample(check_depth(row), task=task, row_id=rid, resolver=resolver)
                )
            except (KeyError, ValueError, TypeError, SyntaxError, ValidationError) as exc:
                defects.append(f"{f.name}[{i}]: skipped ({skip_reason(exc)})")
    samples = finalize_samples(link_originals(samples), defects)
    info = _report_resolution(samples, resolver, defects)
    name = root.name if len(files) > 1 else f"{root.name}/{files[0].stem}"
    return Dataset(
        name=name,
        benchmark="tamper",
        samples=samples,
        defects=defects,
        data_hash=sha256_files(files),
        source=str(Path(path).expanduser()),
        info=info,
    )


def load_vlmevalkit_tsv(
    path: str | Path, *, images: str | Path | None = None, text_only: bool = False, **_: Any
) -> Dataset:
    """Load VLMEvalKit's MVTamperBench TSV.

    Columns used: ``index`` (id; row number if absent), ``video``, ``question``,
    ``candidates`` (a Python list literal), ``answer`` (option text),
    ``tamper_type``, ``prefix`` (the row's source folder, ``video/star/...``)
    and the task from ``task_type`` (``"Action Sequence"`` -> ``action_sequence``),
    ``task`` or ``category``. Videos are resolved under ``images`` (default:
    the TSV's folder) in the row's ``prefix`` folder, else its task's folder.

    Raises:
        FileNotFoundError: no such file.
        DatasetError: not a TSV with the required columns.
    """
    import pandas as pd

    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"TSV not found: {file}")
    try:
        df = pd.read_csv(file, sep="\t", dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (ValueError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{file}: not a readable TSV ({exc})") from None
    missing = {"video", "candidates", "answer"} - set(df.columns)
    if missing:
        raise DatasetError(f"{file}: missing column(s) {sorted(missing)}")
    root = Path(images).expanduser() if images else file.parent
    resolver = None if text_only else TaskMediaResolver(root)
    task_col = next((c for c in ("task_type", "task", "category") if c in df.columns), None)
    samples: list[Sample] = []
    defects: list[str] = []
    for i, raw in enumerate(df.to_dict(orient="records")):
        row = {str(k): v for k, v in raw.items()}
        try:
            rid = str(row.get("index") or i)
            task = task_slug(str(row[task_col])) if task_col and row.get(task_col) else None
            folder = folder_of_prefix(str(row["prefix"])) if row.get("prefix") else None
            samples.append(
                row_to_sample(row, task=task, row_id=rid, resolver=resolver, folder=folder)
            )
        except (KeyError, ValueError, TypeError, SyntaxError, ValidationError) as exc:
            defects.append(f"{file.name} row {i}: skipped ({skip_reason(exc)})")
    samples = finalize_samples(link_originals(samples), defects)
    info = _report_resolution(samples, resolver, defects)
    return Dataset(
        name=file.stem,
        benchmark="tamper",
        samples=samples,
        defects=defects,
        data_hash=sha256_files([file]),
        source=str(file),
        info=info,
    )


__all__ = [
    "RELEASED_ROW_KEYS",
    "is_released_rows",
    "link_originals",
    "load_mvtamperbench",
    "load_vlmevalkit_tsv",
    "parse_released_name",
    "released_files",
]
