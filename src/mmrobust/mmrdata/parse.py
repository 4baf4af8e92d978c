"""Parsing stage-2 replies into typed question pairs (pure functions).

A reply should be JSON ``{"pairs": [{"category", "positive", "negative"}]}``
(a bare list of pairs is accepted too), optionally inside a Markdown
```` ```json ```` fence or surrounded by prose. A reply with no parseable
JSON raises :class:`GenerationParseError` (the image gets status
``parse_fail``); a pair that does not match the schema is dropped with a
one-line reason (``malformed: ...``) and the others are kept.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Letter = Literal["A", "B", "C", "D"]


class GenerationParseError(ValueError):
    """The reply holds no JSON object or list of pairs."""


class GeneratedQA(BaseModel):
    """One generated multiple-choice question.

    Attributes:
        question: the question text.
        options: exactly four option texts, shown as A-D in this order.
        answer: letter of the correct option.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    question: str = Field(min_length=1)
    options: tuple[str, str, str, str]
    answer: Letter

    @field_validator("answer", mode="before")
    @classmethod
    def _letter(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().strip("().").upper()
        return value

    @property
    def answer_text(self) -> str:
        """Text of the correct option."""
        return self.options["ABCD".index(self.answer)]

    def mmr_question(self) -> str:
        """The question in MMR's single-string format: stem, then ``"A. ..."`` lines."""
        lines = [self.question.strip()]
        lines += [
            f"{letter}. {text.strip()}" for letter, text in zip("ABCD", self.options, strict=True)
        ]
        return "\n".join(lines)


class GeneratedPair(BaseModel):
    """A positive question and its leading (false-premise) counterpart about one image."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    category: str = "other"
    positive: GeneratedQA
    negative: GeneratedQA


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _json_payload(text: str) -> Any:
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    candidates.append(text)
    for candidate in candidates:
        candidate = candidate.strip()
        try:
            return json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            pass
        for opener, closer in (("{", "}"), ("[", "]")):
            start, end = candidate.find(opener), candidate.rfind(closer)
            if 0 <= start < end:
                try:
                    return json.loads(candidate[start : end + 1])
                except (json.JSONDecodeError, RecursionError):
                    continue
    raise GenerationParseError("no JSON object found in the generation reply")


def parse_generation(text: str) -> tuple[list[GeneratedPair], list[str]]:
    """Parse a stage-2 reply.

    Returns:
        ``(pairs, problems)``: the schema-valid pairs in reply order, and one
        ``"malformed: pair N: ..."`` line per dropped pair.

    Raises:
        GenerationParseError: no JSON, or JSON without a list of pairs.
    """
    payload = _json_payload(text)
    items = payload.get("pairs") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise GenerationParseError("generation reply JSON has no 'pairs' list")
    pairs: list[GeneratedPair] = []
    problems: list[str] = []
    for index, item in enumerate(items):
        try:
            pairs.append(GeneratedPair.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "pair"
            problems.append(f"malformed: pair {index}: {where}: {first['msg']}")
    return pairs, problems


__all__ = ["GeneratedPair", "GeneratedQA", "GenerationParseError", "Letter", "parse_generation"]
