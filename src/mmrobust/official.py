"""The reference implementations that ``--official`` reproduces, by version (pure functions).

Published numbers come from two reference code bases, and one of them changed
its decisions over time, so official mode names the version it reproduces:

* **MVTamperBench**: VLMEvalKit (``open-compass/VLMEvalKit``),
  ``vlmeval/dataset/tamperbench.py`` (prompt, scoring loop),
  ``vlmeval/dataset/utils/tamperbench.py`` (F1 and accuracy ratings),
  ``vlmeval/dataset/utils/multiple_choice.py`` and
  ``vlmeval/utils/matching_util.py`` (the rule-based answer search).
  Versions (:data:`TAMPER_REFERENCES`): the commit that added the benchmark
  (``eb58e9e``, February 2025, the one the paper's numbers came from; the
  default) and the current head (``e8e78f0``). Between them: the system text
  was cut after its first clause (``9cc14cd``, September 2025), and the
  option search gained a position rule, a length cap on the option-text rule
  (``c337155``, August 2025) and an "answer is X" rule (``a67ace5``, June 2026).
* **MMR**: the authors' repository (``BAAI-DCAI/Multimodal-Robustness-Benchmark``,
  commit ``b85b573``), ``evaluation/evaluation/calculation_mmr.py`` and
  ``evaluation/evaluation/models/calculation.py`` (extraction and the
  pair rule, identical in both) and ``evaluation/evaluation/models/*/*.py``
  (the prompt). One version (:data:`MMR_REFERENCE`).

The rules below are stated in our words (docs/official.md lists every quirk
with its version); no reference code is copied. ``tests/test_reference_parity.py``
holds the (reply, truth) -> decision table per version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mmrobust.families import find_family
from mmrobust.registry import Registry

VLMEVALKIT_REPO = "open-compass/VLMEvalKit"
MMR_REPO = "BAAI-DCAI/Multimodal-Robustness-Benchmark"

_SYSTEM_FULL = (
    "Carefully watch the video and pay attention to the cause and sequence of events, "
    "the detail and movement of objects, and the action and pose of persons. "
    "Based on your observations, select the best option that accurately addresses the question.\n"
)
_SYSTEM_CUT = "Carefully watch the video and pay attention to the cause and sequence of events, "


@dataclass(frozen=True)
class TamperReference:
    """One version of VLMEvalKit's MVTamperBench code.

    Attributes:
        name: our short name (``"eb58e9e"``); ``aliases`` name it too.
        commit: the full commit hash in ``open-compass/VLMEvalKit``.
        date: commit date (ISO).
        system: the dataset's system text at that commit (``MVTamperBench.SYS``), verbatim.
        option_position_rule: the rule-based search accepts a lone option letter only
            when it is among the reply's last four tokens (added in ``c337155``).
        option_text_cap: the option-text rule gives up on replies longer than twice the
            summed option lengths (10 characters for Yes/No; added in ``c337155``).
        verbose_answer_rule: the search also reads ``"answer is X"`` / ``"correct answer
            is **X**"`` (added in ``a67ace5``).
        description: one line for reports.
    """

    name: str
    commit: str
    date: str
    system: str
    option_position_rule: bool
    option_text_cap: bool
    verbose_answer_rule: bool
    description: str
    aliases: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        """JSON block for ``run.json`` / ``metrics.json`` / the report."""
        return {
            "benchmark": "tamper",
            "name": self.name,
            "repo": VLMEVALKIT_REPO,
            "commit": self.commit,
            "date": self.date,
            "description": self.description,
        }


TAMPER_REFERENCES: dict[str, TamperReference] = {
    "eb58e9e": TamperReference(
        name="eb58e9e",
        commit="eb58e9e05d4f64316608128988c60a3cb200307d",
        date="2025-02-24",
        system=_SYSTEM_FULL,
        option_position_rule=False,
        option_text_cap=False,
        verbose_answer_rule=False,
        description="VLMEvalKit commit that added MVTamperBench (#739); the paper's numbers",
        aliases=("integration", "paper"),
    ),
    "e8e78f0": TamperReference(
        name="e8e78f0",
        commit="e8e78f05f3080fe28154f2130321f17951c3be94",
        date="2026-08-18",
        system=_SYSTEM_CUT,
        option_position_rule=True,
        option_text_cap=True,
        verbose_answer_rule=True,
        description="VLMEvalKit head: system text cut short, option search with position "
        "rule, 10-character option-text cap and 'answer is X' rule",
        aliases=("head",),
    ),
}
"""Supported VLMEvalKit versions, by short commit."""

DEFAULT_TAMPER_REFERENCE = "eb58e9e"
"""The integration commit: the version the paper's numbers came from."""

