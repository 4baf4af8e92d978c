"""Loader for the MMR leading-question benchmark (arXiv:2406.10638, section 3).

Reads the released annotation file (``MMR-benchmark.json``: a JSON array of
``{id, image, question, ground_truth, question_type}``), a Hugging Face style
folder (annotation JSON plus an image folder or the image zip), the built-in
demo set (``"mmr-demo"``) or, with network, a hub dataset id.

Each record becomes one :class:`~mmrobust.datasets.schema.Sample`; the two
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
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from mmrobust.datasets.base import Dataset, DatasetError, check_depth, loads_json
from mmrobust.datasets.schema import Sample

log = logging.getLogger(__name__)

LETTERS: tuple[str, ...] = ("A", "B", "C", "D")

CATEGORY_NAMES: dict[str, str] = {
    "character/character": "Character/Number",
    "attribute/existence": "Presence",
    "attribute/color&texture": "Color/Texture",
    "attribute/number": "Number",
    "attribute/shape": "Shape",
    "attribute/posture": "Posture",
    "attribute/position": "Position",
    "context/abstract": "Abstract Knowledge",
    "context/concrete": "Concrete Knowledge",
    "context/expert": "Expertise",
    "context/activity": "Activity",
    "context/relation": "Relationships",
}
"""``id`` prefix (``<level>/<category>``) -> the paper's display name (Table 2 order)."""

CATEGORY_ORDER: tuple[str, ...] = tuple(CATEGORY_NAMES.values())
"""Display names in the column order of the paper's Table 2."""

DEMO_NAME = "mmr-demo"
"""Pass this as ``path`` to load the built-in demo set (images from ``skimage.data``)."""


class MMRFormatError(DatasetError):
    """The file is not an MMR annotation file (not a JSON array of records with the MMR keys)."""


@dataclass(frozen=True)
class ParsedQuestion:
    """A question string split into its parts.

    Attributes:
        stem: the question without options, whitespace-normalised.
        options: letter -> option text, in the order the options appear.
        prompt: ``stem`` and one ``"X. text"`` line per option, in that order.
    """

    stem: str
    options: dict[str, str]
    prompt: str


_WS = re.compile(r"\s+")
# An option marker at the start of a line: "A.", "A)", "A:", "A " (letter alone on the line too).
_LINE_MARKER = re.compile(r"(?m)^[ \t]*([A-D])(?:[.)：:]|(?=\s)|$)[ \t]*")
# An inline option marker preceded by whitespace/start; strict form needs "." or ")".
_INLINE_STRICT = re.compile(r"(?:(?<=\s)|^)([A-D])[.)][ \t]*")
_INLINE_LOOSE = re.compile(r"(?:(?<=\s)|^)([A-D])(?:[.):]|(?=\s))[ \t]*")
# Option-like markers of any letter (letter + punctuation + text) at a line start / inline.
_ANY_LINE_OPTION = re.compile(r"(?m)^[ \t]*([A-Z])[.)：:][ \t]*\S")
_ANY_INLINE_OPTION = re.compile(r"(?:(?<=\s)|^)([A-Z])[.)][ \t]+\S")


