"""Words that answer, or refuse to answer, without naming an option letter (pure).

Three steps of the lenient policy (:mod:`mmrobust.extract`, steps 4, 7 and 8), kept here
so each list sits beside its examples:

* :func:`option_text`: the reply names an option by its text (``"No, it looks natural."``).
* :func:`is_non_answer`: ``"N/A"``, ``"none"``, ``"unknown"``, ``"I don't know"`` name no
  option (before issue 28 ``"N/A"`` was read as option A by its letter).
* :func:`yes_no_word`: on a Yes/No question, ``"是"`` / ``"是的"`` is Yes and ``"否"`` /
  ``"不是"`` is No; ``"Not tampered."`` / ``"no signs of tampering"`` is No and
  ``"It is tampered"`` / ``"tampered"`` is Yes, unless the reply hedges (*if*, *whether*,
  *cannot*, *not sure*).
"""

from __future__ import annotations

import re
from collections.abc import Mapping


def _word_re(phrase: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(phrase.strip().lower())}(?![\w])")


def option_text(text: str, options: Mapping[str, str]) -> tuple[str, str] | None:
    """``(letter, rule)`` when the reply (without markdown) names one option by its text:
    it starts with one (``"Yes, it is tampered"``, ``"No."``; the longest when one text is a
    prefix of another), contains exactly one as whole words (``"... so yes."``), or is the
    label of a labelled option (``"None"`` for ``"None: the video is not tampered"``)."""
    t = text.strip().lower()
    if not t:
        return None
    texts = {k: v.strip().lower().rstrip(".") for k, v in options.items() if v.strip()}
    starts = [k for k, v in texts.items() if re.match(_word_re(v).pattern, t)]
    if starts:
        return max(starts, key=lambda k: len(texts[k])), "lenient:starts-with-option-text"
    present = [k for k, v in texts.items() if _word_re(v).search(t)]
    if len(present) == 1:
        return present[0], "lenient:contains-option-text"
    bare = t.strip(" .!")
    labels = [k for k, v in texts.items() if ":" in v and v.split(":", 1)[0].strip() == bare]
    if len(labels) == 1:
        return labels[0], "lenient:option-label"
    return None


_NON_ANSWERS = frozenset(
    {"n/a", "na", "n.a", "none", "null", "nil", "nan", "unknown", "-", "--", "?", "...",
     "no answer", "not applicable", "not sure", "unsure", "idk", "i don't know",
     "i do not know", "cannot tell", "can't tell", "cannot determine", "unanswerable"}
)  # fmt: skip
"""Replies that answer nothing (compared lower-cased, trailing ``.!`` removed)."""


def is_non_answer(text: str, options: Mapping[str, str]) -> bool:
    """True for a reply in :data:`_NON_ANSWERS` (``text`` without markdown), unless it names
    an option by its text or label (``"None"`` for ``"None: the video is not tampered"``)."""
    bare = text.strip().lower().strip(" .!")
    if bare not in _NON_ANSWERS:
        return False
    for v in options.values():
        v = v.strip().lower().rstrip(".")
        if bare in (v, v.split(":", 1)[0].strip()):
            return False
    return True


def _yes_no(options: Mapping[str, str]) -> tuple[str, str] | None:
    """The (yes, no) letters of a Yes/No question, else ``None``."""
    by_text = {v.strip().lower().rstrip("."): k for k, v in options.items()}
    if len(options) == 2 and set(by_text) == {"yes", "no"}:
        return by_text["yes"], by_text["no"]
    return None


_ZH_YES = frozenset({"是", "是的", "对", "有"})
_ZH_NO = frozenset({"否", "不是", "不", "没有", "无"})
_NOT_TAMPERED = re.compile(
    r"\b(?:not|never|isn't|wasn't|hasn't|no)\s+(?:been\s+)?tamper(?:ed|ing)\b|\buntampered\b"
    r"|\bno\s+(?:signs?|evidence|indications?)\s+of\s+(?:any\s+)?tampering\b"
)
_TAMPERED = re.compile(
    r"^tampered\b|\b(?:is|was|has\s+been|have\s+been|appears\s+to\s+be|looks)\s+tampered\b"
    r"|\b(?:signs?|evidence)\s+of\s+tampering\b"
)
_UNSURE = re.compile(r"\b(?:if|whether|can't|cannot|unclear|unsure|not\s+sure)\b")


def yes_no_word(text: str, options: Mapping[str, str]) -> tuple[str, str] | None:
    """``(letter, rule)`` for a Yes/No question answered in words (module docstring), else
    ``None`` (also for options that are not exactly Yes and No). ``text``: the reply without
    markdown; rule ``lenient:yes-no-word`` or ``lenient:tamper-phrase``."""
    yn = _yes_no(options)
    if yn is None:
        return None
    t = text.strip().lower()
    bare = t.strip(" .!。！")
    if bare in _ZH_YES:
        return yn[0], "lenient:yes-no-word"
    if bare in _ZH_NO:
        return yn[1], "lenient:yes-no-word"
    if _UNSURE.search(t):
        return None
    if _NOT_TAMPERED.search(t):
        return yn[1], "lenient:tamper-phrase"
    if _TAMPERED.search(t):
        return yn[0], "lenient:tamper-phrase"
    return None


__all__ = ["is_non_answer", "option_text", "yes_no_word"]
