"""Prompt templates and option formatting.

Tamper templates are the three of MVTamperBench appendix A.2.2 (the
question strings are protocol: results are only comparable when they
match). ``mmr`` uses the record's own question with options plus MMR's
instruction. ``official`` reproduces how the reference code asks, at a
named version (:mod:`mmrobust.official`): for MVTamperBench VLMEvalKit's
system text of that version, the user turn ``Question: ...\\nOptions:\\n(A)
Yes\\n(B) No``, then the frames, then ``\\nOnly give the best option.``, and
the assistant prefill ``"Best option:("``; for MMR the record's question
text exactly as in the file plus ``"\\n"`` and MMR's instruction.

Option order can be circularly shifted (``permute``) to check position
bias; the ground-truth letter moves with its text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Literal, cast

from mmrobust.families import get_family
from mmrobust.official import tamper_reference
from mmrobust.schema import TAMPER_QUESTION, Sample

TemplateName = Literal["structured", "generic", "cot", "mmr", "plain"]
OptionStyle = Literal["paper", "vlmevalkit"]
TEMPLATES: tuple[str, ...] = ("structured", "generic", "cot", "mmr", "plain")

STRUCTURED_QUESTION = TAMPER_QUESTION
"""MVTamperBench section 4.1 / appendix A.2.2, the benchmark prompt."""

GENERIC_QUESTION = "Does this video exhibit any signs of tampering, manipulation, or inconsistency?"
"""MVTamperBench appendix A.2.2, generic prompt."""

COT_QUESTION = (
    "Scan the video step by step:\n"
    "1. Check each segment for visual glitches, repeated or missing content, or rotations.\n"
    "2. Check if any frame seems inconsistent with the rest of the video.\n"
    "3. Decide if any part looks manipulated or tampered.\n"
    "Does the video show any signs of tampering, manipulation, or inconsistency?"
)
"""MVTamperBench appendix A.2.2, chain-of-thought prompt."""

TAMPER_QUESTIONS: Mapping[str, str] = {
    "structured": STRUCTURED_QUESTION,
    "generic": GENERIC_QUESTION,
    "cot": COT_QUESTION,
}

MMR_INSTRUCTION = "Answer with the option's letter from the given choices directly."
"""The instruction MMR's evaluation appends to each question (arXiv:2406.10638)."""

ANSWER_INSTRUCTION = MMR_INSTRUCTION
"""The instruction of the ``plain`` template: MMR's wording, the usual one for lettered options."""

OFFICIAL_SYSTEM = (
    "Carefully watch the video and pay attention to the cause and sequence of events, "
    "the detail and movement of objects, and the action and pose of persons. "
    "Based on your observations, select the best option that accurately addresses the question."
)
"""The system message of VLMEvalKit's MVBench-family prompts (without its final newline).

Official mode sends the text of the chosen reference version
(:attr:`mmrobust.official.TamperReference.system`), which differs between versions."""

OFFICIAL_SUFFIX = "\nOnly give the best option."
OFFICIAL_PREFILL = "Best option:("