MMR_REFERENCE: dict[str, Any] = {
    "benchmark": "mmr",
    "name": "b85b573",
    "repo": MMR_REPO,
    "commit": "b85b573034be5b97a06d230f3724b8259500cf7d",
    "date": "2024-12-18",
    "description": "MMR authors' scoring scripts (calculation_mmr.py, models/calculation.py)",
}
"""The MMR authors' scripts (one version)."""


_REGISTRY: Registry[TamperReference] = Registry("reference version")
for _ref in TAMPER_REFERENCES.values():
    for _name in (_ref.name, _ref.commit, *_ref.aliases):
        _REGISTRY.register(_name, _ref)


def reference_names() -> list[str]:
    """Every accepted ``--reference`` value but full commits (short commits, then aliases)."""
    return [*TAMPER_REFERENCES, *(a for r in TAMPER_REFERENCES.values() for a in r.aliases)]


def tamper_reference(name: str | None = None) -> TamperReference:
    """The VLMEvalKit version called ``name`` (short or full commit, or an alias).

    ``None`` gives the default (:data:`DEFAULT_TAMPER_REFERENCE`).

    Raises:
        UnknownNameError: no such version (the message suggests close names).
    """
    return _REGISTRY.get((name or DEFAULT_TAMPER_REFERENCE).strip().lower())


def reference_block(benchmark: str, reference: str | None = None) -> dict[str, Any] | None:
    """What ``run.json`` / ``metrics.json`` record as the reference an official run reproduces.

    The family's ``reference`` (:mod:`mmrobust.families`): ``tamper``: the VLMEvalKit
    version; ``mmr``: the MMR authors' scripts; ``None`` for other benchmarks (they have
    no reference scorer).

    Raises:
        UnknownNameError: unknown ``reference``.
    """
    family = find_family(benchmark)
    if family is None or family.reference is None:
        return None
    return family.reference(reference)


def reference_versions(
    prompt_reference: str | None, decision_block: Mapping[str, Any] | None
) -> dict[str, str | None]:
    """The two versions an official tamper run names, plainly (``metrics.json`` ``run``).

    ``prompt_reference``: the VLMEvalKit version whose prompt (system text) the model was
    asked with at ``eval`` time; ``decision_reference``: the version whose decision rules
    scored the stored replies. They differ after ``rescore --reference head`` of a run asked
    at ``eb58e9e``: the replies are not asked again, only re-decided.
    """
    decision = None
    if decision_block is not None and decision_block.get("name") in TAMPER_REFERENCES:
        decision = decision_block.get("name")  # a VLMEvalKit version (not the MMR scripts)
    return {"prompt_reference": prompt_reference, "decision_reference": decision}


# --------------------------------------------------------------------------- spreadsheet round trip

ReplyPath = Literal["api", "local"]
"""How a reply reached the reference: through its OpenAI API wrapper, or from a local model."""

XLSX_CELL_LIMIT = 32767
"""Characters an xlsx cell holds; the xlsxwriter engine cuts a longer string (D1)."""

_XLSX_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")


