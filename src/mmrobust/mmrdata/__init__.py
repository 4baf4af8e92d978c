"""Paired positive/negative training-data generation (MMR paper, arXiv:2406.10638, section 4).

Three stages per image, each a plain function over typed values:

1. information extraction (:data:`~mmrobust.mmrdata.prompts.EXTRACTION_PROMPT`): a VLM lists
   text and numbers, objects and people, attributes, relations, events and the overall
   impression of the image;
2. generation (:func:`~mmrobust.mmrdata.prompts.generation_prompt`): from that information,
   paired positive and negative (leading, false-premise) multiple-choice samples;
3. filtering (:mod:`~mmrobust.mmrdata.filters`): drop malformed samples and turns whose
   answer is uncertain or a refusal (keyword list).

:func:`~mmrobust.mmrdata.pipeline.run_mmr_data` runs them over many images, resumably,
and writes LLaVA-style conversations and an MMR-format multiple-choice file
(:mod:`~mmrobust.mmrdata.writers`).
"""

from __future__ import annotations

from mmrobust.mmrdata.filters import UNCERTAIN_KEYWORDS, check_pair, check_qa
from mmrobust.mmrdata.parse import (
    GeneratedPair,
    GeneratedQA,
    GenerationParseError,
    parse_generation,
)
from mmrobust.mmrdata.pipeline import ItemResult, ItemStatus, MMRDataSummary, run_mmr_data

__all__ = [
    "UNCERTAIN_KEYWORDS",
    "GeneratedPair",
    "GeneratedQA",
    "GenerationParseError",
    "ItemResult",
    "ItemStatus",
    "MMRDataSummary",
    "check_pair",
    "check_qa",
    "parse_generation",
    "run_mmr_data",
]
