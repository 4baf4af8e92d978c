"""Splitting an MMR ``question`` string into its stem and four options (arXiv:2406.10638, section 3).

The released file's questions are irregular (options on one line, letters
without periods, options out of order, stray spaces, trailing newlines);
:func:`parse_question` tolerates them and refuses what is not a four-option
question. Pure string functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

LETTERS: tuple[str, ...] = ("A", "B", "C", "D")
"""The option letters of an MMR question."""


@dataclass(frozen=True)
class ParsedQuestion:
    """A question string split into its parts.

    Attributes:
        stem: the question without options, whitespace-normalised.
        options: letter -> option text, in the order the options appear.
        prompt: ``stem`` and one ``"X. text"`` line per option, in that order.
    """

    stem: str
    options: dict[str, str]
    prompt: str


_WS = re.compile(r"\s+")
# An option marker at the start of a line: "A.", "A)", "A:", "A " (letter alone on the line too).
_LINE_MARKER = re.compile(r"(?m)^[ \t]*([A-D])(?:[.)：:]|(?=\s)|$)[ \t]*")
# An inline option marker preceded by whitespace/start; strict form needs "." or ")".
_INLINE_STRICT = re.compile(r"(?:(?<=\s)|^)([A-D])[.)][ \t]*")
_INLINE_LOOSE = re.compile(r"(?:(?<=\s)|^)([A-D])(?:[.):]|(?=\s))[ \t]*")
# Option-like markers of any letter (letter + punctuation + text) at a line start / inline.
_ANY_LINE_OPTION = re.compile(r"(?m)^[ \t]*([A-Z])[.)：:][ \t]*\S")
_ANY_INLINE_OPTION = re.compile(r"(?:(?<=\s)|^)([A-Z])[.)][ \t]+\S")


def clean_space(text: str) -> str:
    """``text`` with every run of whitespace made one space, stripped."""
    return _WS.sub(" ", text).strip()


def _build(text: str, marks: Sequence[tuple[str, int, int]]) -> ParsedQuestion | None:
    """Cut ``text`` at ``marks`` (letter, marker start, text start); None if a part is empty."""
    stem = clean_space(text[: marks[0][1]])
    options: dict[str, str] = {}
    for i, (letter, _start, body) in enumerate(marks):
        end = marks[i + 1][1] if i + 1 < len(marks) else len(text)
        options[letter] = clean_space(text[body:end])
    if not stem or any(not v for v in options.values()):
        return None
    prompt = "\n".join([stem, *(f"{k}. {v}" for k, v in options.items())])
    return ParsedQuestion(stem=stem, options=options, prompt=prompt)


def _inline_chain(text: str, pattern: re.Pattern[str]) -> list[tuple[str, int, int]] | None:
    """Earliest A<B<C<D chain of inline markers, or None."""
    found = [(m.group(1), m.start(1), m.end()) for m in pattern.finditer(text)]
    for a_index, first in enumerate(found):
        if first[0] != "A":
            continue
        chain = [first]
        for mark in found[a_index + 1 :]:
            if mark[0] == LETTERS[len(chain)]:
                chain.append(mark)
                if len(chain) == len(LETTERS):
                    return chain
    return None


def parse_question(text: str) -> ParsedQuestion:
    """Split an MMR ``question`` string into stem and options A-D.

    Rules, tried in order:

    1. one marker per line (``"A. ..."``, ``"A)"``, ``"A ..."``, ``"A.text"``)
       with each of A-D exactly once, in any order (the real file has
       records with options listed A, D, C, B);
    2. inline markers ``"A. ... B. ... C. ... D. ..."`` in alphabetical order;
    3. the same with bare letters (``"A. Hamlet B The Merchant ..."``).

    Args:
        text: the record's ``question`` string.

    Returns:
        the parsed question; ``options`` keeps the order of appearance.

    A question with more than four options (a line ``E. ...``) or with an option
    letter given twice (two ``D.`` lines) is not a 4-option question: it is
    refused, not merged into option D's text.

    Raises:
        ValueError: four options A-D could not be found, or there are more than four.
    """
    _check_four_options(text)
    line_marks = [(m.group(1), m.start(1), m.end()) for m in _LINE_MARKER.finditer(text)]
    letters = [m[0] for m in line_marks]
    if sorted(letters) == list(LETTERS) and line_marks[0][1] > 0:
        parsed = _build(text, line_marks)
        if parsed is not None:
            return parsed
    for pattern in (_INLINE_STRICT, _INLINE_LOOSE):
        chain = _inline_chain(text, pattern)
        if chain is not None:
            parsed = _build(text, chain)
            if parsed is not None:
                return parsed
    raise ValueError(f"could not find four options A-D in question {clean_space(text)[:80]!r}")


def _check_four_options(text: str) -> None:
    """Raise ``ValueError`` for a fifth option or a repeated option letter.

    Line markers (``"E. text"`` at a line start) after the first ``A.`` line are
    counted; an inline ``E.``/``F.`` marker after the last ``D.`` counts too.
    """
    first_a = next((m for m in _ANY_LINE_OPTION.finditer(text) if m.group(1) == "A"), None)
    if first_a is not None:
        letters = [m.group(1) for m in _ANY_LINE_OPTION.finditer(text, first_a.start())]
        extra = sorted({x for x in letters if x not in LETTERS and x <= "H"})
        twice = sorted({x for x in letters if x in LETTERS and letters.count(x) > 1})
        if extra:
            raise ValueError(f"not a 4-option question: option {', '.join(extra)} after A-D")
        if twice:
            raise ValueError(f"not a 4-option question: option {', '.join(twice)} given twice")
    d_marks = [m for m in _ANY_INLINE_OPTION.finditer(text) if m.group(1) == "D"]
    if d_marks:
        tail = text[d_marks[0].end() :]
        later = [m.group(1) for m in _ANY_INLINE_OPTION.finditer(tail)]
        if "E" in later:
            raise ValueError("not a 4-option question: option E after A-D")
        if "D" in later:
            raise ValueError("not a 4-option question: option D given twice")


__all__ = ["LETTERS", "ParsedQuestion", "clean_space", "parse_question"]