def sheet_round_trip(reply: str, *, reply_path: ReplyPath = "local") -> str:
    """The reply as VLMEvalKit's scorer reads it back (docs/official.md, D1-D4).

    VLMEvalKit collects the predictions, writes them to ``<model>_MVTamperBench.xlsx`` and
    scores what ``pandas.read_excel`` gives back (``vlmeval/inference_video.py``
    ``infer_data_job_video``; ``vlmeval/dataset/tamperbench.py`` ``evaluate``: ``load``
    at line 482 at eb58e9e0, line 493 at e8e78f05). In order:

    * **D3** ``reply_path="api"``: the OpenAI wrapper returns
      ``resp_struct['choices'][0]['message']['content'].strip()``
      (``vlmeval/api/gpt.py`` line 213 at eb58e9e0, line 319 at e8e78f05): leading and
      trailing whitespace go (``"None\n"`` -> ``"None"``, then a missing value;
      ``"Yes\n\n\n\n\n\n\n\n"`` -> ``"Yes"``, under head's 10-character cap). A
      ``"local"`` reply is taken as the backend returned it: mmrobust's ``hf`` backend
      strips its decoded text, as VLMEvalKit's LLaVA class does
      (``vlmeval/vlm/llava/llava.py`` lines 177-179 at eb58e9e0), so the two paths differ
      only for other local backends.
    * **D1** the xlsxwriter engine cuts a string to 32,767 characters
      (``vlmeval/smp/file.py`` ``dump``: ``dump_xlsx`` lines 148-149 at eb58e9e0, 165-171 at
      e8e78f05; xlsxwriter ``Worksheet._write_string``): a 34k-character reasoning loses its
      ``"Final answer: B"``.
    * **D2** the writer stores a control character other than tab and line feed as the text
      ``_xHHHH_`` (``"\r"`` -> ``"_x000D_"``) and openpyxl reads it back that way, so
      ``"Answer: B\r\nThe video is smooth."`` has no token ``B`` any more.
    * **D4** (not modelled) a reply starting with ``=`` is written as a formula at
      eb58e9e0 (xlsxwriter's default ``strings_to_formulas``), read back as ``0``, and
      ``FAIL_MSG in pred`` (``tamperbench.py`` line 500) raises ``TypeError`` for the whole
      run; e8e78f05 writes strings as strings (``strings_to_formulas: False``). Official
      mode scores the reply's text at both versions, as e8e78f05 does.

    Verified by writing and reading replies with pandas 3.1, xlsxwriter 3.3.1 and
    openpyxl 3.1.5 (the engines VLMEvalKit uses); ``tests/test_official_sheet.py``.

    Args:
        reply: the stored reply.
        reply_path: ``"api"`` or ``"local"`` (:data:`ReplyPath`).
    """
    text = reply.strip() if reply_path == "api" else reply
    text = text[:XLSX_CELL_LIMIT]
    return _XLSX_CONTROL.sub(lambda m: f"_x{ord(m.group()):04X}_", text)


API_BACKENDS: frozenset[str] = frozenset({"openai", "anthropic"})
"""Backends whose replies come from an HTTP API. VLMEvalKit's wrappers for both strip the
reply: ``vlmeval/api/gpt.py`` (line 213 at eb58e9e0, 319 at e8e78f05) and
``vlmeval/api/claude.py`` (lines 132-134 at eb58e9e0, 140-142 at e8e78f05)."""


def reply_path_for(model_spec: str | None) -> ReplyPath:
    """``"api"`` for an HTTP API backend (``openai:...``), else ``"local"``.

    The spec's backend name decides (``run.json`` ``config.model``), so ``rescore`` reads
    a stored reply the way ``eval`` did.
    """
    backend = (model_spec or "").partition(":")[0].strip().lower()
    return "api" if backend in API_BACKENDS else "local"


# --------------------------------------------------------------------------- tamper decision

