"""The leak audit's scores over arrays: F1 per tamper type and overall, balanced accuracy.

:class:`ArrayScorer` gives what :func:`mmrobust.audit.benchmark_scores` gives (the benchmark's
metric, MVTamperBench section 4.1: F1 per type on that type's clips plus all originals, their
mean), for many prediction vectors over the same samples, without building a
``ScoredRecord`` per row and prediction (8% of an audit's CPU on 20,922 clips, issue 32).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mmrobust.schema import TAMPER_ORIGINAL, Sample


class ArrayScorer:
    """:func:`mmrobust.audit.benchmark_scores` over arrays (issue 32): the samples' truths and types are read
    once, each prediction vector is scored with NumPy sums and the same
    ``scores_from_counts`` as ``tamper_metrics``, so the values are identical without one
    ``ScoredRecord`` per row and prediction."""

    def __init__(self, samples: Sequence[Sample]) -> None:
        from mmrobust.metrics.tamper import CANONICAL_TYPES, normalise_type

        norm = [normalise_type(s.tamper_type) for s in samples]
        raw_yes = [s.tamper_type != TAMPER_ORIGINAL for s in samples]  # the answer: A = Yes
        # truth_positive: the normalised type, else the answer text ("Yes" when not original)
        self.truth = np.array(
            [
                n != TAMPER_ORIGINAL if n is not None else y
                for n, y in zip(norm, raw_yes, strict=True)
            ],
            bool,
        )
        self.answer_yes = np.array(raw_yes, dtype=bool)
        present = {n for n in norm if n and n != TAMPER_ORIGINAL}
        known = [t for t in CANONICAL_TYPES if t in present]
        self.types = known + sorted(present - set(known))
        original = np.array([n == TAMPER_ORIGINAL for n in norm], dtype=bool)
        self.masks = [np.array([n == t for n in norm], bool) | original for t in self.types]

    def __call__(self, predicted: Sequence[bool] | np.ndarray) -> dict[str, Any]:
        """The dict ``benchmark_scores(samples, predicted)`` returns for ``predicted`` (True = "Yes")."""
        from mmrobust.metrics.tamper import scores_from_counts

        said_yes = np.asarray(predicted, dtype=bool)
        truth = self.truth
        pred = np.where(said_yes == self.answer_yes, truth, ~truth)  # right answer: the truth
        cells = (truth & pred, ~truth & pred, truth & ~pred, ~truth & ~pred)
        f1: dict[str, float | None] = {}
        for t, mask in zip(self.types, self.masks, strict=True):
            if not truth[mask].any():
                f1[t] = None
                continue
            tp, fp, fn, tn = (int(np.count_nonzero(c & mask)) for c in cells)
            f1[t] = scores_from_counts(tp, fp, fn, tn)["f1"]
        if self.types:
            values = [v for t in self.types if (v := f1[t]) is not None]
            f1["overall"] = float(np.mean(values)) if len(values) == len(self.types) else None
        every = scores_from_counts(*(int(np.count_nonzero(c)) for c in cells))
        return {
            "f1": f1.get("overall"),
            "f1_per_type": {k: v for k, v in f1.items() if k != "overall"},
            "balanced_accuracy": every["balanced_accuracy"],
            "accuracy": every["accuracy"],
        }


__all__ = ["ArrayScorer"]
