"""Samples and loaders: tamper manifest, MVTamperBench layout, VLMEvalKit TSV, JSONL, MMR.

``load_dataset(path, format=None, **options)`` returns a :class:`Dataset`;
formats live in the ``FORMATS`` registry (lazy, "did you mean" on typos).
"""

from __future__ import annotations

from mmrobust.datasets.base import (
    FORMATS,
    Dataset,
    DatasetError,
    detect_format,
    load_dataset,
)
from mmrobust.schema import TAMPER_ORIGINAL, Sample, Window

__all__ = [
    "FORMATS",
    "TAMPER_ORIGINAL",
    "Dataset",
    "DatasetError",
    "Sample",
    "Window",
    "detect_format",
    "load_dataset",
]
