"""Official mode against the reference scorers, decision by decision, per reference version.

MVTamperBench reference: open-compass/VLMEvalKit at

* ``eb58e9e05d4f64316608128988c60a3cb200307d`` (2025-02-24, "[Benchmark] add
  MVTamperBench (#739)": the integration commit, the paper's numbers), and
* ``e8e78f05f3080fe28154f2130321f17951c3be94`` (2026-08-18, head when checked).

Files read: ``vlmeval/dataset/tamperbench.py`` (``MVTamperBench.evaluate``,
``build_prompt``, ``SYS``), ``vlmeval/dataset/utils/tamperbench.py``
(``check_ans_with_model``, ``process_results``, ``get_dimension_rating``),
``vlmeval/dataset/utils/multiple_choice.py`` (``extract_answer_from_item``) and
``vlmeval/utils/matching_util.py`` (``can_infer_option``, ``can_infer_text``).

The rules, in our words (each decision below was worked out from them by hand):

1. A reply is scored against the ground truth only, written ``"(a) yes"``.
   An empty reply is an empty cell of the prediction sheet and is never scored
   (``F``: the F1 counts it wrong, the accuracy ratings count it right). So is a
   reply that pandas (2.x) reads back from the sheet as a missing value:
   ``"None"``, ``"NA"``, ``"null"``... (``vlmeval/smp/file.py`` loads it with
   ``pd.read_excel``).
2. First token (reply lower-cased, stripped, split on single spaces), with dots
   removed, inside ``"(a)"``: right. So ``")"``, ``"("``, a whitespace-only reply
   and ``"b) Yes"`` with truth B are right.
3. ``"(a)"`` inside the first token: right.
4. Option-letter search: punctuation ``.()[],:;!*#{}`` becomes spaces, split on
   whitespace; exactly one option letter (upper case) among the tokens names it.
   Head only: that letter must be among the last four tokens, else the phrase
   ``answer is X`` names X (commits c337155 and a67ace5).
5. Option-text search: exactly one option text (``yes`` / ``no``) is a substring
   of the lower-cased reply (``"Not sure"``, ``"None"`` contain ``"no"``). Head
   only: skipped for replies longer than 10 characters (twice the option-text
   lengths, commit c337155), so ``"Yes, it is tampered."`` is wrong for either truth.
6. Otherwise wrong.

A scratch run that executed the reference functions themselves (outside the
repository) on 5,000 replies x 2 truths x 2 versions, each reply passed through
a spreadsheet written and read with pandas as VLMEvalKit does, agreed on all
20,000 decisions (docs/official.md, "Agreement"); these tests pin the
decisions without needing that code.

MMR reference: BAAI-DCAI/Multimodal-Robustness-Benchmark at
``b85b573034be5b97a06d230f3724b8259500cf7d``,
``evaluation/evaluation/models/calculation.py`` (``calculate_mc``; the same
rules as ``evaluation/evaluation/calculation_mmr.py``).
"""

from __future__ import annotations

import pytest

from mmrobust.extract import extract
from mmrobust.official import (
    TAMPER_REFERENCES,
    mmr_pair_outcome,
    tamper_decision,
    tamper_reference,
)
from mmrobust.registry import UnknownNameError
from mmrobust.status import Status

YN = {"A": "Yes", "B": "No"}
CODE = {"correct": "R", "wrong": "W", "failed": "F"}

# (reply, eb58e9e with truth A then truth B, e8e78f0 with truth A then truth B)
# R = right, W = wrong, F = failed (never scored; the F1 counts it wrong).
PARITY: list[tuple[str, str, str]] = [
    ("A", "RW", "RW"),
    ("B", "WR", "WR"),
    ("a", "RW", "RW"),
    ("b", "WR", "WR"),
    ("(A) Yes", "RW", "RW"),  # rule 2 for A; rule 4 reads A for truth B
    ("A) Yes", "RW", "RW"),
    ("B) No", "WR", "WR"),
    ("(B) No", "WR", "WR"),
    ("No.", "WR", "WR"),  # rule 5: "no"
    ("Yes", "RW", "RW"),
    ("yes", "RW", "RW"),
    ("No", "WR", "WR"),
    ("no", "WR", "WR"),
    ("Answer: A", "RW", "RW"),  # rule 4: tokens Answer, A
    ("Answer: B", "WR", "WR"),
    ("Answer:B", "WR", "WR"),
    (")", "RR", "RR"),  # rule 2: ")" is inside "(a)" and "(b)"
    ("(", "RR", "RR"),
    ("", "FF", "FF"),  # rule 1: empty cell
    (" ", "RR", "RR"),  # first token "" is inside every "(x)"
    ("\n", "RR", "RR"),
    ("Yes, it is tampered.", "RW", "WW"),  # head: rule 5 capped at 10 characters
    ("No, it is not tampered.", "WR", "WW"),
    ("Both A and B", "WW", "WW"),  # two letters, no option text
    ("b) Yes", "RR", "RR"),  # truth A: rule 5 "yes"; truth B: rule 2 "b)" in "(b)"
    ("a) No", "RR", "RR"),  # rule 4 is case-sensitive: "a" is no letter
    ("Not sure", "WR", "WR"),  # "not" contains "no"
    ("None", "FF", "FF"),  # rule 1: pandas reads the cell "None" back as missing
    ("NA", "FF", "FF"),
    ("none", "WR", "WR"),  # not a missing-value string: "none" contains "no"
    ("The video is not tampered.", "WR", "WW"),
    ("No, the video looks normal.", "WR", "WW"),
    ("Yes.", "RW", "RW"),
    ("B.", "WR", "WR"),
    ("A.", "RW", "RW"),
    ("(A)", "RW", "RW"),
    ("(B)", "WR", "WR"),
    ("**A**", "RW", "RW"),
    ("**B**", "WR", "WR"),
    ("The answer is A.", "RW", "RW"),
    ("The answer is B.", "WR", "WR"),
    # head: B is the 5th of 9 tokens (not among the last four) but "answer is **B**" names it
    ("The correct answer is **B**. The frames are consistent.", "WR", "WR"),
    ("I think the answer is A, because frame 3 is black.", "RW", "RW"),
    ("Cannot determine the answer", "WW", "WW"),  # a refusal phrase: "no option"
    ("Z", "WW", "WW"),
    ("A man walks across the street, so B", "RW", "RW"),  # rule 2: "a" in "(a)"
    ("A, B", "WW", "WW"),
    ("B or A", "WR", "WR"),
    (") B", "RR", "RR"),
    ("A) Yes\nB) No", "RW", "RW"),
    ("Yes\nNo", "WW", "WW"),  # both option texts
    ("Best option: (B)", "WR", "WR"),
    ("Best option:(A)", "RW", "RW"),
    ("NO", "WR", "WR"),
    ("YES", "RW", "RW"),
    ("yes, tampered", "RW", "WW"),
    ("It is not possible to tell.", "WR", "WW"),
    ("Failed to obtain answer via API.", "FF", "FF"),  # VLMEvalKit's failure text: score -1
    ("tampered", "WW", "WW"),
    ("Nope", "WR", "WR"),
    ("Yep", "WW", "WW"),
]


