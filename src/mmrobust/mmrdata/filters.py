"""Sample filtering (MMR paper, section 4, "Sample filtering"), pure functions.

The paper filters "by keyword matching, removing conversations with uncertain
answers (e.g. 'uncertain') and redundant phrases (e.g. 'in the image')". The
keyword list is the authors' (``dataset/data_filtering.py``), plus the words
their generation prompt forbids ("uncertain", "unclear", "not clear") and a
few common refusals. Matching is case-insensitive substring matching (the
reference is case-sensitive; ``"Sorry"`` would slip through it).

A turn is checked on its answer (the correct option's text), as the
reference checks the assistant turns; the question and options are checked
for structure (empty or duplicate options, a negative identical to its
positive).
"""

from __future__ import annotations

from mmrobust.mmrdata.parse import GeneratedPair, GeneratedQA

REFERENCE_KEYWORDS: tuple[str, ...] = (
    "sorry",
    "not provided",
    "is not visible",
    "Based on the data provided",
    "I cannot",
    "I am unable to see",
    "I can't provide",
    "I can't determine",
    "I can't specify",
    "I cannot directly see",
    "I can't identify",
    "I can't confirm",
    "I can't tell",
    "I can't verify",
    "The question can't be answered",
    "I can't ascertain",
    "I can't visually describe",
    "Apologies, but",
    "I can't visually confirm",
    "I can't accurately answer",
    "not discernible",
    "is not specified in the image.",
    "described in the image",
    "available in the text or image",
    "given in the image",
    "can be found in the image",
    "I'm unable",
)
"""The invalid-word list of the MMR authors' filtering script."""

EXTRA_KEYWORDS: tuple[str, ...] = (
    "uncertain",
    "unclear",
    "not clear",
    "cannot be determined",
    "can't be determined",
    "as an ai",
    "i can't help",
    "i cannot help",
)
"""Our additions: the words the generation prompt forbids, and common refusals."""

UNCERTAIN_KEYWORDS: tuple[str, ...] = tuple(
    dict.fromkeys(k.lower() for k in (*REFERENCE_KEYWORDS, *EXTRA_KEYWORDS))
)
"""All keywords, lower-cased; an answer containing one is dropped."""


def find_keyword(text: str) -> str | None:
    """The first keyword of :data:`UNCERTAIN_KEYWORDS` found in ``text`` (case-insensitive)."""
    lowered = text.lower().replace("\u2019", "'")
    for keyword in UNCERTAIN_KEYWORDS:
        if keyword in lowered:
            return keyword
    return None


def check_qa(qa: GeneratedQA) -> list[str]:
    """Reasons to drop one turn (empty list: keep it).

    Reasons: ``"uncertain: '<keyword>'"`` (the answer contains a keyword),
    ``"malformed: empty question/option"``, ``"malformed: duplicate options"``.
    """
    reasons: list[str] = []
    if not qa.question.strip() or any(not o.strip() for o in qa.options):
        reasons.append("malformed: empty question/option")
    normalised = [" ".join(o.lower().split()).rstrip(".") for o in qa.options]
    if len(set(normalised)) != len(normalised):
        reasons.append("malformed: duplicate options")
    keyword = find_keyword(qa.answer_text)
    if keyword is not None:
        reasons.append(f"uncertain: {keyword!r}")
    return reasons


def check_pair(pair: GeneratedPair) -> dict[str, list[str]]:
    """Reasons to drop each side of a pair: ``{"positive": [...], "negative": [...]}``.

    A negative whose question equals its positive's (case and spacing aside) is
    malformed: it cannot carry a false premise.
    """
    reasons = {"positive": check_qa(pair.positive), "negative": check_qa(pair.negative)}
    same = " ".join(pair.positive.question.lower().split()) == " ".join(
        pair.negative.question.lower().split()
    )
    if same:
        reasons["negative"].append("malformed: negative question equals the positive")
    return reasons


__all__ = [
    "EXTRA_KEYWORDS",
    "REFERENCE_KEYWORDS",
    "UNCERTAIN_KEYWORDS",
    "check_pair",
    "check_qa",
    "find_keyword",
]
