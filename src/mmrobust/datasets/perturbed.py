"""The ``perturb`` format: a folder written by ``mmrobust perturb`` (``perturb.json`` beside
``questions.jsonl``), read as the generic JSONL it holds, named after the folder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from mmrobust.datasets.base import Dataset, DatasetError
from mmrobust.datasets.jsonl import load_jsonl

QUESTIONS = "questions.jsonl"
SUMMARY = "perturb.json"


def is_perturbed_set(path: Path) -> bool:
    """``path`` is a folder ``perturb`` wrote (its ``perturb.json`` and ``questions.jsonl``)."""
    return path.is_dir() and (path / SUMMARY).is_file() and (path / QUESTIONS).is_file()


def load_perturbed(path: str | Path, **options: Any) -> Dataset:
    """The questions of a perturbed set (the folder, or its ``questions.jsonl``).

    Raises:
        DatasetError: the folder holds no ``questions.jsonl`` (an unfinished build).
    """
    p = Path(path).expanduser()
    file = p / QUESTIONS if p.is_dir() else p
    if not file.is_file():
        raise DatasetError(f"{p}: no {QUESTIONS}; finish the build with `mmrobust perturb`")
    options.pop("images", None)
    dataset = load_jsonl(file, **options)
    name = file.parent.name if file.name == QUESTIONS else file.stem
    return replace(dataset, name=name)


__all__ = ["is_perturbed_set", "load_perturbed"]