def _clean(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _build(text: str, marks: Sequence[tuple[str, int, int]]) -> ParsedQuestion | None:
    """Cut ``text`` at ``marks`` (letter, marker start, text start); None if a part is empty."""
    stem = _clean(text[: marks[0][1]])
    options: dict[str, str] = {}
    for i, (letter, _start, body) in enumerate(marks):
        end = marks[i + 1][1] if i + 1 < len(marks) else len(text)
        options[letter] = _clean(text[body:end])
    if not stem or any(not v for v in options.values()):
        return None
    prompt = "\n".join([stem, *(f"{k}. {v}" for k, v in options.items())])
    return ParsedQuestion(stem=stem, options=options, prompt=prompt)


def _inline_chain(text: str, pattern: re.Pattern[str]) -> list[tuple[str, int, int]] | None:
    """Earliest A<B<C<D chain of inline markers, or None."""
    found = [(m.group(1), m.start(1), m.end()) for m in pattern.finditer(text)]
    for a_index, first in enumerate(found):
        if first[0] != "A":
            continue
        chain = [first]
        for mark in found[a_index + 1 :]:
            if mark[0] == LETTERS[len(chain)]:
                chain.append(mark)
                if len(chain) == len(LETTERS):
                    return chain
    return None


def parse_question(text: str) -> ParsedQuestion:
    """Split an MMR ``question`` string into stem and options A-D.

    Rules, tried in order:

    1. one marker per line (``"A. ..."``, ``"A)"``, ``"A ..."``, ``"A.text"``)
       with each of A-D exactly once, in any order (the real file has
       records with options listed A, D, C, B);
    2. inline markers ``"A. ... B. ... C. ... D. ..."`` in alphabetical order;
    3. the same with bare letters (``"A. Hamlet B The Merchant ..."``).

    Args:
        text: the record's ``question`` string.

    Returns:
        the parsed question; ``options`` keeps the order of appearance.

    A question with more than four options (a line ``E. ...``) or with an option
    letter given twice (two ``D.`` lines) is not a 4-option question: it is
    refused, not merged into option D's text.

    Raises:
        ValueError: four options A-D could not be found, or there are more than four.
    """
    _check_four_options(text)
    line_marks = [(m.group(1), m.start(1), m.end()) for m in _LINE_MARKER.finditer(text)]
    letters = [m[0] for m in line_marks]
    if sorted(letters) == list(LETTERS) and line_marks[0][1] > 0:
        parsed = _build(text, line_marks)
        if parsed is not None:
            return parsed
    for pattern in (_INLINE_STRICT, _INLINE_LOOSE):
        chain = _inline_chain(text, pattern)
        if chain is not None:
            parsed = _build(text, chain)
            if parsed is not None:
                return parsed
    raise ValueError(f"could not find four options A-D in question {_clean(text)[:80]!r}")


def _check_four_options(text: str) -> None:
    """Raise ``ValueError`` for a fifth option or a repeated option letter.

    Line markers (``"E. text"`` at a line start) after the first ``A.`` line are
    counted; an inline ``E.``/``F.`` marker after the last ``D.`` counts too.
    """
    first_a = next((m for m in _ANY_LINE_OPTION.finditer(text) if m.group(1) == "A"), None)
    if first_a is not None:
        letters = [m.group(1) for m in _ANY_LINE_OPTION.finditer(text, first_a.start())]
        extra = sorted({x for x in letters if x not in LETTERS and x <= "H"})
        twice = sorted({x for x in letters if x in LETTERS and letters.count(x) > 1})
        if extra:
            raise ValueError(f"not a 4-option question: option {', '.join(extra)} after A-D")
        if twice:
            raise ValueError(f"not a 4-option question: option {', '.join(twice)} given twice")
    d_marks = [m for m in _ANY_INLINE_OPTION.finditer(text) if m.group(1) == "D"]
    if d_marks:
        tail = text[d_marks[0].end() :]
        later = [m.group(1) for m in _ANY_INLINE_OPTION.finditer(tail)]
        if "E" in later:
            raise ValueError("not a 4-option question: option E after A-D")
        if "D" in later:
            raise ValueError("not a 4-option question: option D given twice")


def category_of(record_id: str) -> str:
    """Display name of the category of an MMR ``id`` (``"attribute/number/04"`` -> ``"Number"``).

    Unknown prefixes are returned as they are (custom data in the MMR format).
    """
    prefix = "/".join(record_id.split("/")[:2])
    return CATEGORY_NAMES.get(prefix, prefix)


def _read_records(path: Path) -> list[dict[str, Any]]:
    try:
        data = loads_json(path.read_text(encoding="utf-8"))
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


def _extract_zip(zip_path: Path, cache_root: Path) -> Path:
    """Extract ``zip_path`` once into ``cache_root/<name>-<sha12>/``; return that folder."""
    digest = hashlib.sha256(zip_path.read_bytes()).hexdigest()[:12]
    dest = cache_root / f"{zip_path.stem}-{digest}"
    done = dest / ".complete"
    if done.exists():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path) as archive:
        for member in archive.namelist():
            target = (dest / member).resolve()
            if not target.is_relative_to(dest.resolve()):
                raise MMRFormatError(f"{zip_path}: unsafe member path {member!r}")
        archive.extractall(dest)
    done.touch()
    return dest


