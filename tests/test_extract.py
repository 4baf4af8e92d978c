"""Answer extraction: a table of crafted replies with the expected letter per mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmrobust.extract import extract
from mmrobust.reply_lang import YES_NO
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
    # official: fixed A>B>C>D priority; lenient: a hedge naming two options is no answer
    # (issue 28; it read the last letter named, A, before)
    ("C or A", "A", None),
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


# --------------------------------------------------------------------------- issue 28
# Replies as today's models write them. (reply, options, strict, lenient, lenient rule);
# a letter is ok, None is parse_fail. The rule is asserted where the issue asks for a
# distinct one (a reply cut inside its reasoning, a hedge, a non-answer).
THINK_YN = "<think>\nOption A would mean tampered. The frames look fine.\n</think>\n\nB"
THINK_MMR = "<think>\nOption A is wrong. So C.\n</think>\n\nC"
ISSUE_TABLE: list[tuple[str, dict[str, str], str | None, str | None, str | None]] = [
    # reasoning blocks: the answer is what follows them; before: A from "Option A" inside
    (THINK_MMR, ABCD, "C", "C", None),
    (THINK_YN, YN, "B", "B", None),
    ("Option A is wrong. So C.\n</think>\n\nC", ABCD, "C", "C", None),  # template opened it
    ("Option A would mean tampered.\n</think>\nB", YN, "B", "B", None),
    ("<think>\nOption A is wrong. So", ABCD, None, None, "reasoning:cut"),  # before: A
    ("<think>\nOption A would mean tampered. The frames", YN, None, None, "reasoning:cut"),
    ("<THINKING>A looks odd</THINKING>Answer: B", YN, "B", "B", None),
    ("◁think▷Option A is wrong◁/think▷C", ABCD, "C", "C", None),  # Kimi-VL's tags
    ("<think>A?</think><answer>C</answer>", ABCD, "C", "C", None),  # GLM-4.1V markers
    ("<think>A</think>x<think>B, then", ABCD, None, None, "reasoning:cut"),
    ("<think>\nThe frames look fine.\n</think>\n\n", YN, None, None, "none"),
    # hedges: two options named without a choice; before: the last letter named
    ("A or B", YN, None, None, "lenient:several-options"),
    ("B or A?", YN, None, None, "lenient:several-options"),
    ("C or D", ABCD, None, None, "lenient:several-options"),
    ("B, C", ABCD, None, None, "lenient:several-options"),
    ("I think A, but it could be B.", YN, None, None, "lenient:several-options"),
    ("I think A, but it could be B.", ABCD, None, None, "lenient:several-options"),
    ("the answer is A or B", YN, "A", None, "lenient:hedge"),
    ("Answer: A or Answer: B", YN, None, None, "lenient:ambiguous-answer-phrase"),
    # non-answers: never option A; before: A by the last letter
    ("N/A", YN, None, None, "lenient:non-answer"),
    ("N/A", ABCD, None, None, "lenient:non-answer"),
    ("n/a.", YN, None, None, "lenient:non-answer"),
    ("Unknown", ABCD, None, None, "lenient:non-answer"),
    # self-correction: the last explicit answer phrase wins; before: A
    ("The answer is A. However, on second thought the video looks normal, so B.", YN, "A",
     "B", "lenient:last-answer-phrase"),
    ("The answer is B. On second thought, the answer is D.", ABCD, None, "D",
     "lenient:last-answer-phrase"),
    ("Option A is wrong. So C.", ABCD, "A", "C", "lenient:answer-phrase"),  # strict as before
    ("So A.", YN, None, "A", "lenient:answer-phrase"),
    ("Therefore, the answer is (B).", ABCD, "B", "B", None),
    ("C is correct.", ABCD, None, "C", "lenient:answer-phrase"),
    # look-alikes: full width, Chinese yes/no, tamper phrasing; before: no answer
    ("Ａ", YN, "A", "A", None),
    ("Ｂ", YN, "B", "B", None),
    ("（B）", YN, "B", "B", None),  # before: strict had no answer, lenient B
    ("Ｃ", ABCD, "C", "C", None),
    ("答案：Ｄ", ABCD, None, "D", None),
    ("是", YN, None, "A", "lenient:yes-no-word"),
    ("否", YN, None, "B", "lenient:yes-no-word"),
    ("不是。", YN, None, "B", "lenient:yes-no-word"),
    ("Not tampered.", YN, None, "B", "lenient:tamper-phrase"),
    ("It is tampered", YN, None, "A", "lenient:tamper-phrase"),
    ("The video has not been tampered with.", YN, None, "B", "lenient:tamper-phrase"),
    ("I can't tell whether it was tampered.", YN, None, None, "none"),
    # unchanged on purpose
    ("A man walks across the street, so B", YN, None, "B", None),
    ("A or B", {"A": "cat", "B": "dog", "C": "cow"}, None, None, "lenient:several-options"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "options", "strict", "lenient", "rule"), ISSUE_TABLE)
def test_issue_28_reply_kinds(
    reply: str, options: dict[str, str], strict: str | None, lenient: str | None, rule: str | None
) -> None:
    bench = "mmr" if len(options) == 4 else "tamper"
    for mode, expected in (("strict", strict), ("lenient", lenient)):
        got = extract(reply, options, mode=mode, benchmark=bench)
        assert got.letter == expected, (mode, reply, got)
        assert got.status is (Status.OK if expected else Status.PARSE_FAIL)
    if rule is not None:
        assert extract(reply, options, benchmark=bench).rule == rule


@pytest.mark.parametrize(
    ("text", "reasoning", "expected", "rule"),
    [
        ("B", "Option A would mean tampered; the frames look fine.", "B", "strict:lone-letter"),
        ("", "Option A would mean tampered; the frames", None, "reasoning:cut"),
        ("  ", "Option A", None, "reasoning:cut"),
        ("", None, None, "none"),
        ("", "   ", None, "none"),  # a blank field is no reasoning
    ],
)
def test_separate_reasoning_field(
    text: str, reasoning: str | None, expected: str | None, rule: str
) -> None:
    """The server's ``reasoning_content`` is never read as the answer; an empty answer beside
    it is a reply cut inside its reasoning."""
    for options, bench in ((YN, "tamper"), (ABCD, "mmr")):
        got = extract(text, options, benchmark=bench, reasoning=reasoning)
        assert (got.letter, got.rule) == (expected, rule)


# Official mode reads the text as the reference does: a reasoning block is part of it.
# (reply, eb58e9e truth A/B, e8e78f0 truth A/B); R right, W wrong.
OFFICIAL_REASONING: list[tuple[str, str, str]] = [
    (THINK_YN, "WW", "WW"),  # tokens A and B: no single letter; no option text
    ("<think>\nOption A would mean tampered. The frames", "RW", "WW"),  # one letter, A
    ("A or B", "RW", "RW"),  # first token "a" is inside "(a)"
    ("N/A", "WW", "WW"),  # not one of pandas' missing values: scored, wrong
    ("Ａ", "WW", "WW"),  # no width normalisation in the reference
    ("是", "WW", "WW"),
    ("Not tampered.", "WR", "WW"),  # "not" contains "no"; head: over 10 characters
    ("The answer is A. However, on second thought the video looks normal, so B.", "WR", "RW"),
]


@pytest.mark.parametrize(("reply", "integration", "head"), OFFICIAL_REASONING)
def test_official_mode_unchanged_on_issue_replies(reply: str, integration: str, head: str) -> None:
    for version, expected in (("eb58e9e", integration), ("e8e78f0", head)):
        got = ""
        for truth in "AB":
            ex = extract(reply, YN, mode="official", answer=truth, reference=version,
                         reasoning="ignored by the reference")  # fmt: skip
            got += "R" if ex.letter == truth else "W"
        assert got == expected, (version, reply)


def test_official_mmr_reads_reasoning_blocks_as_text() -> None:
    """The MMR scorer sees the whole reply: "Option A" inside a <think> block is word A."""
    assert extract(THINK_MMR, ABCD, mode="official", benchmark="mmr").letter == "A"
    assert extract("Ｃ", ABCD, mode="official", benchmark="mmr").letter is None
    assert extract("C or D", ABCD, mode="official", benchmark="mmr").letter == "C"


# Ordinary replies the new policy must keep reading (issue 28 changed the policy, not these),
# and three it now reads right that the last-letter rule got wrong (marked "before").
ORDINARY: list[tuple[str, dict[str, str], str]] = [
    ("B. No, the video is not tampered. Option A would be wrong.", YN, "B"),  # before: A
    ("C\n\nOptions A and B are incorrect", ABCD, "C"),  # before: B
    ("B. Option A is red, but the car is green.", ABCD, "B"),  # before: A
    ("The video is not tampered, so the answer is B (No).", YN, "B"),
    ("I choose B because A doesn't fit", ABCD, "B"),
    ("Between A and B, B is correct", ABCD, "B"),
    ("Answer: C\nExplanation: Options A and B are wrong.", ABCD, "C"),
    ("The correct answer is C. A and B are wrong because the car is blue.", ABCD, "C"),
    ("The answer is C. The image shows a blue car, not red (A).", ABCD, "C"),
    ("Final Answer: \\boxed{B}", ABCD, "B"),
    ("Option C, since D is impossible", ABCD, "C"),
    ("My choice is option B", ABCD, "B"),
    ("Option B is the right one", ABCD, "B"),
    ("Based on A and C, the answer is C.", ABCD, "C"),
    ("Not A, it is B.", ABCD, "B"),
    ("Definitely not B. D.", ABCD, "D"),
    ("A red car is shown, so A.", ABCD, "A"),
    ("The image shows a blue car. Therefore, C.", ABCD, "C"),
    ("After analyzing the frames, I conclude B.", YN, "B"),
    ("Yes, the video has been tampered (option A).", YN, "A"),
    ("No (B): the frames are continuous.", YN, "B"),
]


@pytest.mark.parametrize(("reply", "options", "expected"), ORDINARY)
def test_ordinary_replies_keep_their_reading(
    reply: str, options: dict[str, str], expected: str
) -> None:
    bench = "mmr" if len(options) == 4 else "tamper"
    assert extract(reply, options, benchmark=bench).letter == expected


def test_a_list_of_letters_is_no_choice() -> None:
    assert extract("A\nB", YN).rule == "lenient:several-options"


# --------------------------------------------------------------------------- issue 37
# Replies the default mode still misread: JSON with a reasoning key, gpt-oss harmony channels,
# a self-correction without an answer phrase, Yes/No in other languages, "not tampered" on
# the type/when tasks' none option, "C, because ...". (reply, options, strict, lenient,
# lenient rule); "before" notes what the default mode read until then.
TYPE = {
    "A": "None: the video is not tampered",
    "B": "Some frames are missing",
    "C": "Some frames are black",
    "D": "Some frames are upside down",
    "E": "Some frames come from a different video",
    "F": "A segment plays twice",
}
WHEN = {
    "A": "The beginning (first third)",
    "B": "The middle (second third)",
    "C": "The end (last third)",
    "D": "None: the video is not tampered",
}
REASONED = '{"reasoning": "so option A is plausible, but no.", "answer": "B"}'
HARMONY = "<|channel|>analysis<|message|>Option A is red, so A? No, the car is green."
FINAL = "<|end|><|start|>assistant<|channel|>final<|message|>"
REPLY_KINDS: list[tuple[str, dict[str, str], str | None, str | None, str]] = [
    # JSON: the answer key alone, never the reasoning (before: A from "so option A")
    (f"```json\n{REASONED}\n```", ABCD, "B", "B", "json:strict:lone-letter"),
    (REASONED, ABCD, "B", "B", "json:strict:lone-letter"),
    ('{"final_answer": "(A) Yes", "explanation": "so B is wrong"}', YN, "A", "A",
     "json:strict:leading-letter"),  # before: B
    ('{"Final Answer": "D", "rationale": "C is the colour of the sky"}', ABCD, "D", "D",
     "json:strict:lone-letter"),  # before: parse_fail
    ('Here is my answer:\n```json\n{"choice": "C"}\n```', ABCD, "C", "C",
     "json:strict:lone-letter"),
    ('```\n{"option": "D", "reason": "A man holds it"}', ABCD, "D", "D",
     "json:strict:lone-letter"),  # closing fence cut off
    ("```json\n{'answer': 'C'}\n```", ABCD, "C", "C", "json:strict:lone-letter"),  # before: none
    ('{"result": {"answer": "B", "reasoning": "A?"}}', ABCD, "B", "B", "json:strict:lone-letter"),
    ('{"answer": "No", "reasoning": "Option A would mean tampered."}', YN, None, "B",
     "json:lenient:starts-with-option-text"),  # before: A
    ('{"tampered": false}', YN, "B", "B", "json:verdict"),  # before: parse_fail
    ('{"is_tampered": true, "reasoning": "so B? no"}', YN, "A", "A", "json:verdict"),  # before: B
    ('```json\n{"tampering_detected": "yes"}\n```', YN, "A", "A", "json:verdict"),
    ('{"Tampered": "No", "analysis": "Option A would mean tampered."}', YN, "B", "B",
     "json:verdict"),
    ('{"tampered": false, "reasoning": "frames look continuous"}', TYPE, "A", "A",
     "json:verdict"),  # the type task's none option
    ('{"tampered": false}', WHEN, "D", "D", "json:verdict"),
    ('{"tampered": true}', TYPE, None, None, "json:verdict-not-an-option"),  # which effect?
    ('{"tampered": false}', {**ABCD, "D": "None of the above"}, None, None,
     "json:verdict-not-an-option"),  # not a tamper question
    ('{"reasoning": "A or B?"}', ABCD, None, None, "json:no-answer"),  # cut before the answer
    ('{"answer": "E"}', ABCD, None, None, "json:none"),
    # JSON look-alikes read as prose
    ('The answer is B. {"note": "A"} is not relevant', ABCD, "B", "B", "lenient:answer-phrase"),
    ('I reply as {"answer": "X"}. The answer is B.', ABCD, "B", "B", "lenient:answer-phrase"),
    ("Final Answer: \\boxed{B}", ABCD, None, "B", "lenient:answer-phrase"),
    # gpt-oss harmony channels: analysis is reasoning, final the answer (before: A)
    (f"{HARMONY}{FINAL}**B**<|return|>", ABCD, "B", "B", "strict:lone-letter"),
    (f"{HARMONY}<|end|><|start|>assistant<|channel|>final <|constrain|>json<|message|>"
     '{"answer": "B"}', ABCD, "B", "B", "json:strict:lone-letter"),
    ("<|channel|>analysis<|message|>Option A would mean tampered. Frames look fine."
     f"{FINAL}B", YN, "B", "B", "strict:lone-letter"),
    ("analysisWe need to choose. Option A is red, so A? No.assistantfinalB", ABCD, "B", "B",
     "strict:lone-letter"),  # decoded without its special tokens
    (HARMONY, ABCD, None, None, "reasoning:cut"),  # cut inside analysis; before: A
    ("<|channel|>analysis<|message|>Option A would mean", YN, None, None, "reasoning:cut"),
    ("analysisWe need to choose. Option A is red, so", ABCD, None, None, "reasoning:cut"),
    # a self-correction without an answer phrase (before: the first answer)
    ("The answer is B. However, looking again at the background, it is actually D.", ABCD,
     "B", "D", "lenient:self-correction"),
    ("The answer is B. Actually, D.", ABCD, "B", "D", "lenient:self-correction"),
    ("The answer is B, but it is actually D.", ABCD, "B", "D", "lenient:self-correction"),
    ("The answer is B. Correction: D.", ABCD, "B", "D", "lenient:self-correction"),
    ("The answer is B. I was wrong. It is D.", ABCD, "B", "D", "lenient:self-correction"),
    ("The answer is B. Instead, it is D.", ABCD, "B", "D", "lenient:self-correction"),
    ("The answer is B. No wait, I'll go with D instead.", ABCD, "B", "D",
     "lenient:self-correction"),
    ("The answer is A. Looking again, it is actually blue.", ABCD, "A", "C",
     "lenient:self-correction"),  # option text
    ("The answer is Yes. Actually, looking again, the video is not tampered.", YN, None, "B",
     "lenient:self-correction"),
    ("Answer: A. However, the video is actually not tampered.", YN, "A", "B",
     "lenient:self-correction"),
    ("The answer is C. Looking again, the video is actually not tampered.", TYPE, "C", "A",
     "lenient:self-correction"),
    ("The answer is B. Actually, it could be C or D.", ABCD, "B", None, "lenient:hedge"),
    ("I think it's C. Actually, wait, it's D.", ABCD, None, "D", "lenient:self-correction"),
    ("The answer is Yes. Actually, no.", YN, None, "B", "lenient:self-correction"),
    ("Answer: A. Actually, no, it is not tampered.", YN, "A", "B", "lenient:self-correction"),
    ("It is actually D. So the answer is C.", ABCD, "C", "C", "lenient:answer-phrase"),
    # "actually" / "instead" that correct nothing (unchanged)
    ("The answer is B. The frames actually look continuous.", ABCD, "B", "B",
     "lenient:answer-phrase"),
    ("The answer is C. Option A is actually red, which rules it out.", ABCD, None, "C",
     "lenient:answer-phrase"),
    ("The answer is D. It is actually quite clear from the image.", ABCD, "D", "D",
     "lenient:answer-phrase"),
    ("Actually, I think the answer is B.", ABCD, "B", "B", "lenient:answer-phrase"),
    ("The answer is B, because A is actually impossible.", ABCD, "B", "B",
     "lenient:answer-phrase"),
    ("The answer is B. If it were C instead, the car would be blue.", ABCD, "B", "B",
     "lenient:answer-phrase"),
    ("The answer is C: the car is blue instead of red.", ABCD, "C", "C", "lenient:answer-phrase"),
    ("No. The video actually looks natural.", YN, None, "B", "lenient:starts-with-option-text"),
    ("The answer is B. Actually, the lighting is odd, but B still fits.", ABCD, "B", "B",
     "lenient:answer-phrase"),
    # Yes/No in other languages, alone or explained (before: parse_fail but 是的 and 否)
    ("Sí", YN, None, "A", "lenient:yes-no-word"),
    ("Sí, el video fue manipulado.", YN, None, "A", "lenient:yes-no-word"),
    ("Si.", YN, None, "A", "lenient:yes-no-word"),
    ("Oui", YN, None, "A", "lenient:yes-no-word"),
    ("Oui, la vidéo a été modifiée.", YN, None, "A", "lenient:yes-no-word"),
    ("Non.", YN, None, "B", "lenient:yes-no-word"),
    ("Non, la vidéo n'est pas truquée.", YN, None, "B", "lenient:yes-no-word"),
    ("Ja", YN, None, "A", "lenient:yes-no-word"),
    ("Nein, das Video ist echt.", YN, None, "B", "lenient:yes-no-word"),
    ("はい", YN, None, "A", "lenient:yes-no-word"),
    ("いいえ、改ざんされていません。", YN, None, "B", "lenient:yes-no-word"),
    ("是的", YN, None, "A", "lenient:yes-no-word"),
    ("是的，视频被篡改了。", YN, None, "A", "lenient:yes-no-word"),
    ("否", YN, None, "B", "lenient:yes-no-word"),
    ("不是，视频是正常的。", YN, None, "B", "lenient:yes-no-word"),
    ("视频没有被篡改。", YN, None, "B", "lenient:tamper-phrase"),
    ("Да", YN, None, "A", "lenient:yes-no-word"),
    ("Нет, видео не изменено.", YN, None, "B", "lenient:yes-no-word"),
    ("Sim", YN, None, "A", "lenient:yes-no-word"),
    ("Não, o vídeo não foi adulterado.", YN, None, "B", "lenient:yes-no-word"),
    ("हाँ, वीडियो से छेड़छाड़ की गई है।", YN, None, "A", "lenient:yes-no-word"),
    ("नहीं", YN, None, "B", "lenient:yes-no-word"),
    ("نعم", YN, None, "A", "lenient:yes-no-word"),
    ("لا، الفيديو سليم", YN, None, "B", "lenient:yes-no-word"),
    ("হ্যাঁ", YN, None, "A", "lenient:yes-no-word"),
    ("না", YN, None, "B", "lenient:yes-no-word"),
    ("ہاں", YN, None, "A", "lenient:yes-no-word"),
    ("네, 조작되었습니다.", YN, None, "A", "lenient:yes-no-word"),
    ("아니요", YN, None, "B", "lenient:yes-no-word"),
    ("Sì, il video è stato manomesso.", YN, None, "A", "lenient:yes-no-word"),
    ("Tidak", YN, None, "B", "lenient:yes-no-word"),
    # ... and words that only look like them
    ("Si el video fue manipulado, sería visible.", YN, None, None, "none"),  # "if"
    ("لا أعرف", YN, None, None, "none"),  # "I don't know"
    ("不确定", YN, None, None, "none"),  # "not sure"
    ("Nonetheless, the frames look odd.", YN, None, None, "none"),
    ("Japan is shown.", YN, None, None, "none"),
    ("Oui", ABCD, None, None, "none"),  # not a Yes/No question
    # "not tampered" on the type/when tasks is their none option (before: parse_fail)
    ("The video is not tampered.", TYPE, None, "A", "lenient:tamper-phrase"),
    ("The video is not tampered.", WHEN, None, "D", "lenient:tamper-phrase"),
    ("No signs of tampering.", TYPE, None, "A", "lenient:tamper-phrase"),
    ("It has not been tampered with.", WHEN, None, "D", "lenient:tamper-phrase"),
    ("视频没有被篡改。", WHEN, None, "D", "lenient:tamper-phrase"),
    ("The video is not tampered at the start, but the middle (B) has black frames.", WHEN,
     None, "B", "lenient:last-letter"),
    ("The video is tampered.", TYPE, None, None, "none"),  # which effect: not said
    ("I cannot tell whether it was tampered.", WHEN, None, None, "none"),
    # a leading letter, then "because" (before: parse_fail, several options named)
    ("C, because A, B and D contradict the image.", ABCD, None, "C",
     "lenient:leading-letter-because"),
    ("C because A, B and D contradict the image.", ABCD, None, "C",
     "lenient:leading-letter-because"),
    ("B - because A, C and D are the wrong colour.", ABCD, None, "B",
     "lenient:leading-letter-because"),
    ("D, since A, B and C are ruled out.", ABCD, None, "D", "lenient:leading-letter-because"),
    ("B, because A would mean the frames jump.", YN, None, "B", "lenient:leading-letter-because"),
    ("(C), since A, B and D contradict the image.", ABCD, "C", "C", "strict:leading-letter"),
    ("A, as well as B, could be right.", ABCD, None, None, "lenient:several-options"),
    ("A man is shown because the car is red.", ABCD, None, "A", "lenient:contains-option-text"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "options", "strict", "lenient", "rule"), REPLY_KINDS)
def test_issue_37_reply_kinds(
    reply: str, options: dict[str, str], strict: str | None, lenient: str | None, rule: str
) -> None:
    bench = "mmr" if options is ABCD else "tamper-type" if options in (TYPE, WHEN) else "tamper"
    for mode, expected in (("strict", strict), ("lenient", lenient)):
        got = extract(reply, options, mode=mode, benchmark=bench)
        assert got.letter == expected, (mode, reply, got)
        assert got.status is (Status.OK if expected else Status.PARSE_FAIL)
    assert extract(reply, options, benchmark=bench).rule == rule


# Official mode on the same replies, one entry per REPLY_KINDS row: MMR's letter ("mmr:-" for
# none), or VLMEvalKit's verdicts at eb58e9e | e8e78f0 with each option as the truth (R right,
# W wrong, F never scored). Recorded with the scorer as it was before the default mode learnt
# these kinds: official mode reads none of them differently.
OFFICIAL_ON_REPLY_KINDS: list[str] = [
    "mmr:A", "mmr:A", "RW|WW", "mmr:-", "mmr:-", "mmr:-", "mmr:-", "mmr:-", "RW|WW", "WW|WW",
    "WR|WW", "RW|WW", "RW|WW", "WWWWWW|WWWWWW", "WWWW|WWWW", "WWWWWW|WWWWWW", "RWWW|RWWW",
    "mmr:-", "mmr:-", "mmr:B", "mmr:-", "mmr:-", "mmr:A", "mmr:A", "RW|WW", "mmr:-", "mmr:A",
    "RW|RW", "mmr:-", "mmr:B", "mmr:B", "mmr:B", "mmr:B", "mmr:B", "mmr:B", "mmr:B", "mmr:A",
    "WW|WW", "RW|WW", "WWRWWW|WWRWWW", "mmr:B", "mmr:C", "WW|WW", "RW|WW", "mmr:D", "mmr:B",
    "mmr:C", "mmr:D", "mmr:B", "mmr:A", "mmr:B", "mmr:-", "WR|WW", "mmr:B", "WW|WW", "WW|WW",
    "WW|WW", "WW|WW", "WW|WW", "WR|WR", "WR|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW",
    "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW",
    "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WW|WW", "WR|WW", "WW|WW", "WW|WW",
    "WW|WW", "WW|WW", "WR|WW", "WW|WW", "mmr:-", "WWWWWW|WWWWWW", "WWWW|WWWW", "WWWWWW|WWWWWW",
    "WWWW|WWWW", "WWWW|WWWW", "WRWW|WRWW", "WWWWWW|WWWWWW", "WWWW|WWWW", "mmr:A", "mmr:A",
    "mmr:A", "mmr:A", "WW|WW", "mmr:A", "mmr:A", "mmr:A",
]  # fmt: skip


def test_official_mode_unchanged_on_issue_37_replies() -> None:
    assert len(OFFICIAL_ON_REPLY_KINDS) == len(REPLY_KINDS)
    for (reply, options, *_), pinned in zip(REPLY_KINDS, OFFICIAL_ON_REPLY_KINDS, strict=True):
        if options is ABCD:
            got = extract(reply, options, mode="official", benchmark="mmr").letter
            assert f"mmr:{got or '-'}" == pinned, reply
            continue
        verdicts = []
        for version in ("eb58e9e", "e8e78f0"):
            row = ""
            for truth in options:
                ex = extract(reply, options, mode="official", answer=truth, reference=version)
                unscored = ex.rule in ("official:empty-reply", "official:missing-value")
                row += "R" if ex.letter == truth else "F" if unscored else "W"
            verdicts.append(row)
        assert "|".join(verdicts) == pinned, reply


def test_docs_list_the_yes_no_words_read() -> None:
    """docs/evaluation.md's table of Yes/No words is the list extraction reads."""
    doc = (Path(__file__).parents[1] / "docs" / "evaluation.md").read_text(encoding="utf-8")
    section = doc.split("### Yes and No in other languages", 1)[1].split("\n\n")[2]
    rows = [r.strip("| ").split(" | ") for r in section.splitlines()[2:]]
    table = {r[0]: (tuple(r[1].split(", ")), tuple(r[2].split(", "))) for r in rows}
    assert table == YES_NO
    assert len(YES_NO) >= 10
