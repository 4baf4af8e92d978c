"""The ``tamper`` family: MVTamperBench tamper detection (arXiv:2412.19794).

Yes/No "was this video tampered with?" per clip; F1 with tampered = positive,
per tamper type on that type's clips plus all originals, macro-averaged
(paper section 4.1; maths in :mod:`mmrobust.metrics.tamper`). Report: the Table 7
layout, per task x type F1, ablations (position, duration, prompt) in
:mod:`mmrobust.report.tamper`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmrobust.families.base import BenchmarkFamily, CardSection, ScoreOptions, lazy


def _options(o: ScoreOptions) -> dict[str, Any]:
    return {
        "failures": o.failures,
        "n_resamples": o.n_resamples,
        "seed": o.seed,
        "official": o.official and o.failures == "wrong",  # the reference's accuracy table
    }


def failure_rule(failures: str) -> str:
    """How failed answers count in tamper F1 (docs/failures.md)."""
    if failures == "wrong":
        return "parse failures and errors counted wrong in F1 (--failures wrong)"
    return "parse failures and errors left out of F1, counted in their rates"


def _reference(name: str | None) -> dict[str, Any]:
    described: dict[str, Any] = lazy("mmrobust.official:tamper_reference")(name).describe()
    return described


def _released(info: Mapping[str, Any]) -> bool:
    check: bool = lazy("mmrobust.report.tamper:is_released_run")(info)
    return check


TAMPER = BenchmarkFamily(
    id="tamper",
    title="MVTamperBench tamper detection",
    score=lazy("mmrobust.metrics.tamper:tamper_metrics"),
    score_options=_options,
    failure_rule=failure_rule,
    default_template="structured",
    summary=lazy("mmrobust.report.tables:tamper_summary_lines"),
    headline=lazy("mmrobust.report.tamper:headline"),
    markdown=lazy("mmrobust.report.tamper:markdown_section"),
    leaderboards=lazy("mmrobust.report.tamper:leaderboards"),
    compare_notes=lazy("mmrobust.report.tamper:compare_notes"),
    streams=True,
    order=0,
    browser_rank=0,
    tamper_clips=True,
    official_prompt=True,
    reference=_reference,
    published=_released,
    card=CardSection("detection"),
)
"""MVTamperBench detection: ``Sample.benchmark == "tamper"``."""

__all__ = ["TAMPER", "failure_rule"]
