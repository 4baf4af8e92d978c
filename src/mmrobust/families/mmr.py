"""The ``mmr`` family: MMR leading questions (arXiv:2406.10638).

Paired positive / misleading multiple-choice questions on one image; Robustness
Accuracy and Misleading Rate per category (MMR section 3, eq. 1-2; maths in
:mod:`mmrobust.metrics.mmr`). MMR has no F1: a failed answer, whatever its
status, is not right, and its pair is scored by that rule (docs/mmr.md). Report:
the Table 2 layout and each run's accuracy plot (:mod:`mmrobust.report.mmr`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmrobust.families.base import BenchmarkFamily, CardSection, ScoreOptions, lazy, resolve


def _options(o: ScoreOptions) -> dict[str, Any]:
    return {
        "n_boot": o.n_resamples,
        "seed": o.seed,
        "defects": list(o.defects),
        "pairing": "position" if o.official else "content",  # the reference pairs 0-1, 2-3
    }


def failure_rule(failures: str) -> str:
    """How failed answers count in MMR, whatever ``--failures`` says (docs/mmr.md)."""
    return "a failed answer (parse failure or error) counts as not right; MMR has no F1"


def official_extract(
    text: str, options: Mapping[str, str], answer: str | None = None, reference: str | None = None
) -> Any:
    """The MMR scripts' extractor (fixed A > B > C > D priority), for ``--extract official``."""
    return lazy("mmrobust.extract:extract_official_mmr")(text, options)


def _reference(name: str | None) -> dict[str, Any]:
    return dict(resolve("mmrobust.official:MMR_REFERENCE"))


def _released(info: Mapping[str, Any]) -> bool:
    check: bool = lazy("mmrobust.report.mmr:is_released_run")(info)
    return check


MMR = BenchmarkFamily(
    id="mmr",
    title="MMR leading questions",
    score=lazy("mmrobust.metrics.mmr:mmr_metrics"),
    score_options=_options,
    failure_rule=failure_rule,
    default_template="mmr",
    summary=lazy("mmrobust.report.mmr:summary_lines"),
    headline=lazy("mmrobust.report.mmr:headline"),
    markdown=lazy("mmrobust.report.mmr:markdown_section"),
    leaderboards=lazy("mmrobust.report.mmr:leaderboards"),
    paired=True,
    order=40,
    browser_rank=1,
    media_word="images",
    official_extract=official_extract,
    reference=_reference,
    published=_released,
    card=CardSection("mmr"),
)
"""MMR: ``Sample.benchmark == "mmr"``."""

__all__ = ["MMR", "failure_rule", "official_extract"]