def _image_roots(folder: Path, cache_root: Path) -> list[Path]:
    """Folders in which record image paths may be relative (HF layout)."""
    roots = [folder, folder / "images"]
    roots += [p for p in sorted(folder.iterdir()) if p.is_dir() and p not in roots]
    for zip_path in sorted(folder.glob("*.zip")):
        extracted = _extract_zip(zip_path, cache_root)
        roots += [extracted, *sorted(p for p in extracted.iterdir() if p.is_dir())]
    return roots


def _resolve_source(path: str | Path, cache_dir: Path | None) -> tuple[Path, list[Path]]:
    """Annotation file and candidate image roots for ``path``."""
    cache_root = cache_dir or default_cache_dir()
    if str(path) == DEMO_NAME and not Path(path).exists():
        annotation = materialize_demo(cache_root / "mmr_demo")
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
    if re.fullmatch(r"[\w.-]+/[\w.-]+", str(path)):
        return _resolve_source(_download_hub(str(path), cache_root), cache_dir)
    raise FileNotFoundError(f"MMR data not found: {path}")


def _download_hub(repo_id: str, cache_root: Path) -> Path:
    """The hub snapshot of ``repo_id`` in ``cache_root/hub`` (``mmrobust.datasets.hub.snapshot``:
    token and offline mode as the hub library has them; one-line errors)."""
    from mmrobust.datasets.hub import HubRef, snapshot

    return snapshot(HubRef(repo_id), cache_dir=cache_root / "hub")


def default_cache_dir() -> Path:
    """``$MMROBUST_CACHE`` or ``$XDG_CACHE_HOME/mmrobust`` or ``~/.cache/mmrobust``."""
    from mmrobust.paths import cache_root

    return cache_root()


def _find_image(relative: str, roots: Sequence[Path]) -> Path | None:
    for root in roots:
        candidate = root / relative
        if candidate.is_file():
            return candidate
    return None


KNOWN_POLARITY: dict[tuple[str, str], str] = {
    ("attribute/number/04", "1fc8686d2017e5b5"): "positive",
    ("attribute/number/04", "cdd50b827ae61b3a"): "negative",
}
"""Role of records whose label is wrong, keyed by ``(id, question_key(question))``.

The released file (sha256 e55290e6...) labels both records of
``attribute/number/04`` ``POS``. "How many people in total have laptops?" is
the positive question; "Are all five people in total have laptops?" asserts
a false count ("all five") that its correct option (A, "only one person has a
computer") rejects: the leading question (the file lists it second). Keyed by
content, so the fix holds wherever the records sit in the file."""


def question_key(question: str) -> str:
    """First 16 hex digits of the sha256 of a record's ``question`` string (UTF-8)."""
    return hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]


@dataclass
class _Row:
    index: int
    record: Mapping[str, Any]
    polarity: str
    suffix: str = ""


def _label(record: Mapping[str, Any]) -> str:
    return str(record["question_type"]).upper()


def _unresolved(rows: list[tuple[int, Mapping[str, Any]]]) -> list[_Row]:
    """Keep records whose pair cannot be formed as questions, with content-derived ids.

    The id suffix hashes the whole record, so it does not depend on file
    order; a record identical to another one is kept once.
    """
    out: dict[str, _Row] = {}
    for index, record in rows:
        polarity = "negative" if _label(record) == "NEG" else "positive"
        blob = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str)
        suffix = f"{polarity[:3]}-{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:8]}"
        if suffix not in out or index < out[suffix].index:
            out[suffix] = _Row(index, record, polarity, suffix)
    return list(out.values())


