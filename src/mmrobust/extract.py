"""Answer extraction: from a model's raw reply to an option letter (pure functions).

Three documented policies (``mode``), in the style of inspect_ai's choice
scorer: every decision returns the letter, a status and the ``rule`` that
fired (stored with the row), so each score can be audited.

``strict`` and ``lenient`` first prepare the reply:

1. **Width.** NFKC normalisation: full-width ``"Ａ"`` is ``"A"``, ``"（B）"`` is ``"(B)"``.
2. **Reasoning.** :func:`mmrobust.reasoning.split_reasoning` separates a thinking
   model's reasoning from its answer (``"<think>Option A is wrong. So C.</think>C"``
   -> the answer part ``"C"``; only the closing tag, the template having opened the
   block; gpt-oss's harmony ``analysis`` / ``final`` channels; a separate ``reasoning``
   field). A reply cut inside its reasoning (an opening tag never closed, no ``final``
   channel, or an empty reply beside a reasoning field) has no answer: ``parse_fail``,
   rule ``reasoning:cut``. Only the answer part is read below.
2b. **JSON.** A reply that is a JSON object (bare or fenced) is answered by its answer key
   alone (:mod:`mmrobust.reply_json`): ``{"reasoning": "so option A ...", "answer": "B"}``
   -> the value ``"B"``, read by the mode (rule ``json:`` + the mode's rule); a verdict key
   (``{"tampered": false}``) -> No / the ``none`` option (``json:verdict``).

``strict``
    Only unambiguous letter forms: a lone letter (``"B"``, ``"(B)"``,
    ``"**B**"``, ``"B."``, ``"B)"``), a reply that *starts* with a letter
    form followed by text (``"B. No"``, ``"(A) Yes"``, ``"A) Yes"``), or an
    explicit answer phrase (``"Answer: B"``, ``"the answer is (B)"``,
    ``"Best option: (A)"``). Two different letters in answer phrases is
    ambiguous (``parse_fail``).
``lenient`` (default)
    On the answer part, the first step that decides:

    3. *Lone letter* (``strict:lone-letter``): ``"B"``, ``"(B)"``, ``"Option B"``.
    4. *Non-answer* (``lenient:non-answer``, ``parse_fail``): ``"N/A"``, ``"none"``,
       ``"unknown"``, ``"I don't know"`` are no option, never option A.
    4b. *Self-correction* without an answer phrase, after a first answer
       (:mod:`mmrobust.reply_correction`, ``lenient:self-correction``): ``"The answer is
       B. However, looking again at the background, it is actually D."`` -> D; *actually*,
       *instead*, ``Correction:``, *I was wrong*, then a letter, an option's text or label,
       or "not tampered". A later answer phrase still wins; ``"The frames actually look
       continuous"`` corrects nothing.
    5. *Answer phrases; the last one wins.* ``answer is X`` / ``Answer: X`` /
       ``final answer: X``, ``best|correct option is X``, ``so|therefore|thus|hence X``,
       ``I choose|pick|select|go with X``, ``my choice is X``, ``\boxed{X}``,
       ``X is correct|right``. The last sentence
       holding such a phrase decides, so a self-correction counts:
       ``"The answer is A. However, on second thought the video looks normal, so B."``
       -> B (``lenient:last-answer-phrase``). Two letters in that sentence's phrases
       (``"Answer: A or Answer: B"``) or a phrase letter followed by ``or Y``
       (``"the answer is A or B"``): ``parse_fail`` (``lenient:ambiguous-answer-phrase``,
       ``lenient:hedge``). A capital ``A`` followed by a lower-case word is an article.
    6. *Leading letter* (``strict:leading-letter``): ``"B. No, there is nothing unusual"``;
       ``"Option C, since D is impossible"`` (``lenient:leading-option``); a first line that
       is a lone letter, ``"C\n\nOptions A and B are wrong."`` (``lenient:first-line-letter``);
       a letter then *because* / *since*, ``"C, because A, B and D contradict the image."``
       (``lenient:leading-letter-because``).
    6b. *Yes/No in another language* leading the reply (:mod:`mmrobust.reply_lang`, fifteen
       languages): ``"Sí, ..."``, ``"Nein."``, ``"はい"`` (``lenient:yes-no-word``).
    7. *Option text*: the reply starts with one (``"Yes, it is tampered"``, ``"No."``),
       contains exactly one as whole words (``"... so yes."``), or is the label of a
       labelled option (``"None"`` for ``"None: the video is not tampered"``).
    8. *Tamper phrases*: ``"Not tampered."``, ``"no signs of tampering"``, ``"视频没有被
       篡改"`` -> No, ``"It is tampered"``, ``"tampered"`` -> Yes (``lenient:tamper-phrase``;
       not when the reply says *if*, *whether*, *cannot*...); on the ``type`` / ``when``
       tasks "not tampered" is the ``none`` option when the reply names no letter.
    9. *Letters named*: exactly one option letter standing alone
       (``"A man walks across the street, so B"`` -> B: the article is no letter;
       ``"N/A"`` holds none: a letter next to ``/`` is not one; ``"Not A, it is B."`` -> B:
       a negated letter is not named). More than one without
       an answer phrase is a hedge, ``parse_fail`` (``lenient:several-options``):
       ``"A or B"``, ``"B or A?"``, ``"C or D"``, ``"B, C"``,
       ``"I think A, but it could be B."``.

    Never a random guess.
``official``
    Reproduces the reference scorers, quirks included, so numbers can be
    compared with published ones (see :func:`extract_official_tamper` and
    :func:`extract_official_mmr`). It reads the reply text as the reference
    does: no width normalisation, no reasoning split (a ``<think>`` block is
    part of the text), no JSON reading, after the reference's spreadsheet round trip for
    MVTamperBench (:func:`mmrobust.official.sheet_round_trip`).

A reply from which no option can be extracted gets ``Status.PARSE_FAIL``;
it is kept with its raw text and counted, never scored as the other class.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Literal, cast

from mmrobust.extraction import Extraction
from mmrobust.extraction import fail as _fail
from mmrobust.extraction import ok as _ok
from mmrobust.families import get_family
from mmrobust.official import ReplyPath
from mmrobust.official_extract import extract_official_mmr, extract_official_tamper
from mmrobust.reasoning import split_reasoning
from mmrobust.reply_correction import correction_clause
from mmrobust.reply_json import JsonReply, json_reply
from mmrobust.reply_words import (
    is_non_answer,
    none_option,
    option_text,
    verdict_option,
    yes_no_lead,
    yes_no_word,
)

ExtractMode = Literal["strict", "lenient", "official"]
EXTRACT_MODES: tuple[ExtractMode, ...] = ("strict", "lenient", "official")


_MARKDOWN = re.compile(r"[*_`#]+")


def _clean(text: str) -> str:
    """Drop markdown emphasis and surrounding whitespace."""
    return _MARKDOWN.sub("", text).strip()


def _key(letter: str, options: Mapping[str, str]) -> str:
    """The option key a (possibly lower-case) letter denotes, or ``""``."""
    if letter in options:
        return letter
    for k in options:
        if k.lower() == letter.lower():
            return k
    return ""


def _letter_class(options: Mapping[str, str]) -> str:
    return "".join(re.escape(k) for k in options if len(k) == 1)


# --------------------------------------------------------------------------- strict


def _strict(text: str, options: Mapping[str, str], *, phrases: bool = True) -> Extraction | None:
    """Strict steps 1-3 (module docstring); ``phrases=False`` skips step 2 (lenient has
    its own answer-phrase step)."""
    letters = _letter_class(options)
    if not letters:
        return None
    t = _clean(text)
    # 1. The whole reply is one letter form: "B", "(B)", "B.", "B)", "[B]", "Option B".
    lone = re.fullmatch(
        rf"(?:option|answer|choice)?\s*[:\-]?\s*[\(\[]?([{letters}])[\)\]]?\s*[.:)!]?",
        t,
        flags=re.IGNORECASE,
    )
    if lone and _key(lone.group(1), options):
        return _ok(_key(lone.group(1), options), "strict:lone-letter")
    # 2. Explicit answer phrases anywhere: "Answer: B", "the answer is (B)", "Best option: (A)".
    found = (
        set()
        if not phrases
        else {
            _key(m.group(1), options)
            for m in re.finditer(
                rf"(?:answer|best option|correct option|option)\s*(?:is|:)?\s*[:\-]?\s*"
                rf"[\(\[]?([{letters}])(?![A-Za-z])",
                t,
                flags=re.IGNORECASE,
            )
        }
    )
    if len(found) == 1:
        return _ok(found.pop(), "strict:answer-phrase")
    if len(found) > 1:
        return _fail("strict:ambiguous-answer-phrase")
    # 3. Reply starts with a letter form followed by text: "B. No", "(A) Yes", "A) ...", "A: ...".
    head = re.match(
        rf"[\(\[]([{letters}])[\)\]]|([{letters}])[.):](?:\s|$)", t, flags=re.IGNORECASE
    )
    if head:
        return _ok(_key(head.group(1) or head.group(2), options), "strict:leading-letter")
    return None


# --------------------------------------------------------------------------- lenient


def _option_text(text: str, options: Mapping[str, str]) -> Extraction | None:
    """Step 7 (:func:`mmrobust.reply_words.option_text`)."""
    found = option_text(_clean(text), options)
    return _ok(*found) if found is not None else None


def _yes_no_words(text: str, options: Mapping[str, str]) -> Extraction | None:
    """是/否 and "(not) tampered" phrasing (:func:`mmrobust.reply_words.yes_no_word`); on a
    question with a ``none`` option only when the reply names no option letter."""
    if none_option(options) is not None and _mentioned_letters(text, options) is not None:
        return None
    found = yes_no_word(_clean(text), options)
    return _ok(*found) if found is not None else None


def _yes_no_lead(text: str, options: Mapping[str, str]) -> Extraction | None:
    """Yes/No in another language, leading the reply (:mod:`mmrobust.reply_lang`)."""
    found = yes_no_lead(_clean(text), options)
    return _ok(*found) if found is not None else None


def _non_answer(text: str, options: Mapping[str, str]) -> Extraction | None:
    """``parse_fail`` for a non-answer (:func:`mmrobust.reply_words.is_non_answer`)."""
    return _fail("lenient:non-answer") if is_non_answer(_clean(text), options) else None


_LETTER_FOLLOWERS = frozenset(
    {"or", "and", "but", "nor", "is", "was", "seems", "looks", "because", "since", "vs",
     "versus", "then", "instead", "not", "either", "too", "also"}
)  # fmt: skip
"""Words after ``A`` that keep it a letter ("A or B", "A is correct")."""


def _is_article(letter: str, rest: str) -> bool:
    """A capital ``A`` / ``I`` used as a word ("A man ...", "I think ..."), not an option:
    followed by a lower-case word other than :data:`_LETTER_FOLLOWERS`."""
    m = re.match(r"\s+([a-z]+)", rest)
    return letter in ("A", "I", "a", "i") and m is not None and m.group(1) not in _LETTER_FOLLOWERS


_PHRASE_HEADS = (
    r"(?:final\s+|correct\s+|my\s+)?answer\s*(?:is|would\s+be|will\s+be)?\s*[:\-]?\s*"
    r"(?:option\s*)?",
    r"(?:best|correct|right)\s+(?:option|choice)\s*(?:is|would\s+be)?\s*[:\-]?\s*",
    r"\b(?:so|therefore|thus|hence)\s*,?\s*(?:the\s+answer\s+is\s*)?(?:option\s*)?",
    r"\bi\s*(?:would\s+|will\s+|'d\s+)?(?:choose|pick|select|go\s+with)\s+(?:option\s*)?",
    r"\b(?:my\s+)?(?:final\s+)?(?:choice|selection)\s*(?:is|would\s+be)?\s*[:\-]?\s*"
    r"(?:option\s*)?",
    r"\\boxed\s*\{\s*(?:\\text\s*\{\s*)?",
)


def _phrase_letters(sentence: str, options: Mapping[str, str]) -> list[tuple[str, int]]:
    """(option letter, end offset) of every explicit answer phrase in one sentence."""
    letters = _letter_class(options)
    hits: list[tuple[int, str, int]] = []
    for head in _PHRASE_HEADS:
        pat = rf"{head}[\(\[]?([{letters}])(?![A-Za-z])"
        for m in re.finditer(pat, sentence, flags=re.IGNORECASE):
            if not _is_article(m.group(1), sentence[m.end() :]):
                hits.append((m.start(1), _key(m.group(1), options), m.end()))
    post = rf"(?<![A-Za-z])[\(\[]?([{letters}])[\)\]]?\s+is\s+(?:the\s+)?(?:correct|right|best)\b"
    for m in re.finditer(post, sentence, flags=re.IGNORECASE):
        hits.append((m.start(1), _key(m.group(1), options), m.end(1)))
    return [(k, end) for _, k, end in sorted(set(hits))]


_SENTENCE_END = re.compile(r"(?<=[.!?;。！？])\s+|\n+")


def _answer_phrases(text: str, options: Mapping[str, str]) -> Extraction | None:
    """The last sentence holding an explicit answer phrase decides (module docstring)."""
    letters = _letter_class(options)
    if not letters:
        return None
    per_sentence = [
        (s, found)
        for s in _SENTENCE_END.split(_clean(text))
        if (found := _phrase_letters(s, options))
    ]
    if not per_sentence:
        return None
    sentence, deciding = per_sentence[-1]
    earlier = {k for _, found in per_sentence[:-1] for k, _ in found}
    chosen = {k for k, _ in deciding}
    if len(chosen) > 1:
        return _fail("lenient:ambiguous-answer-phrase")
    letter = chosen.pop()
    for _, end in deciding:  # "the answer is A or B": a hedge, not a choice
        m = re.match(rf"\s*,?\s*(?:or|/)\s*(?:option\s*)?[\(\[]?([{letters}])(?![A-Za-z])",
                     sentence[end:], flags=re.IGNORECASE)  # fmt: skip
        if m and _key(m.group(1), options) != letter:
            return _fail("lenient:hedge")
    rule = "lenient:last-answer-phrase" if earlier - {letter} else "lenient:answer-phrase"
    return _ok(letter, rule)


_NEGATED = re.compile(r"\bnot\s+(?:option\s*)?[\(\[]?$", re.IGNORECASE)


def _mentioned_letters(text: str, options: Mapping[str, str]) -> Extraction | None:
    """The one option letter the reply names; several named without a choice: a hedge."""
    letters = _letter_class(options)
    if not letters:
        return None
    t = _clean(text)
    hits = []
    for m in re.finditer(rf"(?<![A-Za-z'/])([{letters}])(?![A-Za-z'/])", t):
        if _is_article(m.group(1), t[m.end() :]) or _NEGATED.search(t[: m.start()]):
            continue  # "A man ...", "not A": no option named
        hits.append(m.group(1))
    if len(set(hits)) > 1:
        return _fail("lenient:several-options")
    if hits:
        return _ok(hits[-1], "lenient:last-letter")
    return None


_BECAUSE = r"(?:because|since|given|due\s+to|as(?!\s+well))\b"
"""Words after a leading letter that explain the choice: ``"C, because A, B and D ..."``."""


_FILLER = re.compile(
    r"^(?:(?:wait|hmm+|oh|um+|well|sorry|hold\s+on)\b\s*[,!.:;—–-]*\s*|no\s*[,!.—–-]+\s*(?=\S))+",
    re.IGNORECASE,
)
"""Words that open a correction's clause without answering: ``"Actually, wait, it's D."``."""


