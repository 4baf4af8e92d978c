"""MMR records -> samples: categories, pairing by ``id`` and the polarity of each record.

The two records of a pair share ``id`` and are paired by it, never by file
position; every decision reads the records' content only, so the samples and
their defects do not change when the file's records are reordered (the rules
and the known defect of the released file: :mod:`mmrobust.datasets.mmr`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrobust.datasets.mmr_question import LETTERS, clean_space, parse_question
from mmrobust.schema import Sample

log = logging.getLogger("mmrobust.datasets.mmr")

MEDIA_HINT = "(pass --media DIR, or --text-only)"
"""What a sample whose image is not found tells the user (once: the run's check adds none)."""

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


def category_of(record_id: str) -> str:
    """Display name of the category of an MMR ``id`` (``"attribute/number/04"`` -> ``"Number"``).

    Unknown prefixes are returned as they are (custom data in the MMR format).
    """
    prefix = "/".join(record_id.split("/")[:2])
    return CATEGORY_NAMES.get(prefix, prefix)


def find_image(relative: str, roots: Sequence[Path]) -> Path | None:
    """The first ``root / relative`` that is a file, or ``None``."""
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
        stem = clean_space(str(leading["question"])).split("?")[0][:60]
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
        stem = clean_space(str(record["question"]))
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
        image = find_image(relative, roots)
        if image is None:
            error = f"image not found: {relative} {MEDIA_HINT}"
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


__all__ = [
    "CATEGORY_NAMES",
    "CATEGORY_ORDER",
    "KNOWN_POLARITY",
    "MEDIA_HINT",
    "category_of",
    "find_image",
    "mmr_samples",
    "question_key",
]
