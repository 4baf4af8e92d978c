"""Loader for the MMR leading-question benchmark (arXiv:2406.10638, section 3).

Reads the released annotation file (``MMR-benchmark.json``: a JSON array of
``{id, image, question, ground_truth, question_type}``), a Hugging Face style
folder (annotation JSON plus an image folder or the image zip), the built-in
demo set (``"mmr-demo"``) or, with network, a hub dataset id.

Each record becomes one :class:`~mmrobust.schema.Sample`; the two
records of a pair share ``id`` and are paired by it, never by file position,
and every decision reads the records' content only, so the samples and the
metrics do not change when the file's records are reordered. (The
reference scorer pairs by file position; official scoring reproduces that
from ``meta["record_index"]``, see :mod:`mmrobust.metrics.mmr`.) Each
sample's ``meta`` keeps ``record_index``, ``question_type`` (as labelled) and
``question_raw`` (the record's question string untouched, which official
mode sends).
The single ``question`` string is split into a stem and four options by
:func:`parse_question`, which tolerates the irregular records of the real
file (options on one line, letters without periods, options out of order,
stray spaces, trailing newlines).

Data defects are reported, not crashed on (``Dataset.defects``):

* two records of one pair with the same ``question_type`` (the real file has
  ``attribute/number/04`` labelled POS/POS): resolved by content when the
  pair is a known defect (:data:`KNOWN_POLARITY`, keyed by the question text),
  else both records are kept as questions but not scored as a pair;
* a pair with one record; a pair with more than two records (one ``POS`` and
  one ``NEG`` are kept and the rest dropped, else none is paired);
* a ground truth that is not one of the parsed option letters (dropped);
* a question whose four options cannot be parsed (kept as a sample with
  ``error`` set, so the runner records a ``data_error`` row for it).

The work is split by job: :mod:`~mmrobust.datasets.mmr_question` (question
parsing), :mod:`~mmrobust.datasets.mmr_pairs` (pairing, polarity, samples),
:mod:`~mmrobust.datasets.mmr_demo` (the demo set); this module finds the
annotation file and the images (a zip is unzipped once by
:mod:`mmrobust.datasets.unzip`) and re-exports the others' names.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from mmrobust.datasets.base import Dataset, DatasetError, check_depth, loads_json
from mmrobust.datasets.checks import missing_local_path
from mmrobust.datasets.mmr_demo import DEMO_IMAGES, DEMO_NAME, materialize_demo
from mmrobust.datasets.mmr_pairs import (
    CATEGORY_NAMES,
    CATEGORY_ORDER,
    KNOWN_POLARITY,
    category_of,
    mmr_samples,
    question_key,
)
from mmrobust.datasets.mmr_question import LETTERS, ParsedQuestion, parse_question
from mmrobust.datasets.unzip import unzip_lock, unzip_once
from mmrobust.paths import cache_root, hub_dir, mmr_demo_dir, unzip_dir


class MMRFormatError(DatasetError):
    """The file is not an MMR annotation file (not a JSON array of records with the MMR keys)."""


def _read_records(path: Path) -> list[dict[str, Any]]:
    try:
        data = loads_json(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise MMRFormatError(f"{path}: not readable as JSON ({exc})") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise MMRFormatError(f"{path}: expected a JSON array of MMR records")
    required = {"id", "question", "ground_truth", "question_type"}
    for index, record in enumerate(data):
        missing = required - set(record)
        if missing:
            raise MMRFormatError(f"{path}: record {index} lacks {sorted(missing)}")
        try:
            check_depth(record)
        except ValueError as exc:
            raise MMRFormatError(f"{path}: record {index} is {exc}") from None
    return data


def unzip_images(zip_path: Path, cache_root: Path) -> Path:
    """Unzip an image zip once (:func:`mmrobust.datasets.unzip.unzip_once`); return its folder.

    The folder is ``<cache_root>/unzipped/mmr-<zip stem>-<hash of the zip's path>/files``:
    the zip owns it, and a changed zip (other size or time) replaces its content.

    Raises:
        DatasetError: a damaged zip or unsafe member names (one line).
    """
    key = hashlib.sha256(str(zip_path.resolve()).encode("utf-8")).hexdigest()[:12]
    root = unzip_dir(f"mmr-{zip_path.stem}-{key}", cache_root)
    with unzip_lock(root):
        unzip_once(zip_path, zip_path.name, root, into="files")
    return root / "files"


def _image_roots(folder: Path, cache_root: Path) -> list[Path]:
    """Folders in which record image paths may be relative (HF layout)."""
    roots = [folder, folder / "images"]
    roots += [p for p in sorted(folder.iterdir()) if p.is_dir() and p not in roots]
    for zip_path in sorted(folder.glob("*.zip")):
        extracted = unzip_images(zip_path, cache_root)
        roots += [extracted, *sorted(p for p in extracted.iterdir() if p.is_dir())]
    return roots


def _resolve_source(path: str | Path, cache_dir: Path | None) -> tuple[Path, list[Path]]:
    """Annotation file and candidate image roots for ``path``."""
    cache_root = cache_dir or default_cache_dir()
    if str(path) == DEMO_NAME and not Path(path).exists():
        annotation = materialize_demo(mmr_demo_dir(cache_root))
        return annotation, [annotation.parent / "images"]
    p = Path(path).expanduser()
    if p.is_file():
        return p, [p.parent]
    if p.is_dir():
        candidates = sorted(p.glob("*.json"))
        preferred = [c for c in candidates if c.name == "MMR-benchmark.json"]
        if preferred:
            candidates = preferred
        if len(candidates) != 1:
            raise MMRFormatError(
                f"{p}: expected one annotation JSON (MMR-benchmark.json) in the folder, "
                f"found {len(candidates)}"
            )
        return candidates[0], _image_roots(p, cache_root)
    local = missing_local_path(str(path))
    if local:  # a mistyped local path, not a hub id
        raise FileNotFoundError(f"MMR data not found: {local}")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", str(path)):
        return _resolve_source(_download_hub(str(path), cache_root), cache_dir)
    raise FileNotFoundError(f"MMR data not found: {path}")


def _download_hub(repo_id: str, cache_root: Path) -> Path:
    """The hub snapshot of ``repo_id`` in ``cache_root/hub`` (``mmrobust.datasets.hub.snapshot``:
    token and offline mode as the hub library has them; one-line errors)."""
    from mmrobust.datasets.hub import HubRef, snapshot

    return snapshot(HubRef(repo_id), cache_dir=hub_dir(cache_root))


def default_cache_dir() -> Path:
    """``$MMROBUST_CACHE`` or ``$XDG_CACHE_HOME/mmrobust`` or ``~/.cache/mmrobust``."""
    return cache_root()


def load_mmr(
    path: str | Path,
    *,
    images: str | Path | None = None,
    text_only: bool = False,
    cache_dir: str | Path | None = None,
    **_: Any,
) -> Dataset:
    """Load the MMR benchmark (format ``"mmr"``).

    Args:
        path: ``MMR-benchmark.json`` (images relative to its folder unless ``images``),
            a folder holding the annotation JSON and an image folder or image zip (the
            Hugging Face layout; a zip is extracted once into the cache), ``"mmr-demo"``
            for the built-in demo set, or a hub dataset id (needs ``huggingface_hub`` and
            network; not used in tests).
        images: folder the records' ``image`` paths are relative to; tried first.
        text_only: no images (paper Table 9 ablation); ``Sample.image`` is ``None``.
        cache_dir: where zips are extracted and the demo is written
            (default :func:`default_cache_dir`).
        **_: options meant for other formats are ignored.

    Returns:
        ``Dataset(name, benchmark="mmr", samples, defects, data_hash, source)``;
        ``data_hash`` is the sha256 of the annotation file.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        MMRFormatError: the file is not an MMR annotation file.
    """
    annotation, roots = _resolve_source(path, Path(cache_dir) if cache_dir else None)
    if images is not None:
        image_dir = Path(images).expanduser()
        if not image_dir.is_dir():
            raise FileNotFoundError(f"--media: not a folder: {image_dir}")
        roots = [image_dir, *roots]
    records = _read_records(annotation)
    samples, defects = mmr_samples(records, image_roots=roots, text_only=text_only)
    name = DEMO_NAME if str(path) == DEMO_NAME else annotation.stem
    return Dataset(
        name=name,
        benchmark="mmr",
        samples=samples,
        defects=defects,
        data_hash=hashlib.sha256(annotation.read_bytes()).hexdigest(),
        source=str(annotation),
    )


__all__ = [
    "CATEGORY_NAMES",
    "CATEGORY_ORDER",
    "DEMO_IMAGES",
    "DEMO_NAME",
    "KNOWN_POLARITY",
    "LETTERS",
    "MMRFormatError",
    "ParsedQuestion",
    "category_of",
    "default_cache_dir",
    "load_mmr",
    "materialize_demo",
    "mmr_samples",
    "parse_question",
    "question_key",
    "unzip_images",
]
