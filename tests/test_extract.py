"""Answer extraction: a table of crafted replies with the expected letter per mode."""

from __future__ import annotations

import pytest

from mmrobust.extract import extract
from mmrobust.status import Status

YN = {"A": "Yes", "B": "No"}
ABCD = {"A": "red", "B": "green", "C": "blue", "D": "yellow"}

# (reply, strict, lenient); official tamper decisions: tests/test_reference_parity.py
TAMPER_TABLE: list[tuple[str, str | None, str | None]] = [
    ("A", "A", "A"),
    ("B", "B", "B"),
    ("a", "A", "A"),
    (" B\n", "B", "B"),
    ("(B)", "B", "B"),
    ("(A)", "A", "A"),
    ("**A**", "A", "A"),
    ("**B**.", "B", "B"),
    ("A.", "A", "A"),
    ("B)", "B", "B"),
    ("A) Yes", "A", "A"),
    ("B) No", "B", "B"),
    ("B. No", "B", "B"),
    ("(A) Yes", "A", "A"),
    ("Answer: B", "B", "B"),
    ("Answer: (A)", "A", "A"),
    ("The answer is B.", "B", "B"),
    ("Best option: (A)", "A", "A"),
    ("Option B", "B", "B"),
    ("[A]", "A", "A"),
    ("Yes", None, "A"),
    ("No", None, "B"),
    ("No.", None, "B"),
    ("yes.", None, "A"),
    ("Yes, it is tampered", None, "A"),
    ("No, the video looks natural.", None, "B"),
    ("The video shows signs of tampering, so yes.", None, "A"),
    ("I see no signs of tampering; my answer would be no", None, "B"),
    ("A man walks across the street, so B", None, "B"),
    ("After checking every frame I pick B", None, "B"),
    ("I cannot determine this from the frames.", None, None),
    ("I'm sorry, I can't help with that.", None, None),
    ("", None, None),  # reference quirk: empty matches every option
    ("   ", None, None),
    (")", None, None),  # reference quirk: ")" is a substring of "(a)" and "(b)"
    (") whatever", None, None),
    ("A man is walking.", None, None),
    ("a) yes", "A", "A"),
    ("Answer: A or Answer: B", None, None),
    ("It could be yes or no", None, None),
    ("Yes and no", None, "A"),  # starts with an option text
    ("The frames look consistent.", None, None),
    ("B. No, there is nothing unusual", "B", "B"),
    ("(B) No.", "B", "B"),
    ("Answer:B", "B", "B"),
    ("b.", "B", "B"),
]


@pytest.mark.parametrize(("reply", "strict", "lenient"), TAMPER_TABLE)
def test_tamper_reply_table(reply: str, strict: str | None, lenient: str | None) -> None:
    for mode, expected in (("strict", strict), ("lenient", lenient)):
        got = extract(reply, YN, mode=mode, benchmark="tamper")
        assert got.letter == expected, (mode, reply, got)
        assert got.status is (Status.OK if expected else Status.PARSE_FAIL)
        assert got.rule


def test_table_is_big_enough() -> None:
    assert len(TAMPER_TABLE) >= 40


def test_official_tamper_without_truth() -> None:
    got = extract("", YN, mode="official")
    assert got.status is Status.PARSE_FAIL and got.rule == "official:empty-reply"
    got = extract(")", YN, mode="official")  # right for either truth: no single letter
    assert got.status is Status.PARSE_FAIL and got.rule == "official:matches-every-option"
    assert extract("b) Yes", YN, mode="official").rule == "official:matches-every-option"
    assert extract("B", YN, mode="official").letter == "B"


# (reply, official MMR, lenient)
MMR_TABLE: list[tuple[str, str | None, str | None]] = [
    ("C", "C", "C"),
    ("D. yellow", "D", "D"),
    ("Based on the image, D", "D", "D"),  # whole words only: "Based" is not "B"
    ("C or A", "A", "A"),  # official: fixed A>B>C>D priority; lenient: last letter named
    ("(A)", None, "A"),  # "(A)" is not the word "A" in the reference
    ("A man holds a blue cup, so C", "A", "C"),
    ("The colour is D. Because of the light.", "D", "D"),  # only text before the first period
    ("the answer is c", None, "C"),  # case-sensitive in the reference
    ("blue", None, "C"),
    ("", None, None),
    ("I don't know.", None, None),
]


@pytest.mark.parametrize(("reply", "official", "lenient"), MMR_TABLE)
def test_mmr_reply_table(reply: str, official: str | None, lenient: str | None) -> None:
    assert extract(reply, ABCD, mode="official", benchmark="mmr").letter == official
    assert extract(reply, ABCD, mode="lenient", benchmark="mmr").letter == lenient


def test_unknown_mode_raises() -> None:
    with pytest.raises(ValueError, match="unknown extraction mode"):
        extract("A", YN, mode="fuzzy")
