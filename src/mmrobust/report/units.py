"""How numbers are shown: one convention for the console, ``report.md``, the CSV tables and HTML.

**Every score and rate is shown as a percentage**, rounded:

* F1 (per type and overall), precision, recall, accuracy, window coverage,
  parse-fail and error rates: one decimal (``97.1``). MVTamperBench Table 7
  prints F1 as a fraction with three decimals (``0.971``), which is the same
  precision.
* MMR RA, MR and the positive/negative accuracies: two decimals (``6.67``), as
  MMR Table 2 prints them.

Tables put the unit in the caption or the column heading ("F1, %"); single
values in running text carry a ``%`` sign. ``metrics.json`` keeps the raw,
unrounded values (tamper F1 and every rate as a fraction in [0, 1]; MMR RA/MR in
percent, as the metric is defined in the paper).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

MISSING = "–"
"""Shown for a value that does not exist (a type not covered, an undefined MR)."""

FRACTION_DIGITS = 1
"""Decimals of a percentage made from a fraction (F1, rates, coverage)."""

PERCENT_DIGITS = 2
"""Decimals of a value that is already a percentage (MMR RA/MR), as MMR Table 2."""


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def pct(fraction: Any, digits: int = FRACTION_DIGITS) -> str:
    """A fraction in [0, 1] as a percentage without the sign: ``0.9714`` -> ``"97.1"``."""
    return MISSING if _missing(fraction) else f"{100.0 * float(fraction):.{digits}f}"


def pct_sign(fraction: Any, digits: int = FRACTION_DIGITS) -> str:
    """A fraction as a percentage with the sign: ``0.0417`` -> ``"4.2%"``."""
    text = pct(fraction, digits)
    return text if text == MISSING else f"{text}%"


def percent(value: Any, digits: int = PERCENT_DIGITS) -> str:
    """A value already in percent (MMR RA/MR): ``6.666`` -> ``"6.67"``."""
    return MISSING if _missing(value) else f"{float(value):.{digits}f}"


def percent_sign(value: Any, digits: int = PERCENT_DIGITS) -> str:
    """A value already in percent with the sign: ``6.666`` -> ``"6.67%"``; a missing one
    is ``"–"`` (not ``"–%"``)."""
    text = percent(value, digits)
    return text if text == MISSING else f"{text}%"


def pct_interval(bounds: Sequence[float] | None, digits: int = FRACTION_DIGITS) -> str:
    """A 95% interval of fractions: ``[0.88, 1.0]`` -> ``"88.0–100.0"`` (``–`` if absent)."""
    if not bounds:
        return MISSING
    return f"{pct(bounds[0], digits)}–{pct(bounds[1], digits)}"


def percent_interval(bounds: Sequence[float] | None, digits: int = PERCENT_DIGITS) -> str:
    """A 95% interval of values in percent: ``[0.0, 20.83]`` -> ``"0.00–20.83"``."""
    if not bounds:
        return MISSING
    return f"{percent(bounds[0], digits)}–{percent(bounds[1], digits)}"


def rounded_pct(fraction: Any, digits: int = FRACTION_DIGITS) -> float | None:
    """A fraction as a rounded percentage number (CSV cells): ``0.97142`` -> ``97.1``."""
    return None if _missing(fraction) else round(100.0 * float(fraction), digits)


def rounded_percent(value: Any, digits: int = PERCENT_DIGITS) -> float | None:
    """A percentage rounded for a CSV cell: ``6.6666`` -> ``6.67``."""
    return None if _missing(value) else round(float(value), digits)


__all__ = [
    "FRACTION_DIGITS",
    "MISSING",
    "PERCENT_DIGITS",
    "pct",
    "pct_interval",
    "pct_sign",
    "percent",
    "percent_interval",
    "percent_sign",
    "rounded_pct",
    "rounded_percent",
]