Outcome = Literal["correct", "wrong", "failed"]

FAILED_MESSAGE = "Failed to obtain answer via API."
"""VLMEvalKit's placeholder reply for a failed API call (``FAIL_MSG``)."""

_REFUSALS: tuple[str, ...] = (
    "Sorry, I can't help with images of people yet.",
    "I can't process this file.",
    "I'm sorry, but without the image provided",
    "Cannot determine the answer",
)
"""Phrases for which VLMEvalKit's option search answers "no option" ('Z')."""

MISSING_VALUE_STRINGS: frozenset[str] = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
     "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}
)  # fmt: skip
"""Cell texts pandas (2.0 and later) reads back as a missing value.

VLMEvalKit writes the replies to a spreadsheet and reads them back with
``pandas.read_excel`` before scoring, so a reply that *is* one of these strings
(``"None"``, ``"NA"``, ``"null"``...) becomes an empty cell and is never
scored, exactly like an empty reply. pandas 1.x did not count ``"None"``."""

_SEPARATORS = ".()[],:;!*#{}"
_ANSWER_IS = re.compile(r"(?:correct\s+)?answer\s+is\s+\**([ABCD])\**", re.IGNORECASE)


@dataclass(frozen=True)
class Decision:
    """The reference's verdict on one reply for one ground truth.

    Attributes:
        outcome: ``correct`` (score 1), ``wrong`` (score 0) or ``failed`` (never
            scored: an empty cell, or the API-failure placeholder; the F1 counts it
            wrong and the accuracy ratings count it right).
        rule: which step decided, e.g. ``"official:first-token"``.
    """

    outcome: Outcome
    rule: str


def _infer_letter(reply: str, options: Mapping[str, str], ref: TamperReference) -> str | None:
    """Step 1 of :func:`infer_option` (the option letter), or ``None``."""
    if FAILED_MESSAGE.rstrip(".") in reply:  # the placeholder skips this step only
        return None
    if any(phrase in reply for phrase in _REFUSALS):
        return "Z"
    spaced = reply
    for ch in _SEPARATORS:
        spaced = spaced.replace(ch, " ")
    tokens = spaced.split()
    named = [k for k in options if k in tokens]
    if len(named) == 1:
        letter = named[0]
        if not ref.option_position_rule or tokens.index(letter) > len(tokens) - 5:
            return letter
    elif not named and "Z" in tokens:
        return "Z"
    if ref.verbose_answer_rule:
        m = _ANSWER_IS.search(reply)
        if m and m.group(1).upper() in options:
            return m.group(1).upper()
    return None


def infer_option(reply: str, options: Mapping[str, str], ref: TamperReference) -> str | None:
    """VLMEvalKit's rule-based answer search (exact-matching policy, no LLM judge).

    Two steps; the first that names something wins:

    1. *Option letter.* A refusal phrase gives ``"Z"`` (no option). Otherwise
       the reply's brackets and punctuation ``.()[],:;!*#{}`` become spaces and
       it is split on whitespace; if exactly one option letter (case-sensitive)
       is a token, that letter (``ref.option_position_rule``: only when its first
       occurrence is among the last four tokens); if no letter is a token but
       ``Z`` is, ``"Z"``. ``ref.verbose_answer_rule``: then ``"answer is X"``
       (any case, optional ``**``) names X.
    2. *Option text.* The reply lower-cased contains the text of exactly one
       option as a substring (``"not sure"`` contains ``"no"``);
       ``ref.option_text_cap``: not tried when the reply is longer than twice the
       summed option-text lengths.

    Returns:
        an option letter, ``"Z"``, or ``None`` (nothing found).
    """
    letter = _infer_letter(reply, options, ref)
    if letter is not None:
        return letter
    lower = reply.lower()
    if ref.option_text_cap and len(lower) > 2 * sum(len(str(v)) for v in options.values()):
        return None
    hits = [k for k, v in options.items() if str(v).lower() in lower]
    return hits[0] if len(hits) == 1 else None


