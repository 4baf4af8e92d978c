"""The ``consistency`` family: (clean, perturbed) pairs written by ``mmrobust perturb``.

Accuracy clean and perturbed, the accuracy drop (paired bootstrap CI over sources, McNemar's
exact p), flip rate, resist rate and the typographic attack success rate, overall, per effect
and per severity (maths in :mod:`mmrobust.metrics.consistency`; report and card section in
:mod:`mmrobust.report.consistency`; docs/consistency.md).
"""

from __future__ import annotations

from typing import Any

from mmrobust.families.base import BenchmarkFamily, CardSection, ScoreOptions, lazy


def _options(o: ScoreOptions) -> dict[str, Any]:
    return {"n_resamples": o.n_resamples, "seed": o.seed}


def failure_rule(failures: str) -> str:
    """How failed answers count in the consistency figures, whatever ``--failures`` says."""
    return (
        "a failed answer counts as wrong, and as an answer of its own when a pair's two "
        "answers are compared (a failure on one side only is a flip)"
    )


CONSISTENCY = BenchmarkFamily(
    id="consistency",
    title="answer consistency under perturbation",
    score=lazy("mmrobust.metrics.consistency:consistency_metrics"),
    score_options=_options,
    failure_rule=failure_rule,
    default_template="plain",
    summary=lazy("mmrobust.report.consistency:summary_lines"),
    headline=lazy("mmrobust.report.consistency:headline"),
    markdown=lazy("mmrobust.report.consistency:markdown_section"),
    leaderboards=lazy("mmrobust.report.consistency:leaderboards"),
    paired=True,
    order=45,
    media_word="images",
    card=CardSection(
        "consistency",
        title="Answer consistency under perturbation",
        entries=lazy("mmrobust.report.consistency:card_entries"),
        columns=(
            ("effect", "effect"),
            ("accuracy_drop", "accuracy drop"),
            ("flip_rate", "flip rate"),
            ("resist_rate", "resist rate"),
            ("attack_success_rate", "typographic attack success"),
            ("pairs", "pairs"),
        ),
        chance=lazy("mmrobust.report.consistency:card_chance"),
        note=(
            "Pairs of one question on the clean and the perturbed image or clip. Flip rate: "
            "answer changed; resist rate: still right, of those right on clean. Grey: a "
            "uniform guess per image (random) and one fixed answer (constant)."
        ),
    ),
)
"""Perturbed question sets: ``Sample.benchmark == "consistency"``."""

__all__ = ["CONSISTENCY", "failure_rule"]