def _corrected(clause: str, options: Mapping[str, str]) -> Extraction | None:
    """The answer a self-correction's clause gives (:mod:`mmrobust.reply_correction`): a
    letter form alone or before punctuation or *because* (``"D."``, ``"option D, since"``),
    an answer phrase, an option's text or label at its start, or "(not) tampered"."""
    letters = _letter_class(options)
    c = _FILLER.sub("", _clean(clause))
    c = re.sub(r"^(?:it|this|that)\s*(?:is|'s|(?:should|must|would|could|might|may)\s+be)\s+|^(?:the\s+)?"
               r"(?:correct\s+|right\s+)?answer\s+is\s+", "", c, flags=re.I)  # fmt: skip
    c = re.sub(r"^(?:option|choice)\s*", "", c, flags=re.IGNORECASE)
    hedge = (
        rf"[\(\[]?([{letters}])[\)\]]?\s*(?:or|/)\s*(?:option\s*)?[\(\[]?[{letters}](?![A-Za-z])"
    )
    if letters and re.match(hedge, c, re.IGNORECASE):
        return _fail("lenient:hedge")
    m = re.match(rf"[\(\[]?([{letters}])[\)\]]?\s*(?:$|[.,;:!)]|\s+(?:instead|{_BECAUSE}))", c)
    if letters and m:
        return _ok(_key(m.group(1), options), "lenient:self-correction")
    found = _answer_phrases(c, options)
    if found is None and (said := option_text(c, options)) is not None:
        found = _ok(*said) if said[1] != "lenient:contains-option-text" else None
    found = found or _yes_no_words(c, options)
    return (
        None if found is None else Extraction(found.letter, found.status, "lenient:self-correction")
    )


