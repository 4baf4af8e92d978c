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
