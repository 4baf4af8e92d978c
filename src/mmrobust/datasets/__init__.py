"""Samples and loaders: tamper manifest, MVTamperBench layout, VLMEvalKit TSV, JSONL, MMR."""

from __future__ import annotations

from mmrobust.datasets.schema import TAMPER_ORIGINAL, Sample, Window

__all__ = ["TAMPER_ORIGINAL", "Sample", "Window"]
