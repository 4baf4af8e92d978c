"""The ``official`` extraction mode: the reference scorers, quirks included (pure).

:func:`extract_official_tamper` (VLMEvalKit's MVTamperBench decision) and
:func:`extract_official_mmr` (MMR's extractor), reached through
:func:`mmrobust.extract.extract` with ``mode="official"``. They read the reply text as the
reference does: no width normalisation, no reasoning split, no JSON reading.
"""

from __future__ import annotations

from collections.abc import Mapping

from mmrobust.extraction import Extraction
from mmrobust.extraction import fail as _fail
from mmrobust.extraction import ok as _ok
from mmrobust.official import ReplyPath, sheet_round_trip, tamper_decision, tamper_reference


def extract_official_tamper(
    text: str,
    options: Mapping[str, str],
    *,
    answer: str | None = None,
    reference: str | None = None,
    reply_path: ReplyPath = "local",
) -> Extraction:
    """VLMEvalKit's MVTamperBench decision at a named version, quirks included.

    The reply is first what the reference would have read back from its predictions
    spreadsheet (:func:`mmrobust.official.sheet_round_trip`: the API wrapper's strip for
    ``reply_path="api"``, the 32,767-character cut, control characters as ``_xHHHH_``).

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
        reply_path: ``"api"`` (an OpenAI-compatible server) or ``"local"`` (a local model).

    Raises:
        UnknownNameError: unknown ``reference``.
    """
    ref = tamper_reference(reference)
    text = sheet_round_trip(text, reply_path=reply_path)
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


__all__ = ["extract_official_mmr", "extract_official_tamper"]
