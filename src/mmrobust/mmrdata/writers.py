"""Output files of the generation pipeline (pure record builders plus atomic JSON writes).

* ``llava.json``: LLaVA-style conversations, one sample per kept turn;
  positive and negative questions are separate samples (the paper found
  that best, section 4 / appendix B):
  ``{"id", "image", "polarity", "category", "conversations": [{"from": "human",
  "value": "<image>\\n<question>"}, {"from": "gpt", "value": "<correct option>"}]}``.
* ``mmr.json``: the MMR benchmark format (``id, image, question,
  ground_truth, question_type``), only pairs whose two sides were both kept,
  so ``mmrobust eval --data OUT/mmr.json`` can score a model on them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mmrobust.atomicfile import write_text
from mmrobust.mmrdata.parse import GeneratedPair

POLARITY_TYPE = {"positive": "POS", "negative": "NEG"}


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON, atomically (temp file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def llava_records(
    key: str, image: str, pairs: Sequence[GeneratedPair], kept: Sequence[Mapping[str, bool]]
) -> list[dict[str, Any]]:
    """LLaVA conversation samples of one image.

    Args:
        key: the image's item key (unique per image).
        image: image path as written in the output.
        pairs: the parsed pairs.
        kept: per pair, ``{"positive": bool, "negative": bool}`` after filtering.
    """
    out: list[dict[str, Any]] = []
    for index, (pair, keep) in enumerate(zip(pairs, kept, strict=True)):
        for polarity in ("positive", "negative"):
            if not keep[polarity]:
                continue
            qa = pair.positive if polarity == "positive" else pair.negative
            out.append(
                {
                    "id": f"{key}-{index:02d}-{polarity[:3]}",
                    "image": image,
                    "polarity": polarity,
                    "category": pair.category,
                    "conversations": [
                        {"from": "human", "value": f"<image>\n{qa.question.strip()}"},
                        {"from": "gpt", "value": qa.answer_text.strip()},
                    ],
                }
            )
    return out


def mmr_records(
    key: str, image: str, pairs: Sequence[GeneratedPair], kept: Sequence[Mapping[str, bool]]
) -> list[dict[str, Any]]:
    """MMR-format records of one image: both questions of every fully kept pair.

    ``id`` is ``<category>/<key>-<NN>`` so the MMR loader pairs the two records
    and files them under the generated category.
    """
    out: list[dict[str, Any]] = []
    for index, (pair, keep) in enumerate(zip(pairs, kept, strict=True)):
        if not (keep["positive"] and keep["negative"]):
            continue
        pair_id = f"{pair.category}/{key}-{index:02d}"
        for polarity, qa in (("positive", pair.positive), ("negative", pair.negative)):
            out.append(
                {
                    "id": pair_id,
                    "image": image,
                    "question": qa.mmr_question(),
                    "ground_truth": qa.answer,
                    "question_type": POLARITY_TYPE[polarity],
                }
            )
    return out


def concat(chunks: Iterable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Flatten per-image record lists, keeping order."""
    return [record for chunk in chunks for record in chunk]


__all__ = ["concat", "llava_records", "mmr_records", "write_json"]
