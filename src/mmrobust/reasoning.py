"""Reasoning blocks: separate a thinking model's reasoning from its answer (pure functions).

Reasoning VLMs (Qwen3-VL Thinking, GLM-4.1V-Thinking, Kimi-VL-Thinking, MiMo-VL, the
o-series and Claude/Gemini with thinking behind OpenAI-compatible proxies) write long
reasoning before the answer. The answer is what follows the reasoning; a reply cut inside
its reasoning has no answer. :func:`split_reasoning` recognises six forms
(:data:`ReasoningForm`), tags matched case-insensitively (``<think>``, ``<thinking>``,
``<reasoning>``, ``<thought>``, Kimi-VL's ``◁think▷ ... ◁/think▷``):

``closed``
    ``"<think>\\nOption A is wrong. So C.\\n</think>\\n\\nC"``: answer ``"C"``.
``unopened``
    only the closing tag, the chat template having opened the block inside the prompt
    (Qwen3 / DeepSeek-R1 templates): ``"Option A is wrong. So C.\\n</think>\\n\\nC"``:
    answer ``"C"``.
``cut``
    an opening tag never closed (the output hit ``max_tokens`` while thinking; also called
    an *unclosed* block): ``"<think>\\nOption A is wrong. So"``: no answer. So is a reply
    whose answer part is empty while a separate reasoning field holds text (vLLM's
    reasoning parsers return ``content: null`` then). So is a ``harmony`` reply with no
    ``final`` channel.
``harmony``
    gpt-oss's harmony channels (OpenAI's harmony response format): ``"<|channel|>analysis
    <|message|>Option A? No.<|end|><|start|>assistant<|channel|>final<|message|>**B**"``:
    the ``analysis`` (and ``commentary``) channels are the reasoning, the last ``final``
    channel the answer (``"**B**"``; a ``<|return|>`` / ``<|end|>`` after it is dropped).
    The same reply decoded without its special tokens (``"analysisOption A? No.
    assistantfinal**B**"``: ``analysis`` glued to a capital letter at the start, then
    ``assistantfinal``) is read the same way; without ``assistantfinal`` it was cut.
``field``
    the server returned the reasoning in its own field (``reasoning_content`` of vLLM's
    reasoning parsers and DeepSeek-style APIs; ``Response.reasoning``) and the reply text
    is the answer.
``none``
    no reasoning: the whole reply is the answer.

With several blocks the answer is what follows the last closing tag. GLM-4.1V's
``<answer>...</answer>`` and ``<|begin_of_box|>...<|end_of_box|>`` markers are removed
from the answer part (their content is the answer).

Official mode never uses this split: the reference scores the reply text as the model
wrote it (``docs/official.md``). It is stored for every row (``store.py`` columns
``reasoning``, ``reasoning_chars``, ``reasoning_form``) and counted per run
(:func:`reasoning_summary`, ``metrics.json`` ``reasoning``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

ReasoningForm = Literal["none", "closed", "unopened", "cut", "field", "harmony"]
"""How a reply carried its reasoning (module docstring)."""

_TAGS = r"think|thinking|reasoning|thought"
_OPEN = re.compile(rf"<\s*(?:{_TAGS})\s*>|◁think▷", re.IGNORECASE)
_CLOSE = re.compile(rf"<\s*/\s*(?:{_TAGS})\s*>|◁/think▷", re.IGNORECASE)
_ANSWER_MARKERS = re.compile(
    r"<\s*/?\s*answer\s*>|<\|begin_of_box\|>|<\|end_of_box\|>", re.IGNORECASE
)

_HARMONY_HEADER = re.compile(
    r"<\|channel\|>\s*([A-Za-z]+)[^<]*?(?:<\|constrain\|>[^<]*?)?<\|message\|>"
)
_HARMONY_STOP = re.compile(r"<\|(?:end|return|call|start|channel)\|>")
_HARMONY_BARE = re.compile(r"\A\s*analysis(?=[A-Z])")

DEFAULT_THINKING_MAX_TOKENS = 16384
"""Suggested ``max_tokens`` for a thinking model when no token count is known."""


@dataclass(frozen=True)
class ReasoningSplit:
    """A reply split into its reasoning and its answer.

    Attributes:
        answer: the text extraction decides on ("" when the reply was cut inside its
            reasoning).
        reasoning: the reasoning text (tags removed, stripped), or ``None`` when there is none.
        form: which form the reply had (:data:`ReasoningForm`).
    """

    answer: str
    reasoning: str | None
    form: ReasoningForm

    @property
    def cut(self) -> bool:
        """True when the reply ended inside its reasoning (no answer after it)."""
        return self.form == "cut"

    @property
    def chars(self) -> int | None:
        """Length of the reasoning in characters (``None`` without reasoning)."""
        return None if self.reasoning is None else len(self.reasoning)


def _join(*parts: str | None) -> str | None:
    kept = [p.strip() for p in parts if p is not None and p.strip()]
    return "\n\n".join(kept) if kept else None


def _untag(text: str) -> str:
    return _CLOSE.sub("\n", _OPEN.sub("\n", text))


def _harmony(text: str, field: str | None) -> ReasoningSplit | None:
    """The ``harmony`` form (module docstring), or ``None`` when ``text`` has no channels."""
    bare = _HARMONY_BARE.match(text)
    if bare is not None:  # decoded without special tokens
        at = text.rfind("assistantfinal")
        if at < 0:  # cut inside analysis
            return ReasoningSplit("", _join(field, text[bare.end() :]), "cut")
        answer = _ANSWER_MARKERS.sub("", text[at + len("assistantfinal") :])
        return ReasoningSplit(answer, _join(field, text[bare.end() : at]), "harmony")
    headers = list(_HARMONY_HEADER.finditer(text))
    if not headers:  # cut inside the first header, or no harmony at all
        return ReasoningSplit("", field, "cut") if "<|channel|>" in text else None
    thoughts: list[str] = []
    final: str | None = None
    for h in headers:
        stop = _HARMONY_STOP.search(text, h.end())
        body = text[h.end() : stop.start() if stop else len(text)]
        if h.group(1).lower() == "final":
            final = body
        else:
            thoughts.append(body)
    reasoning = _join(field, *thoughts)
    if final is None:  # cut inside analysis: the output ended before the final channel
        return ReasoningSplit("", reasoning, "cut")
    return ReasoningSplit(_ANSWER_MARKERS.sub("", final), reasoning, "harmony")


def split_reasoning(text: str, reasoning: str | None = None) -> ReasoningSplit:
    """Separate the reasoning of a reply from its answer (forms in the module docstring).

    Args:
        text: the reply as the backend returned it (``Response.text``).
        reasoning: a separate reasoning field from the server (``Response.reasoning``), or
            ``None``.

    Returns:
        the split; ``answer`` is the part extraction reads, ``""`` for a ``cut`` reply.
    """
    text = text or ""
    field = reasoning if reasoning is not None and reasoning.strip() else None
    harmony = _harmony(text, field)
    if harmony is not None:
        return harmony
    closes = list(_CLOSE.finditer(text))
    if closes:
        last = closes[-1]
        head, tail = text[: last.start()], text[last.end() :]
        reopened = list(_OPEN.finditer(tail))
        if reopened:  # a new block after the last closing tag that never closed
            return ReasoningSplit("", _join(field, _untag(head), tail[reopened[-1].end() :]), "cut")
        form: ReasoningForm = "closed" if _OPEN.search(head) else "unopened"
        return ReasoningSplit(_ANSWER_MARKERS.sub("", tail), _join(field, _untag(head)), form)
    opened = _OPEN.search(text)
    if opened:  # opened, never closed: only text before the block can be an answer
        before = _ANSWER_MARKERS.sub("", text[: opened.start()])
        return ReasoningSplit(before, _join(field, text[opened.end() :]), "cut")
    if field is not None:
        answer = _ANSWER_MARKERS.sub("", text)
        return ReasoningSplit(answer, _join(field), "field" if answer.strip() else "cut")
    return ReasoningSplit(_ANSWER_MARKERS.sub("", text), None, "none")


def field_reasoning(raw_text: str, reasoning: str | None, form: str | None) -> str | None:
    """The stored reasoning that came from the server's separate field (to read a stored
    row again, ``rescore``), or ``None`` when the reasoning is a block inside ``raw_text``."""
    if reasoning is None or form not in ("field", "cut"):
        return None
    return reasoning if split_reasoning(raw_text).form == "none" else None


def reasoning_columns(split: ReasoningSplit) -> dict[str, Any]:
    """The stored row's reasoning fields (``StoredRow.reasoning``, ``reasoning_chars``,
    ``reasoning_form``) for a split reply."""
    return {
        "reasoning": split.reasoning,
        "reasoning_chars": split.chars,
        "reasoning_form": split.form,
    }


def suggested_max_tokens(completion_tokens: Iterable[int | None]) -> int:
    """A ``max_tokens`` for a thinking model whose replies were cut at the given lengths:
    four times the longest cut reply's tokens, rounded up to a multiple of 1,024, at least
    :data:`DEFAULT_THINKING_MAX_TOKENS` (16,384). Qwen3-VL Thinking's model card suggests
    up to 32,768 (40,960 for hard problems)."""
    known = [n for n in completion_tokens if isinstance(n, int) and n > 0]
    if not known:
        return DEFAULT_THINKING_MAX_TOKENS
    return max(DEFAULT_THINKING_MAX_TOKENS, 1024 * math.ceil(4 * max(known) / 1024))


def reasoning_summary(
    rows: Iterable[tuple[str | None, int | None, int | None]],
) -> dict[str, Any] | None:
    """The ``metrics.json`` block ``reasoning`` over a run's rows, or ``None`` when no row
    had reasoning.

    Args:
        rows: ``(reasoning_form, reasoning_chars, completion_tokens)`` per stored row
            (``None`` form: a row stored before these columns existed).

    Returns:
        ``{"rows_with_reasoning", "cut_in_reasoning", "mean_reasoning_chars",
        "max_reasoning_chars", "hint"}``; ``hint`` is ``None`` unless a reply was cut, else
        ``"N replies were cut inside their reasoning: max_tokens too small for a thinking
        model; try max_tokens=M"`` (:func:`suggested_max_tokens`).
    """
    forms: list[str] = []
    chars: list[int] = []
    cut_tokens: list[int | None] = []
    for form, n_chars, tokens in rows:
        if form is None or form == "none":
            continue
        forms.append(form)
        if n_chars is not None:
            chars.append(n_chars)
        if form == "cut":
            cut_tokens.append(tokens)
    if not forms:
        return None
    cut = len(cut_tokens)
    hint = None
    if cut:
        hint = (
            f"{cut} of {len(forms)} replies were cut inside their reasoning: max_tokens too "
            f"small for a thinking model; try max_tokens={suggested_max_tokens(cut_tokens)}"
        )
    return {
        "rows_with_reasoning": len(forms),
        "cut_in_reasoning": cut,
        "mean_reasoning_chars": round(sum(chars) / len(chars), 1) if chars else None,
        "max_reasoning_chars": max(chars) if chars else None,
        "hint": hint,
    }


__all__ = [
    "DEFAULT_THINKING_MAX_TOKENS",
    "ReasoningForm",
    "ReasoningSplit",
    "field_reasoning",
    "reasoning_columns",
    "reasoning_summary",
    "split_reasoning",
    "suggested_max_tokens",
]
