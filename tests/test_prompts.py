"""Prompt templates (MVTamperBench A.2.2, MMR instruction), option styles, permutation, baselines."""

from __future__ import annotations

import pytest

from mmrobust.models.base import Request
from mmrobust.models.spec import load_model
from mmrobust.prompts import (
    MMR_INSTRUCTION,
    OFFICIAL_PREFILL,
    PromptConfig,
    build_prompt,
    permute_options,
)
from mmrobust.schema import Sample

TAMPER = Sample(
    id="v_masking", benchmark="tamper", question="q", options={"A": "Yes", "B": "No"}, answer="A"
)


def test_structured_is_the_benchmark_prompt() -> None:
    p = build_prompt(TAMPER)
    assert p.text == (
        "Does this video exhibit any signs of tampering, such as corruption, blackouts, "
        "rotated frames, repeated frames, or swapped frames?\nOptions:\nA. Yes\nB. No"
    )
    assert p.template == "structured" and p.system is None


def test_generic_cot_and_vlmevalkit_style() -> None:
    g = build_prompt(TAMPER, PromptConfig(template="generic", option_style="vlmevalkit"))
    assert g.text.startswith(
        "Does this video exhibit any signs of tampering, manipulation, or inconsistency?"
    )
    assert g.text.endswith("(A) Yes\n(B) No")
    c = build_prompt(TAMPER, PromptConfig(template="cot"))
    assert c.text.startswith("Scan the video step by step:\n1. Check each segment")
    assert "Does the video show any signs of tampering, manipulation, or inconsistency?" in c.text


def test_official_framing() -> None:
    p = build_prompt(TAMPER, PromptConfig(official=True))
    assert p.text.startswith("Question: Does this video")
    assert p.text.endswith("Options:\n(A) Yes\n(B) No\nOnly give the best option.")
    assert p.assistant_prefill == OFFICIAL_PREFILL == "Best option:("
    assert p.system and p.system.startswith("Carefully watch the video")


def test_permutation_moves_the_answer_with_its_text() -> None:
    assert permute_options({"A": "Yes", "B": "No"}, "A", 1) == ({"A": "No", "B": "Yes"}, "B")
    assert permute_options({"A": "w", "B": "x", "C": "y"}, "C", 2) == (
        {"A": "x", "B": "y", "C": "w"},
        "B",
    )
    p = build_prompt(TAMPER, PromptConfig(permute=1))
    assert p.text.endswith("A. No\nB. Yes") and p.answer == "B"


def test_mmr_uses_record_prompt_and_instruction() -> None:
    s = Sample(
        id="x", benchmark="mmr", question="What colour?", options={"A": "r", "B": "g"},
        answer="B", prompt="What colour?\nA. r\nB. g\n",
    )  # fmt: skip
    p = build_prompt(s, PromptConfig(permute=1))
    assert p.text == f"What colour?\nA. r\nB. g\n{MMR_INSTRUCTION}"
    assert MMR_INSTRUCTION == "Answer with the option's letter from the given choices directly."
    assert p.answer == "B"


def test_fingerprint_changes_with_config() -> None:
    assert PromptConfig().fingerprint() != PromptConfig(template="generic").fingerprint()
    assert PromptConfig().fingerprint() == PromptConfig().fingerprint()


def test_baselines() -> None:
    req = Request(sample_id="s1", prompt="p", question="q", options={"A": "No", "B": "Yes"})
    assert load_model("constant:A").generate([req])[0].text == "A"
    assert load_model("constant:yes").generate([req])[0].text == "B"
    r1 = load_model("random:3").generate([req] * 2)
    assert r1[0].text == r1[1].text in ("A", "B")
    m = load_model("constant:A", {"media": "frames"})
    assert m.media_input == "frames"
    with pytest.raises(ValueError, match="unknown --model-arg"):
        load_model("constant:A", {"bogus": "1"})
    with pytest.raises(ValueError, match="integer seed"):
        load_model("random:x")
