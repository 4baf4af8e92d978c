"""Words that answer, or refuse to answer, without naming an option letter (pure).

Three steps of the lenient policy (:mod:`mmrobust.extract`, steps 4, 7 and 8), kept here
so each list sits beside its examples:

* :func:`option_text`: the reply names an option by its text (``"No, it looks natural."``).
* :func:`is_non_answer`: ``"N/A"``, ``"none"``, ``"unknown"``, ``"I don't know"`` name no
  option (before issue 28 ``"N/A"`` was read as option A by its letter).
* :func:`yes_no_lead`: on a Yes/No question, a reply that starts with Yes or No in one of
  fifteen languages (:mod:`mmrobust.reply_lang`: ``"Sí, ..."``, ``"Nein."``, ``"はい"``,
  ``"是的，..."``).
* :func:`yes_no_word`: on a Yes/No question, ``"Not tampered."`` / ``"no signs of
  tampering"`` / ``"视频没有被篡改"`` is No and ``"It is tampered"`` / ``"tampered"`` /
  ``"视频被篡改了"`` is Yes, unless the reply hedges (*if*, *whether*, *cannot*, *not
  sure*); on a question with a ``none`` option (the ``type`` and ``when`` tasks' ``"None:
  the video is not tampered"``), "not tampered" is that option.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mmrobust.reply_lang import leading_yes_no, zh_tamper_phrase


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


_NONE_TEXT = re.compile(r"\bnot\s+tampered\b|\bno\s+tampering\b|\buntampered\b")


def none_option(options: Mapping[str, str]) -> str | None:
    """The letter of the one option that says the video is not tampered (``"None: the
    video is not tampered"`` of the ``type`` and ``when`` tasks), else ``None``; never on a
    Yes/No question, nor for an option that only says "none" (``"None of the above"``)."""
    if _yes_no(options) is not None:
        return None
    found = [k for k, v in options.items() if _NONE_TEXT.search(v.strip().lower())]
    return found[0] if len(found) == 1 else None


def verdict_option(tampered: bool, options: Mapping[str, str]) -> str | None:
    """The option a tamper verdict answers: Yes / No on a Yes/No question, the ``none``
    option (:func:`none_option`) for "not tampered"; else ``None`` (which effect a
    tampered video shows is no verdict's to say)."""
    yn = _yes_no(options)
    if yn is not None:
        return yn[0] if tampered else yn[1]
    return None if tampered else none_option(options)


def yes_no_lead(text: str, options: Mapping[str, str]) -> tuple[str, str] | None:
    """``(letter, "lenient:yes-no-word")`` for a Yes/No question answered by a leading word
    (:func:`mmrobust.reply_lang.leading_yes_no`), else ``None``; English ``Yes`` / ``No``
    are left to :func:`option_text` (they are the options' text)."""
    yn = _yes_no(options)
    if yn is None or re.match(r"\s*(?:yes|no)(?!\w)", text, re.IGNORECASE):
        return None
    said = leading_yes_no(text)
    if said is None:
        return None
    return (yn[0] if said else yn[1]), "lenient:yes-no-word"


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
    """``(letter, rule)`` for a reply that says in words whether the video is tampered
    (module docstring, :func:`verdict_option`), else ``None``. ``text``: the reply without
    markdown; rule ``lenient:yes-no-word`` (a lone Yes/No word in any listed language) or
    ``lenient:tamper-phrase``."""
    lead = yes_no_lead(text, options)
    if lead is not None:
        return lead
    t = text.strip().lower()
    verdict = zh_tamper_phrase(t)
    if verdict is None and not _UNSURE.search(t):
        if _NOT_TAMPERED.search(t):
            verdict = False
        elif _TAMPERED.search(t):
            verdict = True
    letter = None if verdict is None else verdict_option(verdict, options)
    return None if letter is None else (letter, "lenient:tamper-phrase")


__all__ = [
    "is_non_answer",
    "none_option",
    "option_text",
    "verdict_option",
    "yes_no_lead",
    "yes_no_word",
]