def _self_correction(text: str, options: Mapping[str, str]) -> Extraction | None:
    """The answer of the last self-correction after a first answer (``"The answer is B.
    However, ... it is actually D."`` -> D), unless an answer phrase follows it."""
    t = _clean(text)
    found = correction_clause(t)
    if found is None:
        return None
    clause, start, end = found
    got = _corrected(clause, options)
    if got is None or (got.letter and _answer_phrases(t[end:], options) is not None):
        return None
    first = _lenient(t[:start], options) if t[:start].strip() else None
    return got if first is not None and first.letter is not None else None


def _leading(text: str, options: Mapping[str, str]) -> Extraction | None:
    """Step 6 beyond strict's leading letter: ``"Option C, since D is impossible"`` and a
    first line that is a lone letter form (``"C\n\nOptions A and B are wrong."``)."""
    letters = _letter_class(options)
    if not letters:
        return None
    t = _clean(text)
    m = re.match(rf"(?:option|choice)\s*[\(\[]?([{letters}])[\)\]]?(?![A-Za-z])", t, re.I)
    if m:
        return _ok(_key(m.group(1), options), "lenient:leading-option")
    m = re.match(rf"[\(\[]?([{letters}])[\)\]]?\s*[,;:\-–—]?\s*{_BECAUSE}", t)
    if m:
        return _ok(_key(m.group(1), options), "lenient:leading-letter-because")
    first, _, rest = t.partition("\n")
    explained = re.search(r"[a-z]{2,}", rest) is not None  # not a list of letters ("A\nB")
    lone = _strict(first, options, phrases=False) if explained else None
    if lone is not None and lone.rule == "strict:lone-letter":
        return _ok(lone.letter or "", "lenient:first-line-letter")
    return None