@pytest.mark.parametrize(("reply", "integration", "head"), PARITY)
def test_tamper_decision_per_version(reply: str, integration: str, head: str) -> None:
    for version, expected in (("eb58e9e", integration), ("e8e78f0", head)):
        ref = tamper_reference(version)
        got = "".join(CODE[tamper_decision(reply, t, YN, ref).outcome] for t in "AB")
        assert got == expected, (version, reply)


@pytest.mark.parametrize(("reply", "integration", "head"), PARITY)
def test_official_extraction_scores_as_the_reference(
    reply: str, integration: str, head: str
) -> None:
    """The stored letter equals the truth exactly when the reference scores the reply right."""
    for version, expected in (("integration", integration), ("head", head)):
        for truth, code in zip("AB", expected, strict=True):
            got = extract(reply, YN, mode="official", answer=truth, reference=version)
            assert (got.letter == truth) == (code == "R"), (version, reply, truth, got)
            if code == "F":
                assert got.status is Status.PARSE_FAIL and got.rule in (
                    "official:empty-reply",
                    "official:missing-value",
                    "official:api-failure-text",
                )


def test_issue_replies_are_covered() -> None:
    replies = {r for r, _, _ in PARITY}
    wanted = {"A", "B", "(A) Yes", "A) Yes", "B) No", "No.", "Yes", "Answer: A", ")", "(", "",
              "Yes, it is tampered.", "Both A and B", "b) Yes", "Not sure", "None",
              "The video is not tampered.", "No, the video looks normal."}  # fmt: skip
    assert wanted <= replies


def test_system_text_per_version() -> None:
    """``MVTamperBench.SYS`` at each commit (a triple-quoted string with line continuations)."""
    full = tamper_reference("eb58e9e").system
    assert full == (
        "Carefully watch the video and pay attention to the cause and sequence of events, "
        "the detail and movement of objects, and the action and pose of persons. "
        "Based on your observations, select the best option that accurately addresses "
        "the question.\n"
    )
    # 9cc14cd (2025-09-12) deleted the two middle lines; the continuation joins the rest.
    assert tamper_reference("head").system == (
        "Carefully watch the video and pay attention to the cause and sequence of events, "
    )


def test_reference_names() -> None:
    assert tamper_reference(None).name == "eb58e9e"
    assert tamper_reference("integration") is tamper_reference("eb58e9e")
    assert tamper_reference("HEAD") is TAMPER_REFERENCES["e8e78f0"]
    assert tamper_reference(TAMPER_REFERENCES["e8e78f0"].commit).name == "e8e78f0"
    with pytest.raises(UnknownNameError, match="Did you mean: head"):
        tamper_reference("heda")


# (first right, second right, first label, second label) -> the reference's outcome
# calculate_mc: UR = both right; UF = one right and one wrong where the right one is POS.
MMR_PAIRS: list[tuple[bool, bool, str, str, str]] = [
    (True, True, "POS", "NEG", "UR"),
    (True, False, "POS", "NEG", "UF"),
    (False, True, "POS", "NEG", "NR"),
    (False, False, "POS", "NEG", "NF"),
    (True, False, "NEG", "POS", "NR"),  # order inside the pair does not matter...
    (False, True, "NEG", "POS", "UF"),
    (True, False, "POS", "POS", "UF"),  # ...except for the POS/POS defect: both mixed
    (False, True, "POS", "POS", "UF"),  # outcomes are fragile
    (True, True, "POS", "POS", "UR"),
    (True, False, "NEG", "NEG", "NR"),
]


@pytest.mark.parametrize(("first", "second", "t1", "t2", "outcome"), MMR_PAIRS)
def test_mmr_pair_rule(first: bool, second: bool, t1: str, t2: str, outcome: str) -> None:
    assert mmr_pair_outcome(first, second, t1, t2) == outcome
