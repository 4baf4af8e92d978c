"""Compatibility re-export: ``Sample``, ``Window`` and friends live in :mod:`mmrobust.schema`.

Kept so that ``from mmrobust.datasets.schema import Sample`` (users' notebooks,
older code) keeps working; new code imports :mod:`mmrobust.schema`.
"""

from __future__ import annotations

from mmrobust.schema import TAMPER_ORIGINAL, Benchmark, Polarity, Sample, Window

__all__ = ["TAMPER_ORIGINAL", "Benchmark", "Polarity", "Sample", "Window"]