def _assign_polarity(
    rows: list[tuple[int, Mapping[str, Any]]], pair_id: str, defects: list[str]
) -> list[_Row]:
    """Decide which record of a pair is positive and which negative (module rules).

    Reads the records' content (labels, question text), never their order, so
    the result is the same however the file is ordered.
    """
    if len(rows) == 1:
        index, record = rows[0]
        polarity = "negative" if _label(record) == "NEG" else "positive"
        defects.append(f"{pair_id}: only one record; the pair cannot be scored")
        return [_Row(index, record, polarity)]
    if len(rows) > 2:
        labelled_pos = [r for r in rows if _label(r[1]) == "POS"]
        labelled_neg = [r for r in rows if _label(r[1]) == "NEG"]
        if len(labelled_pos) == 1 and len(labelled_neg) == 1:
            defects.append(
                f"{pair_id}: {len(rows)} records; the one POS and the one NEG record are kept, "
                f"{len(rows) - 2} other(s) dropped"
            )
            rows = [labelled_pos[0], labelled_neg[0]]
        else:
            defects.append(
                f"{pair_id}: {len(rows)} records ({len(labelled_pos)} POS, "
                f"{len(labelled_neg)} NEG); asked, not scored as a pair"
            )
            return _unresolved(rows)
    (i0, r0), (i1, r1) = rows
    types = [_label(r0), _label(r1)]
    if sorted(types) == ["NEG", "POS"]:
        return [
            _Row(i, r, "positive" if t == "POS" else "negative")
            for (i, r), t in zip(rows, types, strict=True)
        ]
    valid = [t in ("POS", "NEG") for t in types]
    if valid.count(True) == 1:
        # one label is valid: trust it and give the other record the opposite role
        t = types[0] if valid[0] else types[1]
        first_positive = (t == "POS") == valid[0]
        shown = sorted(types)
        defects.append(
            f"{pair_id}: labels {shown[0]}/{shown[1]}; the valid label {t} decides the pair "
            "(the other record takes the other role)"
        )
        log.warning("MMR data defect: %s", defects[-1])
        pos, neg = ((i0, r0), (i1, r1)) if first_positive else ((i1, r1), (i0, r0))
        return [_Row(*pos, "positive"), _Row(*neg, "negative")]
    known = [KNOWN_POLARITY.get((pair_id, question_key(str(r["question"])))) for _, r in rows]
    if sorted(k or "" for k in known) == ["negative", "positive"]:
        leading = next(r for (_, r), k in zip(rows, known, strict=True) if k == "negative")
        stem = _clean(str(leading["question"])).split("?")[0][:60]
        defects.append(
            f"{pair_id}: both records labelled {types[0]}/{types[1]}; resolved by content "
            f"(a known defect of the released file): {stem!r}... is the leading question"
        )
        log.warning("MMR data defect: %s", defects[-1])
        return [_Row(i, r, k or "") for (i, r), k in zip(rows, known, strict=True)]
    defects.append(
        f"{pair_id}: both records labelled {types[0]}/{types[1]}; which one is the leading "
        "question cannot be told from the data: both are asked, the pair is not scored"
    )
    log.warning("MMR data defect: %s", defects[-1])
    return _unresolved(rows)


def mmr_samples(
    records: Sequence[Mapping[str, Any]],
    *,
    image_roots: Sequence[Path] = (),
    text_only: bool = False,
) -> tuple[list[Sample], list[str]]:
    """Turn MMR records into samples, pairing by ``id``; return ``(samples, defects)``.

    Pure apart from checking that image files exist. Samples come pair by
    pair in first-appearance order of the pair ids, positive first; their ids,
    content and ``defects`` do not depend on the order of ``records`` (apart
    from ``meta["record_index"]``).

    Args:
        records: the JSON objects of the annotation file.
        image_roots: folders the ``image`` paths may be relative to; the first hit wins.
        text_only: run without images (the paper's Table 9 ablation): ``image`` is ``None``
            and a missing image is not an error.
    """
    defects: list[str] = []
    by_id: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for index, record in enumerate(records):
        by_id.setdefault(str(record["id"]), []).append((index, record))
    samples: list[Sample] = []
    for pair_id, rows in by_id.items():
        for row in sorted(
            _assign_polarity(rows, pair_id, defects), key=lambda r: r.polarity != "positive"
        ):
            sample = _to_sample(pair_id, row, image_roots, text_only, defects)
            if sample is not None:
                samples.append(sample)
    return samples, defects


