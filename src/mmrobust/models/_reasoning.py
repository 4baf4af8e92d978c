"""Reasoning-model knobs shared by the backends (issue 28): detection, defaults, ``drop``.

Reasoning models (Qwen3-VL Thinking, GLM-4.1V-Thinking, Kimi-VL-Thinking,
MiMo-VL, DeepSeek-R1-style, o-series) write a long reasoning before the
answer, either inside the reply text (``<think>...</think>``) or, behind a
server's reasoning parser, in a separate field (vLLM ``reasoning_content``,
newer ``reasoning``; DeepSeek-style APIs ``reasoning_content``; Anthropic
``thinking`` blocks). A backend puts a separate field in ``Response.reasoning``;
reasoning inside the text stays in the text, where answer extraction
separates it.

**Default ``max_tokens`` rule.** A budget of 256 tokens (``openai``,
``anthropic``) or 128 (``hf``) cuts a thinking model inside its reasoning, so
when the user does not set the cap and the request will make the model think,
the default is :data:`REASONING_MAX_TOKENS` (4096) instead:

* ``chat_template_kwargs`` sets ``enable_thinking`` (or ``thinking``) to a
  true value; a false value means no thinking and keeps the small default;
* otherwise, ``hf``: the chat template used is a reasoning template (it
  mentions ``<think>``, ``enable_thinking`` or ``reasoning_content``);
  ``openai``: the served model name looks like a reasoning model's
  (:data:`REASONING_NAME`: ``think``, ``reason``, ``r1``, ``qwq``, ``o1``/``o3``/``o4``,
  ``magistral``);
* ``anthropic``: ``extra_body`` enables ``thinking`` with ``budget_tokens`` B:
  ``max(4096, B + 1024)`` (the API needs ``max_tokens > budget_tokens``).
* ``gemini``: ``thinking_budget`` B > 0 gives ``max(4096, B + 1024)``, 0 keeps 256; else a
  ``thinking_level`` or a Gemini 2.5 or later name gives 4096 (its thinking counts against the
  cap; ``models/gemini.py`` ``default_max_tokens``).

An explicit ``max_tokens`` / ``max_new_tokens`` always wins. The value used is
in the model fingerprint, so it decides resume like any setting.

**``reasoning=keep|drop``.** ``keep`` (default) stores the reasoning: the
server's field in ``Response.reasoning``, inline blocks in the raw text.
``drop`` stores none when the reply has an answer: the separate field is
discarded and closed ``<think>``/``<thinking>`` blocks at the start of the text
are removed (:func:`drop_reasoning`); ``Response.extra["reasoning_dropped_chars"]``
keeps how many characters went. A reply without an answer (cut inside its
reasoning: an unclosed block, or empty content beside the field) keeps its
reasoning, so extraction still counts it as cut, not as an empty reply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

ReasoningMode = Literal["keep", "drop"]
"""Whether a backend stores the model's reasoning (``--model-arg reasoning=keep|drop``)."""

REASONING_MAX_TOKENS = 4096
"""Default generation cap when a thinking model is detected (see the module docstring)."""

REASONING_NAME = re.compile(
    r"(?i)(think|reason|qwq|magistral|(^|[-_/.:])(r1|o1|o3|o4)([-_.:]|$)|deepseek-r)"
)
"""Served model names taken to be reasoning models (``openai:``)."""

_THINKING_KEYS = ("enable_thinking", "thinking")
_TEMPLATE_MARKS = ("<think>", "enable_thinking", "reasoning_content")
_LEADING_BLOCK = re.compile(r"\A\s*<(think|thinking)>.*?</\1>\s*", re.S | re.I)


def thinking_requested(kwargs: Mapping[str, Any] | None) -> bool | None:
    """``True``/``False`` when ``chat_template_kwargs`` turns thinking on/off, else ``None``."""
    for key in _THINKING_KEYS:
        if kwargs and key in kwargs:
            value = kwargs[key]
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
    return None


def is_reasoning_template(template: Any) -> bool:
    """Whether a chat template (text, or a dict of named templates) is a reasoning template."""
    text = str(template or "")
    return any(mark in text for mark in _TEMPLATE_MARKS)


def default_max_tokens(
    small: int, *, kwargs: Mapping[str, Any] | None = None, detected: bool = False
) -> int:
    """The generation cap to use when the user set none (the rule in the module docstring).

    Args:
        small: the backend's ordinary default (256, 128).
        kwargs: the request's ``chat_template_kwargs``.
        detected: the backend's own evidence (a reasoning template or model name).
    """
    wanted = thinking_requested(kwargs)
    if wanted is False:
        return small
    return REASONING_MAX_TOKENS if wanted or detected else small


def thinking_budget(body: Mapping[str, Any] | None) -> int | None:
    """``budget_tokens`` of an enabled Anthropic ``thinking`` setting in ``body``, else ``None``."""
    thinking = (body or {}).get("thinking")
    if isinstance(thinking, Mapping) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        return int(budget) if isinstance(budget, (int, float)) else 0
    return None


def separate_field(message: Mapping[str, Any]) -> str | None:
    """A chat message's separate reasoning (``reasoning_content``, else ``reasoning``), if any."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def drop_inline(text: str) -> tuple[str, int]:
    """``text`` without closed ``<think>``/``<thinking>`` blocks at its start, and chars removed.

    ``"<think>A is wrong.</think>\\n\\nB"`` -> ``("B", 28)``; an unclosed block is kept.
    """
    removed = 0
    while match := _LEADING_BLOCK.match(text):
        removed += match.end()
        text = text[match.end() :]
    return text, removed


def drop_reasoning(text: str, reasoning: str | None) -> tuple[str, str | None, int]:
    """``reasoning=drop``: ``(text, reasoning, chars removed)`` with the reasoning gone when an
    answer remains; a reply that would be left without an answer is returned unchanged."""
    answer, removed = drop_inline(text)
    if not answer.strip():
        return text, reasoning, 0
    return answer, None, removed + len(reasoning or "")


__all__ = [
    "REASONING_MAX_TOKENS",
    "REASONING_NAME",
    "ReasoningMode",
    "default_max_tokens",
    "drop_inline",
    "drop_reasoning",
    "is_reasoning_template",
    "separate_field",
    "thinking_budget",
    "thinking_requested",
]
