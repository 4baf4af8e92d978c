"""A reply written as a JSON object: the answer is its answer key, never its reasoning (pure).

Models asked for structured output, or that choose it, reply
``{"reasoning": "so option A is plausible, but no.", "answer": "B"}``, bare or in a
Markdown fence (```` ```json ... ``` ````, the closing fence optional, text around it
allowed). Reading such a reply as prose picks up the letters of its reasoning (``"so option
A"`` -> A). :func:`json_reply` parses it with :mod:`json` (a fenced block that is a Python
literal, single quotes, is read with :func:`ast.literal_eval`) and returns what decides:

* an answer key (:data:`ANSWER_KEYS`, matched case-insensitively, spaces and hyphens as
  ``_``): its value alone, as text for the extraction policy to read (``"B"``, ``"(B) No"``,
  ``"Yes"``); ``true`` / ``false`` is a tamper verdict; a one-item list is its item;
* else a tamper-verdict key (:data:`VERDICT_KEYS`: ``{"tampered": false}``,
  ``{"is_tampered": "yes"}``, ``{"tampering_detected": true}``): ``true`` / ``"yes"`` is
  tampered, ``false`` / ``"no"`` not tampered;
* else, for a reply that is JSON (whole or fenced), the object's other values, reasoning
  keys (:data:`REASONING_KEYS`) left out, as text (``{"explanation": "...", "pick": "B"}``
  -> ``"B"``; nothing left: no answer). An object inside prose without an answer key is
  part of the prose (``'The answer is B. {"note": "A"} ...'`` is read as text).

With several objects the last one that decides wins (an example object followed by the
real one). Nested objects are searched for the keys too (``{"response": {"answer": "B"}}``).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

ANSWER_KEYS: tuple[str, ...] = (
    "answer", "final_answer", "choice", "option", "final_choice", "selected_option",
    "answer_option", "correct_option", "best_option", "answer_letter", "option_letter",
    "letter", "selection", "prediction", "verdict", "label", "result", "response", "output",
)  # fmt: skip
"""Keys whose value is the answer, most specific first (the first present decides)."""

VERDICT_KEYS: frozenset[str] = frozenset(
    {"tampered", "is_tampered", "tampering", "tampering_detected", "tamper_detected",
     "has_tampering", "has_been_tampered", "was_tampered", "manipulated", "is_manipulated",
     "manipulation_detected", "edited", "is_edited", "altered", "is_altered", "modified",
     "is_modified", "forged", "is_forged", "fake", "is_fake"}
)  # fmt: skip
"""Keys whose yes/no value says whether the video is tampered."""

REASONING_KEYS: frozenset[str] = frozenset(
    {"reasoning", "reason", "reasons", "explanation", "rationale", "analysis", "thinking",
     "thought", "thoughts", "justification", "evidence", "observations", "observation",
     "notes", "description", "confidence", "steps"}
)  # fmt: skip
"""Keys never read as the answer."""

_TRUE = frozenset({"true", "yes", "y", "1"})
_FALSE = frozenset({"false", "no", "n", "0"})
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|python)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_OBJECT_START = re.compile(r"\{\s*\"")
_MAX_STARTS = 50
"""Bare objects tried per reply (each try is one ``raw_decode``)."""


@dataclass(frozen=True)
class JsonReply:
    """What a JSON reply answers.

    Attributes:
        text: the answer as text for the extraction policy (``None`` with a verdict).
        tampered: a tamper verdict (``True`` tampered, ``False`` not), else ``None``.
        key: the key that decided (``"answer"``, ``"tampered"``), ``""`` for the values.
        standalone: the reply is JSON (whole or fenced); ``False`` for an object inside
            prose, whose answer counts only when it names an option (else the prose is read).
    """

    text: str | None
    tampered: bool | None
    key: str
    standalone: bool = True


def _norm(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip().lower())


def _verdict(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower().strip(".!") in _TRUE | _FALSE:
        return value.strip().lower().strip(".!") in _TRUE
    return None


def _find(obj: dict[str, Any], keys: frozenset[str] | tuple[str, ...]) -> tuple[str, Any] | None:
    """The first of ``keys`` in ``obj`` (by ``keys`` order), then in its nested objects."""
    own = {_norm(k): v for k, v in obj.items()}
    for key in keys:
        if key in own and own[key] is not None and not isinstance(own[key], dict):
            return key, own[key]
    for v in obj.values():
        if isinstance(v, dict) and (found := _find(v, keys)) is not None:
            return found
    return None


def _decide(obj: dict[str, Any], standalone: bool) -> JsonReply | None:
    """The decision of one object (module docstring), ``None`` when it holds nothing; the
    other values count only when the reply is JSON (``standalone``), not inside prose."""
    found = _find(obj, ANSWER_KEYS)
    if found is not None:
        key, value = found
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if isinstance(value, bool):
            return JsonReply(None, value, key)
        if isinstance(value, (str, int, float)):
            return JsonReply(str(value), None, key)
    found = _find(obj, tuple(sorted(VERDICT_KEYS)))
    if found is not None and (verdict := _verdict(found[1])) is not None:
        return JsonReply(None, verdict, found[0])
    if not standalone:
        return None
    rest = [
        str(v)
        for k, v in obj.items()
        if _norm(k) not in REASONING_KEYS and isinstance(v, (str, int, float)) and str(v).strip()
    ]
    return JsonReply("\n".join(rest), None, "") if rest else None


def _load(block: str) -> Any:
    try:
        return json.loads(block)
    except ValueError:
        pass
    try:
        return ast.literal_eval(block)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _objects(text: str) -> tuple[list[dict[str, Any]], bool]:
    """The JSON objects of a reply, in order: fenced blocks, else the whole reply (then
    ``True``: the reply *is* JSON), else objects inside prose (``False``)."""
    fenced = [o for m in _FENCE.finditer(text) if isinstance(o := _load(m.group(1).strip()), dict)]
    if fenced:
        return fenced, True
    whole = _load(text.strip()) if text.lstrip().startswith("{") else None
    if isinstance(whole, dict):
        return [whole], True
    found: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    pos = 0
    for _ in range(_MAX_STARTS):
        m = _OBJECT_START.search(text, pos)
        if m is None:
            break
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except ValueError:
            pos = m.start() + 1
            continue
        if isinstance(obj, dict):
            found.append(obj)
        pos = end
    return found, False


def json_reply(text: str) -> JsonReply | None:
    """What a reply written as a JSON object answers (module docstring), or ``None`` when
    it holds no JSON object (the reply is read as prose then).

    Args:
        text: the answer part of a reply (after the reasoning split), any length.

    Returns:
        the last object's decision; for a reply that is JSON (whole or fenced) holding only
        reasoning, ``JsonReply("", None, "")`` (no answer: ``parse_fail``); ``None`` when an
        object inside prose decides nothing.
    """
    if "{" not in text:
        return None
    objects, standalone = _objects(text)
    decided = [d for o in objects if (d := _decide(o, standalone)) is not None]
    if decided:
        last = decided[-1]
        return last if standalone else JsonReply(last.text, last.tampered, last.key, False)
    return JsonReply("", None, "") if standalone else None


__all__ = ["ANSWER_KEYS", "REASONING_KEYS", "VERDICT_KEYS", "JsonReply", "json_reply"]