@dataclass(frozen=True)
class PromptConfig:
    """How to turn a sample into prompt text.

    Attributes:
        template: ``structured`` (default for tamper), ``generic``, ``cot``,
            ``mmr`` (default for MMR samples), ``plain`` (question + options).
            ``None`` picks by ``Sample.benchmark``.
        option_style: ``paper`` (``A. Yes``) or ``vlmevalkit`` (``(A) Yes``).
        permute: circular shift of the option order (0 = as given).
        official: the reference's prompt: VLMEvalKit's framing for tamper samples
            (system text, question / frames / instruction, prefill), the raw
            record text for MMR samples.
        reference: VLMEvalKit version whose system text official mode sends
            (``None``: the integration commit).
    """

    template: TemplateName | None = None
    option_style: OptionStyle = "paper"
    permute: int = 0
    official: bool = False
    reference: str | None = None

    def fingerprint(self) -> str:
        """Short hash of the configuration and template texts (a store key part).

        Official configurations also hash the reference version's system text
        and the message layout; other configurations hash as before the
        reference option existed, so their stored runs resume.
        """
        config = asdict(self)
        config.pop("reference")
        payload: dict[str, object] = {
            **config,
            "texts": [STRUCTURED_QUESTION, GENERIC_QUESTION, COT_QUESTION, MMR_INSTRUCTION],
            "official_texts": [OFFICIAL_SYSTEM, OFFICIAL_SUFFIX, OFFICIAL_PREFILL],
        }
        if self.official:
            ref = tamper_reference(self.reference)
            payload["reference"] = [ref.name, ref.system, "question|media|instruction", "mmr-raw"]
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt.

    Attributes:
        text: the full user message.
        question: the question stem shown.
        options: letter -> text in display order (after permutation).
        answer: the ground-truth letter in display order.
        system: system message or ``None``.
        assistant_prefill: start of the assistant turn or ``None``.
        template: the template actually used.
        media_offset: where the media go inside ``text`` (a character offset:
            ``text[:k]``, frames, ``text[k:]``), or ``None`` for the backend's
            default place. Official tamper prompts set it after the question.
    """

    text: str
    question: str
    options: dict[str, str]
    answer: str
    system: str | None
    assistant_prefill: str | None
    template: str
    media_offset: int | None = None


def permute_options(
    options: Mapping[str, str], answer: str, shift: int
) -> tuple[dict[str, str], str]:
    """Circularly shift option texts by ``shift`` positions; letters keep their order.

    ``{"A": "Yes", "B": "No"}`` shifted by 1 is ``{"A": "No", "B": "Yes"}``
    and answer ``"A"`` becomes ``"B"``.
    """
    letters = list(options)
    texts = [options[k] for k in letters]
    n = len(texts)
    if n == 0 or shift % n == 0:
        return dict(options), answer
    s = shift % n
    shifted = texts[-s:] + texts[:-s]
    new = dict(zip(letters, shifted, strict=True))
    new_answer = letters[(letters.index(answer) + s) % n]
    return new, new_answer


def format_options(options: Mapping[str, str], style: OptionStyle = "paper") -> str:
    """One option per line: ``A. Yes`` (paper) or ``(A) Yes`` (VLMEvalKit)."""
    if style == "vlmevalkit":
        return "\n".join(f"({k}) {v}" for k, v in options.items())
    if style == "paper":
        return "\n".join(f"{k}. {v}" for k, v in options.items())
    raise ValueError(f"unknown option style {style!r}; expected 'paper' or 'vlmevalkit'")


def default_template(sample: Sample) -> TemplateName:
    """The template of the sample's family (``BenchmarkFamily.default_template``): ``mmr`` for
    MMR samples, ``structured`` for tamper samples, ``plain`` otherwise.

    Raises:
        ValueError: no family is registered as ``sample.benchmark``.
    """
    template = get_family(sample.benchmark).default_template
    if template not in TEMPLATES:
        raise ValueError(f"family {sample.benchmark!r}: unknown default template {template!r}")
    return cast(TemplateName, template)


def build_prompt(sample: Sample, config: PromptConfig | None = None) -> Prompt:
    """Render the prompt of one sample.

    Tamper templates replace the sample's question with the template's
    question (that is what the prompt ablation of appendix A.2.2 varies);
    ``mmr`` sends ``Sample.prompt`` (the record's question with its options)
    followed by a newline and :data:`MMR_INSTRUCTION`; ``plain`` sends the
    sample's question, its options and :data:`ANSWER_INSTRUCTION`. Tamper
    templates send ``<question>\nOptions:\nA. Yes\nB. No`` as in section 4.1,
    without an extra instruction.

    Samples that carry their own ``prompt`` are never permuted (their
    options are inside the text).

    ``official``: tamper samples get VLMEvalKit's prompt at ``config.reference``
    (see the module docstring; the frames go between the question block and
    the instruction, ``media_offset``); MMR samples with their raw question text
    (``meta["question_raw"]``, the file's string untouched, as the MMR scripts
    send it) get ``raw + "\\n" + MMR_INSTRUCTION``.

    Raises:
        ValueError: a tamper template for a sample without options, or an unknown template.
        UnknownNameError: unknown ``config.reference``.
    """
    cfg = config or PromptConfig()
    template = cfg.template or default_template(sample)
    if template not in TEMPLATES:
        raise ValueError(f"unknown prompt template {template!r}; expected one of {TEMPLATES}")
    raw = sample.meta.get("question_raw")
    if cfg.official and template == "mmr" and isinstance(raw, str):
        text = f"{raw}\n{MMR_INSTRUCTION}"
        return Prompt(
            text, sample.question, dict(sample.options), sample.answer, None, None, template
        )
    if sample.prompt is not None and template in ("mmr", "plain"):
        text = sample.prompt.rstrip("\n")
        if template == "mmr":
            text = f"{text}\n{MMR_INSTRUCTION}"
        return Prompt(
            text, sample.question, dict(sample.options), sample.answer, None, None, template
        )

    options, answer = permute_options(sample.options, sample.answer, cfg.permute)
    question = TAMPER_QUESTIONS.get(template, sample.question)
    if cfg.official and get_family(sample.benchmark).official_prompt:
        # qa_template: "Question: q\n", "Options:\n", "(X) text\n" per option, then rstrip()
        block = f"Question: {question}\nOptions:\n"
        block += "".join(f"({k}) {v}\n" for k, v in options.items())
        block = block.rstrip()
        system = tamper_reference(cfg.reference).system
        return Prompt(
            block + OFFICIAL_SUFFIX,
            question,
            options,
            answer,
            system,
            OFFICIAL_PREFILL,
            template,
            media_offset=len(block),
        )
    body = f"{question}\nOptions:\n{format_options(options, cfg.option_style)}"
    if template not in TAMPER_QUESTIONS:  # the paper's tamper prompts carry no instruction
        body = f"{body}\n{ANSWER_INSTRUCTION}"
    return Prompt(body, question, options, answer, None, None, template)


def prompt_record(prompt: Prompt) -> str:
    """The prompt as one text, as stored with each row: ``[system] ...`` on its own line when
    there is a system message, the user turn, then ``[assistant prefill] ...`` when there is one."""
    parts = [f"[system] {prompt.system}"] if prompt.system else []
    parts.append(prompt.text)
    if prompt.assistant_prefill:
        parts.append(f"[assistant prefill] {prompt.assistant_prefill}")
    return "\n".join(parts)


__all__ = [
    "COT_QUESTION",
    "GENERIC_QUESTION",
    "MMR_INSTRUCTION",
    "OFFICIAL_PREFILL",
    "OFFICIAL_SYSTEM",
    "STRUCTURED_QUESTION",
    "TEMPLATES",
    "OptionStyle",
    "Prompt",
    "PromptConfig",
    "TemplateName",
    "build_prompt",
    "default_template",
    "format_options",
    "permute_options",
    "prompt_record",
]
