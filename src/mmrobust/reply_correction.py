"""Self-corrections without an answer phrase: where a reply takes its first answer back (pure).

``"The answer is B. However, looking again at the background, it is actually D."`` answers
D: the model corrected itself, but no answer phrase (``answer is X``, ``so X``) says so.
:func:`correction_clause` finds the last correction of a reply and returns the clause that
holds the new answer; :mod:`mmrobust.extract` reads that clause (a letter, an option's text
or label, ``not tampered``...) and lets a later answer phrase still win.

A correction (case-insensitive):

* *actually* opening a clause (``"Actually, D."``, ``"..., but actually it is D"``) or after
  a subject: ``it / this / that / the answer / the (correct) option / the video is actually
  X`` (``"it is actually D"``, ``"the video is actually not tampered"``);
* *instead* opening a clause (``"Instead, D."``), after ``instead of Y,`` (``"instead of B,
  it is D"``), or after a choice: ``it is X instead``, ``I'll go with X instead``;
* ``correction:`` / ``update:`` (``"Correction: D"``);
* *I was wrong* (*mistaken*, *incorrect*), then the next clause (``"I was wrong. It is D."``).

*actually* anywhere else is not one: ``"The frames actually look continuous"``, ``"Option A
is actually red, which rules it out"`` (the subject is another option), ``"If it were C
instead, ..."`` (no choice before *instead*).
"""

from __future__ import annotations

import re

_OPENS = r"(?:^|(?<=[.;:!?,(—–])|\b(?:but|however|wait|no|oh|hmm|and)\b)\s*,?\s*"
_SUBJECT = (
    r"\b(?:it|this|that|the\s+(?:correct\s+|right\s+|final\s+|true\s+|real\s+)?"
    r"(?:answer|option|choice|video|clip))\s*(?:is|'s|was|should\s+be|must\s+be|would\s+be)\s+"
)
_CHOICE = (
    r"\b(?:it\s*(?:is|'s|should\s+be|must\s+be)|(?:the\s+)?answer\s*(?:is|:)"
    r"|i\s*(?:'ll|'d|\s+will|\s+would)?\s*(?:choose|pick|select|go\s+with|say))\s+"
)
_TRIGGERS = (
    re.compile(rf"{_OPENS}actually\s*[,:]?\s*", re.IGNORECASE),
    re.compile(rf"{_SUBJECT}actually\s*[,:]?\s*", re.IGNORECASE),
    re.compile(rf"{_OPENS}instead\s*[,:]\s*", re.IGNORECASE),
    re.compile(r"\binstead\s+of\s+[^,.;!?\n]{1,60},\s*", re.IGNORECASE),
    re.compile(r"\b(?:correction|update|edit)\s*:\s*", re.IGNORECASE),
    re.compile(
        r"\bi\s*(?:was|am|'m)\s+(?:wrong|mistaken|incorrect)\b[^.;:!?,\n]*[.;:!?,—–-]+\s*",
        re.IGNORECASE,
    ),
)
_CHOICE_INSTEAD = re.compile(
    rf"{_CHOICE}((?:option\s*)?[^\s.,;!?]{{1,40}}?)\s*,?\s+instead\b(?!\s+of)", re.IGNORECASE
)
_CLAUSE_END = re.compile(r"[.!?;。！？](?=\s|$)|\n")


def correction_clause(text: str) -> tuple[str, int, int] | None:
    """``(clause, start, end)`` for the last self-correction of ``text`` (module docstring):
    the words that hold the corrected answer (``"D."`` for ``"... it is actually D."``), the
    offset where the correction starts (the first answer is before it) and the offset where
    its clause ends; ``None`` when there is no correction.

    ``text``: the answer part of a reply without markdown.
    """
    best: tuple[int, str, int, int] | None = None  # (clause start, clause, start, end)
    for trigger in _TRIGGERS:
        for m in trigger.finditer(text):
            if m.end() >= len(text):
                continue
            stop = _CLAUSE_END.search(text, m.end())
            end = stop.end() if stop else len(text)
            if best is None or m.end() > best[0]:
                best = (m.end(), text[m.end() : end], m.start(), end)
    for m in _CHOICE_INSTEAD.finditer(text):
        if best is None or m.start(1) > best[0]:
            best = (m.start(1), m.group(1), m.start(), m.end())
    return None if best is None else best[1:]


__all__ = ["correction_clause"]
