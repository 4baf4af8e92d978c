"""``ScoredRecord``: one stored answer joined with what metrics need of its sample.

Metrics are pure functions over a sequence of these (DESIGN.md: "metrics
(pure, over stored rows)"), so a run can be re-scored without the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mmrobust.schema import Window
from mmrobust.status import Status


@dataclass(frozen=True)
class ScoredRecord:
    """One sample's ground truth and the model's extracted answer.

    Attributes:
        sample_id: ``Sample.id``.
        benchmark: ``Sample.benchmark``.
        group: cluster id (source video, MMR pair id).
        answer: ground-truth letter.
        options: letter -> option text, as shown to the model.
        predicted: extracted letter, or ``None`` when ``status`` is not ``ok``.
        status: typed outcome (``ok``, ``parse_fail``, errors).
        task, tamper_type, category, polarity: copied from the sample.
        window_covered: whether the sampled frames cover the tamper window
            (:func:`mmrobust.media.sampling.window_coverage`, dropping seams included)
            (``None`` when not applicable: originals, images, dense decoding).
        window: the tamper window in the clip's own timeline: the sample's, or the one
            derived by the released rule (``StoredRow.window``); ``None`` when none is known.
        extra: backend extras (detector score, predicted type and window ``pred_window``).
        rule: the extraction rule that decided (``Extraction.rule``), or ``None``.
        meta: the sample's ``meta`` (MMR: ``record_index`` and ``question_type``,
            which the reference's positional pairing reads).
    """

    sample_id: str
    benchmark: str
    group: str
    answer: str
    options: Mapping[str, str]
    predicted: str | None
    status: Status
    task: str | None = None
    tamper_type: str | None = None
    category: str | None = None
    polarity: str | None = None
    window_covered: bool | None = None
    window: Window | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    rule: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        """True when an answer was extracted and equals the ground truth."""
        return self.status is Status.OK and self.predicted == self.answer

    @property
    def answer_text(self) -> str:
        """Text of the ground-truth option."""
        return self.options[self.answer]

    @property
    def predicted_text(self) -> str | None:
        """Text of the extracted option, or ``None``."""
        if self.predicted is None:
            return None
        return self.options.get(self.predicted)


__all__ = ["ScoredRecord"]
