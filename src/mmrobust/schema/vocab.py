"""The shared vocabulary: tamper effect names and the benchmarks' fixed question texts.

Effect names (MVTamperBench, arXiv:2412.19794, section 3.3 and Table 7):

* canonical names are ours (``rotation``); every value that names an effect
  (``Sample.tamper_type``, ``ManifestEntry.tamper_type``, metric keys) uses them;
* aliases are other spellings met in data (the released annotations' ``rotate``,
  the short ``drop`` / ``mask``), mapped to canonical names by :func:`normalise_type`;
* official tokens are the released dataset's ``tamper_type`` values and file-name
  tokens (``<stem>_middle_tampered_rotate_1sec.mp4``; ``../shared/data/mvtamperbench/README.md``);
* Table 7 labels are the paper's column headings (Drop, Mask, Repeat, Rotate, Substitute).

This module is the one place that lists them; loaders, the builder's official
layout, metrics, tasks and report read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping

TAMPER_ORIGINAL = "original"
"""``tamper_type`` of an untampered clip (the negative class of MVTamperBench)."""

CANONICAL_TYPES: tuple[str, ...] = ("dropping", "masking", "repetition", "rotation", "substitution")
"""The paper's five effects, in the order of its Table 7 (Drop, Mask, Repeat, Rotate, Substitute)."""

TYPE_ALIASES: Mapping[str, str] = {"rotate": "rotation", "drop": "dropping", "mask": "masking"}
"""Other spellings of effect names (the released annotations' ``rotate``), mapped to ours."""

OFFICIAL_TOKENS: Mapping[str, str] = {
    TAMPER_ORIGINAL: "original",
    "dropping": "dropping",
    "masking": "masking",
    "repetition": "repetition",
    "rotation": "rotate",
    "substitution": "substitution",
}
"""Canonical name -> the released dataset's ``tamper_type`` token (only ``rotation`` differs).
Effects outside the paper's five have no token (they are not in the released layout)."""

TABLE7_LABELS: tuple[tuple[str, str], ...] = (
    ("dropping", "Drop"),
    ("masking", "Mask"),
    ("repetition", "Repeat"),
    ("rotation", "Rotate"),
    ("substitution", "Substitute"),
)
"""Canonical name -> the column heading of MVTamperBench Table 7, in its order."""


def normalise_type(name: str | None) -> str | None:
    """An effect name in canonical form: lower case, aliases mapped (``"Rotate"`` -> ``"rotation"``).

    Unknown names (effects of our own beyond the paper's five) are returned lower-cased.
    """
    if name is None:
        return None
    return TYPE_ALIASES.get(name.lower(), name.lower())


TAMPER_QUESTION = (
    "Does this video exhibit any signs of tampering, such as corruption, blackouts, "
    "rotated frames, repeated frames, or swapped frames?"
)
"""The benchmark's structured question (MVTamperBench section 4.1 / appendix A.2.2): the stem of
every tamper sample and the ``question`` of every row of the official layout; protocol text."""

YES_NO: Mapping[str, str] = {"A": "Yes", "B": "No"}
"""Tamper options in the paper's order: A = Yes (tampered), B = No. Copy before changing."""


__all__ = [
    "CANONICAL_TYPES",
    "OFFICIAL_TOKENS",
    "TABLE7_LABELS",
    "TAMPER_ORIGINAL",
    "TAMPER_QUESTION",
    "TYPE_ALIASES",
    "YES_NO",
    "normalise_type",
]