def _to_sample(
    pair_id: str, row: _Row, roots: Sequence[Path], text_only: bool, defects: list[str]
) -> Sample | None:
    record = row.record
    answer = str(record["ground_truth"]).strip().upper()
    suffix = row.suffix or ("pos" if row.polarity == "positive" else "neg")
    error: str | None = None
    try:
        parsed = parse_question(str(record["question"]))
        stem, options, prompt = parsed.stem, parsed.options, parsed.prompt
    except ValueError as exc:
        stem = _clean(str(record["question"]))
        options = {letter: "" for letter in LETTERS}
        prompt = stem
        error = str(exc)
        defects.append(f"{pair_id}#{suffix}: {exc}")
    if answer not in options:
        defects.append(
            f"{pair_id}#{suffix}: ground truth {answer!r} is not an option letter; record dropped"
        )
        return None
    image: Path | None = None
    if not text_only and error is None:
        relative = str(record.get("image") or f"{pair_id}.jpg")
        image = _find_image(relative, roots)
        if image is None:
            error = f"image not found: {relative} (pass --media DIR, or --text-only)"
    return Sample(
        id=f"{pair_id}#{suffix}",
        benchmark="mmr",
        image=image,
        question=stem,
        options=options,
        answer=answer,
        group=pair_id,
        category=category_of(pair_id),
        polarity="positive" if row.polarity == "positive" else "negative",
        prompt=prompt,
        error=error,
        meta={
            "record_index": row.index,
            "question_type": _label(record),
            "question_raw": str(record["question"]),
        },
    )


DEMO_IMAGES: dict[str, str] = {
    "astronaut.jpg": "astronaut",
    "camera.jpg": "camera",
    "chelsea.jpg": "chelsea",
    "coffee.jpg": "coffee",
    "coins.jpg": "coins",
    "horse.jpg": "horse",
    "hubble_deep_field.jpg": "hubble_deep_field",
    "immunohistochemistry.jpg": "immunohistochemistry",
    "motorcycle.jpg": "stereo_motorcycle",
    "page.jpg": "page",
    "rocket.jpg": "rocket",
}
"""Demo image file -> the ``skimage.data`` function whose photo it is (all ship in the wheel)."""


def _demo_image(function: str) -> np.ndarray:
    """The photo as ``(H, W, 3)`` or ``(H, W)`` uint8 (the horse silhouette: black on white)."""
    import skimage.data

    image = getattr(skimage.data, function)()
    if function == "stereo_motorcycle":
        image = image[0]
    if image.dtype == bool:
        image = image.astype(np.uint8) * 255
    return np.asarray(image, dtype=np.uint8)


def materialize_demo(dest: str | Path) -> Path:
    """Write the demo set (annotation JSON and JPEG photos) under ``dest``; return the JSON path.

    The 24 pairs (two per category) are ours, in the MMR format, about photos
    that ship inside scikit-image (``skimage.data``; public domain or CC0, see
    ``mmrobust/data/mmr_demo/README.md``). Images are written once to
    ``dest/images/`` (atomic renames; existing files are kept), so the demo
    works offline on a fresh install.
    """
    import cv2

    dest = Path(dest)
    images = dest / "images"
    images.mkdir(parents=True, exist_ok=True)
    for name, function in DEMO_IMAGES.items():
        target = images / name
        if target.exists():
            continue
        pixels = _demo_image(function)
        if pixels.ndim == 3:
            pixels = cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
        tmp = target.with_suffix(".tmp.jpg")
        if not cv2.imwrite(str(tmp), pixels, [cv2.IMWRITE_JPEG_QUALITY, 92]):
            raise OSError(f"could not write {tmp}")
        tmp.replace(target)
    annotation = dest / "MMR-demo.json"
    source = files("mmrobust") / "data" / "mmr_demo" / "MMR-demo.json"
    data = source.read_bytes()
    if not annotation.exists() or annotation.read_bytes() != data:
        tmp_json = annotation.with_suffix(".tmp")
        tmp_json.write_bytes(data)
        tmp_json.replace(annotation)
    return annotation


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
]