def tamper_decision(
    reply: str, truth: str, options: Mapping[str, str], ref: TamperReference
) -> Decision:
    """Whether VLMEvalKit's MVTamperBench scorer counts ``reply`` right for ``truth``.

    The reference never extracts "the" answer: it tests the reply against the
    ground truth it is scored on, written ``"(x) text"``, so a reply can be
    right for either truth (``")"``, ``"b) Yes"``). Steps (``tamperbench.py``
    ``evaluate`` and ``utils/tamperbench.py`` ``check_ans_with_model``):

    0. An empty reply is an empty cell in the prediction sheet, which the
       scorer skips (``failed``); so is a reply that pandas reads back as a
       missing value (:data:`MISSING_VALUE_STRINGS`: ``"None"``, ``"NA"``...).
       A reply containing the API-failure placeholder gets score -1 (``failed``).
    1. The first space-separated token of the reply, lower-cased and stripped,
       with every ``"."`` removed, is a substring of ``"(x)"``: right.
    2. ``"(x)"`` is a substring of that token (dots kept): right.
    3. The rule-based search (:func:`infer_option`) names ``x``: right.
    4. Otherwise wrong (score 0).

    Args:
        reply: the raw reply (after the ``"Best option:("`` prefill, if any).
        truth: ground-truth option letter (a key of ``options``).
        options: letter -> option text, as shown.
        ref: the reference version.

    Raises:
        KeyError: ``truth`` is not an option.
    """
    if reply == "":
        return Decision("failed", "official:empty-reply")
    if reply in MISSING_VALUE_STRINGS:
        return Decision("failed", "official:missing-value")
    if FAILED_MESSAGE in reply:
        return Decision("failed", "official:api-failure-text")
    gt_option = f"({truth}) {options[truth]}".lower().strip().split(" ")[0]
    token = reply.lower().strip().split(" ")[0]
    if token.replace(".", "") in gt_option:
        return Decision("correct", "official:first-token")
    if gt_option in token:
        return Decision("correct", "official:first-token-contains-truth")
    if infer_option(reply, options, ref) == truth:
        return Decision("correct", "official:rule-search")
    return Decision("wrong", "official:no-match")


# --------------------------------------------------------------------------- MMR pairs


def mmr_pair_outcome(
    first_right: bool, second_right: bool, first_type: str, second_type: str
) -> str:
    """The MMR scorer's verdict on two consecutive records (``calculate_mc``).

    Records are paired by file position (0-1, 2-3, ...). Both right: ``UR``.
    ``UF`` when one is right and the other wrong *and the right one is labelled
    ``POS``*: so a pair labelled ``POS``/``POS`` counts both mixed outcomes as
    fragile, and a ``NEG``/``NEG`` pair neither. The script does not name the
    other outcomes; we call a remaining mixed pair ``NR`` and both wrong ``NF``.
    """
    if first_right and second_right:
        return "UR"
    if (first_right and not second_right and first_type == "POS") or (
        second_right and not first_right and second_type == "POS"
    ):
        return "UF"
    if first_right or second_right:
        return "NR"
    return "NF"


__all__ = [
    "API_BACKENDS",
    "DEFAULT_TAMPER_REFERENCE",
    "FAILED_MESSAGE",
    "MISSING_VALUE_STRINGS",
    "MMR_REFERENCE",
    "MMR_REPO",
    "TAMPER_REFERENCES",
    "VLMEVALKIT_REPO",
    "XLSX_CELL_LIMIT",
    "Decision",
    "Outcome",
    "ReplyPath",
    "TamperReference",
    "infer_option",
    "mmr_pair_outcome",
    "reference_block",
    "reference_names",
    "reference_versions",
    "reply_path_for",
    "sheet_round_trip",
    "tamper_decision",
    "tamper_reference",
]