def _lenient(text: str, options: Mapping[str, str]) -> Extraction:
    """The default policy on the answer part of a reply (module docstring, steps 3-9)."""
    strict = _strict(text, options, phrases=False)
    if strict is not None and strict.rule == "strict:lone-letter":
        return strict
    return (
        _non_answer(text, options)
        or _self_correction(text, options)
        or _answer_phrases(text, options)
        or (strict if strict is not None else None)
        or _leading(text, options)
        or _yes_no_lead(text, options)
        or _option_text(text, options)
        or _yes_no_words(text, options)
        or _mentioned_letters(text, options)
        or _fail()
    )


# --------------------------------------------------------------------------- entry point


def extract(
    text: str,
    options: Mapping[str, str],
    *,
    mode: ExtractMode | str = "lenient",
    benchmark: str = "tamper",
    answer: str | None = None,
    reference: str | None = None,
    reasoning: str | None = None,
    reply_path: ReplyPath = "local",
) -> Extraction:
    """Extract the chosen option letter from a raw model reply.

    Args:
        text: the raw reply (any length; may be empty).
        options: option letter -> option text, as shown to the model.
        mode: ``"strict"``, ``"lenient"`` (default) or ``"official"`` (see module docstring).
        benchmark: selects the official scorer: the family's ``official_extract``
            (MMR's extractor for ``"mmr"``), else VLMEvalKit's MVTamperBench matcher.
        answer: the ground-truth letter; only ``official`` tamper mode uses it (the
            reference tests a reply against the truth, see :func:`extract_official_tamper`).
        reference: VLMEvalKit version for ``official`` tamper mode (default: the
            integration commit; see :mod:`mmrobust.official`).
        reasoning: the server's separate reasoning field (``Response.reasoning``), if any:
            with an empty ``text`` the reply was cut inside its reasoning (``strict`` and
            ``lenient``; official mode reads ``text`` only, as the reference does).
        reply_path: ``official`` tamper mode: ``"api"`` for a reply that came through an
            OpenAI-compatible API (the reference's wrapper strips it, D3), ``"local"`` for
            a local model's decoded text (:func:`mmrobust.official.sheet_round_trip`).

    Returns:
        ``Extraction(letter, status, rule)``; ``status`` is ``ok`` or ``parse_fail``.

    Raises:
        ValueError: unknown ``mode``.
        UnknownNameError: unknown ``reference``.
    """
    if mode == "official":
        own = get_family(benchmark).official_extract
        if own is not None:
            return cast(Extraction, own(text, options, answer=answer, reference=reference))
        return extract_official_tamper(
            text, options, answer=answer, reference=reference, reply_path=reply_path
        )
    if mode not in ("strict", "lenient"):
        raise ValueError(f"unknown extraction mode {mode!r}; expected one of {EXTRACT_MODES}")
    split = split_reasoning(unicodedata.normalize("NFKC", text or ""), _nfkc(reasoning))
    if not split.answer.strip():
        return _fail("reasoning:cut" if split.cut else "none")
    found = json_reply(split.answer)
    read = _json(found, options, mode) if found is not None else None
    if read is not None and (found is None or found.standalone or read.letter is not None):
        return read
    if mode == "strict":
        return _strict(split.answer, options) or _fail()
    return _lenient(split.answer, options)


def _json(found: JsonReply, options: Mapping[str, str], mode: str) -> Extraction:
    """A JSON reply (:mod:`mmrobust.reply_json`): its verdict (rule ``json:verdict``), or its
    answer text read by the mode (rule ``json:`` + the mode's rule)."""
    if found.tampered is not None:
        letter = verdict_option(found.tampered, options)
        return _ok(letter, "json:verdict") if letter else _fail("json:verdict-not-an-option")
    if found.text is None or not found.text.strip():
        return _fail("json:no-answer")
    read = (
        (_strict(found.text, options) or _fail())
        if mode == "strict"
        else _lenient(found.text, options)
    )
    return Extraction(read.letter, read.status, f"json:{read.rule}")


def _nfkc(text: str | None) -> str | None:
    return None if text is None else unicodedata.normalize("NFKC", text)


__all__ = [
    "EXTRACT_MODES",
    "ExtractMode",
    "Extraction",
    "extract",
    "extract_official_mmr",
    "extract_official_tamper",
]
