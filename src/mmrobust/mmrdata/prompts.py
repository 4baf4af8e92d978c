"""The two prompts of the generation pipeline (MMR paper, section 4 and appendix figures 6-13).

The paper's prompts are only shown as figures; these are our own wording of
the same steps, following the authors' released generation script
(``dataset/data_generation.py``: six information topics, then paired
questions whose negative replaces one fact of the positive with a similar,
false one, four options each). Unlike that script, which extracts and
generates in one call, we make two calls so the extracted information is
stored and auditable, and we ask for strict JSON with option letters.

``PROMPT_VERSION`` is stored with every output; change it when the wording changes.
"""

from __future__ import annotations

PROMPT_VERSION = "mmrobust-mmrdata-v1"

CATEGORY_KEYS: tuple[str, ...] = (
    "character/character",
    "attribute/existence",
    "attribute/color&texture",
    "attribute/number",
    "attribute/shape",
    "attribute/posture",
    "attribute/position",
    "context/abstract",
    "context/concrete",
    "context/expert",
    "context/activity",
    "context/relation",
)
"""The MMR categories a generated pair may belong to (``id`` prefixes of the benchmark)."""

EXTRACTION_PROMPT = """\
Look at the image carefully and list, accurately and only what you can see for sure:
1. Text or numbers: any clearly legible text or numbers, with where they appear.
2. Objects and people: every object and person, with name or category and how many.
3. Attributes: colour, texture, shape and position of objects; posture, clothing and \
facial expression of people.
4. Relations: relative positions of objects and interactions between people and objects.
5. Events and activities: what is happening, and what people are doing.
6. Overall impression: the mood, setting, culture or knowledge the image evokes.
Write one short section per topic. Write "none" for a topic with nothing to report. \
Do not guess."""
"""Stage 1: information extraction (paper section 4, "Information extraction")."""

GENERATION_TEMPLATE = """\
Here is information extracted from an image:
<information>
{information}
</information>

Write {n_pairs} pairs of multiple-choice questions about the image, using only this \
information. Each pair has:
- "positive": a question with a correct premise;
- "negative": a leading question about the same fact that states or presupposes a \
false premise (replace one object, attribute, number, position, activity, relation or \
piece of knowledge with a similar but wrong one). Its correct option must reject the \
false premise and state the truth, so the negative contradicts the positive.
Each question has exactly four short options; exactly one is correct. Give the correct \
option's letter as "answer". Answers must be certain: never "uncertain", "unclear" or \
"cannot be determined". Do not write "in the image" or "in the picture" in options.
"category" is one of: {categories}.

Reply with JSON only, in this form:
{{"pairs": [{{"category": "attribute/color&texture",
  "positive": {{"question": "...", "options": ["...", "...", "...", "..."], "answer": "B"}},
  "negative": {{"question": "...", "options": ["...", "...", "...", "..."], "answer": "D"}}}}]}}"""
"""Stage 2: paired positive/negative generation (paper section 4, "Instruction tuning data")."""


def generation_prompt(information: str, n_pairs: int) -> str:
    """Stage-2 prompt for one image.

    Args:
        information: the stage-1 reply (extracted information), stripped.
        n_pairs: how many positive/negative pairs to ask for (>= 1).

    Raises:
        ValueError: ``n_pairs < 1``.
    """
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    return GENERATION_TEMPLATE.format(
        information=information.strip(), n_pairs=n_pairs, categories=", ".join(CATEGORY_KEYS)
    )


__all__ = [
    "CATEGORY_KEYS",
    "EXTRACTION_PROMPT",
    "GENERATION_TEMPLATE",
    "PROMPT_VERSION",
    "generation_prompt",
]
