"""Answer extraction: a table of crafted replies with the expected letter per mode."""

from __future__ import annotations

import pytest

from mmrobust.extract import extract
from mmrobust.status import Status

YN = {"A": "Yes", "B": "No"}
ABCD = {"A": "red", "B": "green", "C": "blue", "D": "yellow"}

# (reply, strict, lenient, official tamper with truth "A", official tamper with truth "B")
TAMPER_TABLE: list[tuple[str, str | None, str | None, str | None, str | None]] = [
    ("A", "A", "A", "A", "A"),
    ("B", "B", "B", "B", "B"),
    ("a", "A", "A", "A", "A"),
    (" B\n", "B", "B", "B", "B"),
    ("(B)", "B", "B", "B", "B"),
    ("(A)", "A", "A", "A", "A"),
    ("**A**", "A", "A", "A", "A"),
    ("**B**.", "B", "B", "B", "B"),
    ("A.", "A", "A", "A", "A"),
    ("B)", "B", "B", "B", "B"),
    ("A) Yes", "A", "A", "A", "A"),
    ("B) No", "B", "B", "B", "B"),
    ("B. No", "B", "B", "B", "B"),
    ("(A) Yes", "A", "A", "A", "A"),
    ("Answer: B", "B", "B", "B", "B"),
    ("Answer: (A)", "A", "A", "A", "A"),
    ("The answer is B.", "B", "B", "B", "B"),
    ("Best option: (A)", "A", "A", "A", "A"),
    ("Option B", "B", "B", "B", "B"),
    ("[A]", "A", "A", "A", "A"),
    ("Yes", None, "A", "A", "A"),
    ("No", None, "B", "B", "B"),
    ("No.", None, "B", "B", "B"),
    ("yes.", None, "A", "A", "A"),
    ("Yes, it is tampered", None, "A", "A", "A"),
    ("No, the video looks natural.", None, "B", "B", "B"),
    ("The video shows signs of tampering, so yes.", None, "A", "A", "A"),
    ("I see no signs of tampering; my answer would be no", None, "B", "B", "B"),
    ("A man walks across the street, so B", None, "B", "A", "A"),  # official: first token "a"
    ("After checking every frame I pick B", None, "B", "B", "B"),
    ("I cannot determine this from the frames.", None, None, None, None),
    ("I'm sorry, I can't help with that.", None, None, None, None),
    ("", None, None, "A", "B"),  # reference quirk: empty matches every option
    ("   ", None, None, "A", "B"),
    (")", None, None, "A", "B"),  # reference quirk: ")" is a substring of "(a)" and "(b)"
    (") whatever", None, None, "A", "B"),
    ("A man is walking.", None, None, "A", "A"),  # official first token "a" matches "(a)"
    ("a) yes", "A", "A", "A", "A"),
    ("Answer: A or Answer: B", None, None, None, None),
    ("It could be yes or no", None, None, None, None),
    ("Yes and no", None, "A", "A", "A"),  # starts with an option text
    ("The frames look consistent.", None, None, None, None),
    ("B. No, there is nothing unusual", "B", "B", "B", "B"),
    ("(B) No.", "B", "B", "B", "B"),
    ("Answer:B", "B", "B", "B", "B"),
    ("b.", "B", "B", "B", "B"),
]


@pytest.mark.parametrize(("reply", "strict", "lenient", "off_a", "off_b"), TAMPER_TABLE)
def test_tamper_reply_table(
    reply: str, strict: str | None, lenient: str | None, off_a: str | None, off_b: str | None
) -> None:
    for mode, expected, kw in (
        ("strict", strict, {}),
        ("lenient", lenient, {}),
        ("official", off_a, {"answer": "A"}),
        ("official", off_b, {"answer": "B"}),
    ):
        got = extract(reply, YN, mode=mode, benchmark="tamper", **kw)
        assert got.letter == expected, (mode, reply, got)
        assert got.status is (Status.OK if expected else Status.PARSE_FAIL)
        assert got.rule


def test_table_is_big_enough() -> None:
    assert len(TAMPER_TABLE) >= 40


def test_official_tamper_empty_without_truth_is_parse_fail() -> None:
    got = extract("", YN, mode="official")
    assert got.status is Status.PARSE_FAIL and got.rule == "official:first-token-matches-all"


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
