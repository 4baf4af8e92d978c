"""Parity of ``extract(..., mode="official", benchmark="mmr")`` with MMR's reference scorer.

The reference (``evaluation/calculation_mmr.py`` of the MMR repository) does,
for each reply: keep the text before the first ``"."``; replace ``","`` by a
space; split on single spaces; then ``if 'A' in words`` ... ``elif 'D' in
words`` (list membership: a *whole token* equal to the letter, checked in
the fixed order A, B, C, D); otherwise no answer ("E"). Expected letters
below were worked out by those rules by hand.
"""

from __future__ import annotations

import pytest

from mmrobust.extract import extract
from mmrobust.status import Status

OPTIONS = {"A": "a cat", "B": "a dog", "C": "a cow", "D": "a hen"}

CASES: list[tuple[str, str | None]] = [
    ("A", "A"),
    ("B.", "B"),
    ("C. a cow", "C"),
    ("The answer is D.", "D"),
    ("Based on the image, D", "D"),  # token test: "Based" is not "B"
    ("D, C", "C"),  # fixed order: C is checked before D
    ("Option B is right because A is wrong.", "A"),  # fixed order beats position
    ("A man is sitting. So B", "A"),  # text before the first period only
    ("I think. The answer is B", None),  # "I think" holds no letter token
    ("(A)", None),  # "(A)" is not the token "A"
    ("Answer:B", None),
    ("C\nbecause it is a cow", None),  # splits on spaces only: "C\nbecause" is one token
    ("", None),
    ("none of them", None),
]


@pytest.mark.parametrize(("reply", "expected"), CASES)
def test_official_mmr_matches_reference_rules(reply: str, expected: str | None) -> None:
    got = extract(reply, OPTIONS, mode="official", benchmark="mmr")
    assert got.letter == expected
    assert got.status is (Status.OK if expected else Status.PARSE_FAIL)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("B", "B"), ("(C)", "C"), ("The answer is D.", "D"), ("Answer: A", "A")],
)
def test_lenient_default_reads_plain_letter_forms(reply: str, expected: str) -> None:
    got = extract(reply, OPTIONS, benchmark="mmr")
    assert (got.letter, got.status) == (expected, Status.OK)


def test_lenient_never_guesses() -> None:
    got = extract("I cannot tell from the picture", OPTIONS, benchmark="mmr")
    assert got.letter is None and got.status is Status.PARSE_FAIL


# Issue 28: replies of reasoning models, hedges and look-alikes.
# (reply, official MMR scorer, lenient default); the official scorer reads the whole text.
ISSUE_CASES: list[tuple[str, str | None, str | None]] = [
    ("<think>\nOption A is wrong. So C.\n</think>\n\nC", "A", "C"),  # "A" is a word of it
    ("Option A is wrong. So C.\n</think>\n\nC", "A", "C"),
    ("<think>\nOption A is wrong. So", "A", None),  # cut inside its reasoning
    ("<think>\nThe cat is grey.\n</think>\n\nD. a hen", None, "D"),  # "\n\nD" is no word "D"
    ("C or D", "C", None),
    ("B, C", "B", None),
    ("B or A?", "B", None),  # "A?" is not the word "A"
    ("I think A, but it could be B.", "A", None),
    ("N/A", None, None),
    ("The answer is A. However, on second thought it is a dog, so B.", "A", "B"),
    ("Ｃ", None, "C"),  # no width normalisation in the scorer
    ("（B）", None, "B"),
]


@pytest.mark.parametrize(("reply", "official", "lenient"), ISSUE_CASES)
def test_issue_28_mmr_replies(reply: str, official: str | None, lenient: str | None) -> None:
    assert extract(reply, OPTIONS, mode="official", benchmark="mmr").letter == official
    got = extract(reply, OPTIONS, benchmark="mmr")
    assert got.letter == lenient
    assert got.status is (Status.OK if lenient else Status.PARSE_FAIL)


def test_mmr_separate_reasoning_field() -> None:
    """The official scorer reads the reply text only; lenient ignores the field's letters."""
    field = "A looks right but the animal barks, so B."
    assert extract("B", OPTIONS, benchmark="mmr", reasoning=field).letter == "B"
    assert extract("B", OPTIONS, mode="official", benchmark="mmr", reasoning=field).letter == "B"
    cut = extract("", OPTIONS, benchmark="mmr", reasoning=field)
    assert (cut.letter, cut.rule) == (None, "reasoning:cut")
