"""Answer extraction: from a model's raw reply to an option letter (pure functions).

Three documented policies (``mode``), in the style of inspect_ai's choice
scorer: every decision returns the letter, a status and the ``rule`` that
fired, so each score can be audited.

``strict``
    Only unambiguous letter forms: a lone letter (``"B"``, ``"(B)"``,
    ``"**B**"``, ``"B."``, ``"B)"``), a reply that *starts* with a letter
    form followed by text (``"B. No"``, ``"(A) Yes"``, ``"A) Yes"``), or an
    explicit answer phrase (``"Answer: B"``, ``"the answer is (B)"``,
    ``"Best option: (A)"``). Two different letters in answer phrases is
    ambiguous (``parse_fail``).
``lenient`` (default)
    ``strict``, then option text (the reply starts with, or contains exactly
    one of, the option texts as whole words: ``"Yes, it is tampered"``,
    ``"No."``), then the last standalone option letter in the reply
    (``"A man ... so B"`` -> B; a capital ``A`` used as an article, i.e.
    followed by a lower-case word, is not a letter). Never a random guess.
``official``
    Reproduces the reference scorers, quirks included, so numbers can be
    compared with published ones (see :func:`extract_official_tamper` and
    :func:`extract_official_mmr`).

A reply from which no option can be extracted gets ``Status.PARSE_FAIL``;
it is kept with its raw text and counted, never scored as the other class.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast

from mmrobust.families import get_family
from mmrobust.official import tamper_decision, tamper_reference
from mmrobust.status import Status

ExtractMode = Literal["strict", "lenient", "official"]
EXTRACT_MODES: tuple[ExtractMode, ...] = ("strict", "lenient", "official")


@dataclass(frozen=True)
class Extraction:
    """Result of extracting an option letter from a reply.

    Attributes:
        letter: the extracted option letter (a key of ``options``), or ``None``.
        status: ``Status.OK`` when a letter was found, else ``Status.PARSE_FAIL``.
        rule: which rule decided (``"strict:lone-letter"``, ``"lenient:option-text"``,
            ``"official:first-token"``, ``"none"``...), for auditing.
    """

    letter: str | None
    status: Status
    rule: str


def _ok(letter: str, rule: str) -> Extraction:
    return Extraction(letter=letter, status=Status.OK, rule=rule)


def _fail(rule: str = "none") -> Extraction:
    return Extraction(letter=None, status=Status.PARSE_FAIL, rule=rule)


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


def _strict(text: str, options: Mapping[str, str]) -> Extraction | None:
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
    found = {
        _key(m.group(1), options)
        for m in re.finditer(
            rf"(?:answer|best option|correct option|option)\s*(?:is|:)?\s*[:\-]?\s*"
            rf"[\(\[]?([{letters}])(?![A-Za-z])",
            t,
            flags=re.IGNORECASE,
        )
    }
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


def _word_re(phrase: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(phrase.strip().lower())}(?![\w])")


def _option_text(text: str, options: Mapping[str, str]) -> Extraction | None:
    t = _clean(text).lower()
    if not t:
        return None
    texts = {k: v.strip().lower().rstrip(".") for k, v in options.items() if v.strip()}
    # Starts with an option text ("Yes, it is tampered", "No.").
    starts = [k for k, v in texts.items() if re.match(_word_re(v).pattern, t)]
    if len(starts) == 1:
        return _ok(starts[0], "lenient:starts-with-option-text")
    if len(starts) > 1:  # one option text is a prefix of another: prefer the longest
        best = max(starts, key=lambda k: len(texts[k]))
        return _ok(best, "lenient:starts-with-option-text")
    present = [k for k, v in texts.items() if _word_re(v).search(t)]
    if len(present) == 1:
        return _ok(present[0], "lenient:contains-option-text")
    return None


def _last_letter(text: str, options: Mapping[str, str]) -> Extraction | None:
    letters = _letter_class(options)
    if not letters:
        return None
    t = _clean(text)
    hits = []
    for m in re.finditer(rf"(?<![A-Za-z'])([{letters}])(?![A-Za-z'])", t):
        letter = m.group(1)
        rest = t[m.end() :]
        # "A man ..." / "I think ...": a capital used as a word, not an option.
        if letter in ("A", "I") and re.match(r"\s+[a-z]", rest):
            continue
        hits.append(letter)
    if hits:
        return _ok(hits[-1], "lenient:last-letter")
    return None


# --------------------------------------------------------------------------- official


def extract_official_tamper(
    text: str,
    options: Mapping[str, str],
    *,
    answer: str | None = None,
    reference: str | None = None,
) -> Extraction:
    """VLMEvalKit's MVTamperBench decision at a named version, quirks included.

    The reference does not extract an answer: it tests the reply against the
    ground truth (:func:`mmrobust.official.tamper_decision`). We store its
    verdict as a letter so metrics and reports need nothing special:

    * right for ``answer``: that letter (even when the reply is also "right"
      for the other option, as ``")"`` is);
    * wrong for ``answer`` but right for exactly one other option (``"B"``
      with truth A): that option's letter;
    * wrong, and right for no option: ``parse_fail`` (rule ``official:no-match``);
    * never scored by the reference (empty reply, a reply pandas reads as a
      missing value such as ``"None"``, the API-failure placeholder):
      ``parse_fail`` with rule ``official:empty-reply`` /
      ``official:missing-value`` / ``official:api-failure-text``.

    Official scoring counts every ``parse_fail`` as wrong, as the reference
    does. Without ``answer`` the letter is the one option the reply is right
    for (``parse_fail`` when none or several).

    Args:
        text: the raw reply.
        options: letter -> option text, as shown.
        answer: the ground-truth letter.
        reference: VLMEvalKit version name (:func:`mmrobust.official.tamper_reference`;
            default: the integration commit).

    Raises:
        UnknownNameError: unknown ``reference``.
    """
    ref = tamper_reference(reference)
    if answer is not None and answer in options:
        verdict = tamper_decision(text, answer, options, ref)
        if verdict.outcome == "correct":
            return _ok(answer, verdict.rule)
        if verdict.outcome == "failed":
            return _fail(verdict.rule)
    right = {
        k: d.rule
        for k in options
        if k != answer and (d := tamper_decision(text, k, options, ref)).outcome == "correct"
    }
    if len(right) == 1:
        letter, rule = right.popitem()
        return _ok(letter, rule)
    if answer is None and len(right) > 1:
        return _fail("official:matches-every-option")
    if answer is None and text == "":
        return _fail("official:empty-reply")
    return _fail("official:no-match")


def extract_official_mmr(text: str, options: Mapping[str, str]) -> Extraction:
    """MMR's official extractor (arXiv:2406.10638 evaluation code), quirks included.

    The reference (``evaluation/calculation_mmr.py`` in the authors'
    repository) keeps the reply up to its first ``"."``, replaces ``","``
    with a space, splits on single spaces and returns the first of ``A``,
    ``B``, ``C``, ``D`` that is one of the resulting *words*, in that fixed
    order, else no answer ("E"). Quirks reproduced: the priority is
    alphabetical, not positional (``"C or A"`` gives ``A``); only a bare
    letter between spaces/commas counts, so ``"(A)"``, ``"Answer:B"`` and
    ``"C\nbecause"`` give no answer, and an article ``"A"`` in a sentence
    counts as option A (``"A man ... so B"`` gives ``A``).
    """
    head = text.split(".")[0] if "." in text else text
    words = head.replace(",", " ").split(" ")
    for letter in ("A", "B", "C", "D"):
        if letter in words:
            if letter in options:
                return _ok(letter, "official:mmr-first-of-ABCD")
            return _fail("official:mmr-letter-not-an-option")
    return _fail("official:mmr-no-letter")


# --------------------------------------------------------------------------- entry point


def extract(
    text: str,
    options: Mapping[str, str],
    *,
    mode: ExtractMode | str = "lenient",
    benchmark: str = "tamper",
    answer: str | None = None,
    reference: str | None = None,
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
        return extract_official_tamper(text, options, answer=answer, reference=reference)
    if mode not in ("strict", "lenient"):
        raise ValueError(f"unknown extraction mode {mode!r}; expected one of {EXTRACT_MODES}")
    strict = _strict(text, options)
    if strict is not None:
        return strict
    if mode == "strict":
        return _fail()
    return _option_text(text, options) or _last_letter(text, options) or _fail()


__all__ = [
    "EXTRACT_MODES",
    "ExtractMode",
    "Extraction",
    "extract",
    "extract_official_mmr",
    "extract_official_tamper",
]
