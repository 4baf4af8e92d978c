"""``Sample`` (the one typed question every loader produces) and ``Window`` (DESIGN.md, "The flow").

A sample is one question about one piece of media: a tampered or original
clip (MVTamperBench), one question of an MMR pair, or a text-only question.
A window is frames ``[start_frame, end_frame)`` of one clip's timeline; it is
called ``window`` on every value that carries it (``Sample``, ``StoredRow``,
``ScoredRecord``); only the manifest file names its two timelines
(``window_source``, ``window_output``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mmrobust.schema.benchmarks import check_benchmark
from mmrobust.schema.vocab import TAMPER_ORIGINAL

Benchmark = str
"""A benchmark family's id (``mmrobust.families``): "tamper", "mmr", "generic", the
``tamper-*`` questions of ``--task type|when|leading`` (``mmrobust.tasks``) about tamper
clips, or a family a user registered (``mmrobust.families.register_family``)."""
Polarity = Literal["positive", "negative"]
MediaKind = Literal["video", "image", "text"]
"""What one sample shows a model (:attr:`Sample.media_kind`): a video, an image, or no media
(a text-only question; any sample under ``--text-only``)."""


class Window(BaseModel):
    """A tamper window in one timeline: frames ``[start_frame, end_frame)``, seconds ``[start_s, end_s)``.

    ``end_frame == start_frame`` is an empty window (a ``dropping`` seam in
    the output timeline: the frames before ``start_frame`` and from
    ``start_frame`` on were not adjacent in the source).
    """

    model_config = ConfigDict(frozen=True)

    start_frame: int = Field(ge=0)
    end_frame: int = Field(ge=0)
    start_s: float = Field(ge=0)
    end_s: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.end_frame < self.start_frame or self.end_s < self.start_s:
            raise ValueError("window end precedes its start")
        return self

    @property
    def n_frames(self) -> int:
        """Length in frames."""
        return self.end_frame - self.start_frame


class Sample(BaseModel):
    """One question about one piece of media.

    Attributes:
        id: unique within the dataset; the results store keys on it.
        benchmark: which metric family scores it ("tamper", "mmr", "generic", or a
            task's "tamper-type", "tamper-when", "tamper-leading").
        video: path of the clip, or ``None``.
        image: path of the image, or ``None``.
        question: the question stem, without options or instructions.
        options: option letter -> option text, in display order (``{"A": "Yes", "B": "No"}``).
        answer: the ground-truth option letter (a key of ``options``).
        group: cluster id for bootstrap resampling and pairing: the source
            video of a tampered clip, the pair id of an MMR question.
        task: MVTamperBench task name (e.g. "action_sequence"), if any.
        tamper_type: effect name ("dropping", ..., or "original"), if any.
        window: the tamper window in the clip's own (output) timeline, if any.
        category: MMR category display name (e.g. "Color/Texture"), if any.
        polarity: MMR "positive" (correct premise) or "negative" (leading question).
        prompt: a full prompt text that overrides the template (MMR records
            carry their own question with options), or ``None``.
        error: a loader-detected per-sample problem (missing or ambiguous
            media); the runner records it as ``data_error`` without calling the model.
        meta: anything else the loader knows (fps, source path, record index).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    benchmark: Benchmark = "generic"
    video: Path | None = None
    image: Path | None = None
    question: str
    options: dict[str, str]
    answer: str
    group: str = ""
    task: str | None = None
    tamper_type: str | None = None
    window: Window | None = None
    category: str | None = None
    polarity: Polarity | None = None
    prompt: str | None = None
    error: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("benchmark")
    @classmethod
    def _known_benchmark(cls, value: str) -> str:
        # a registered family (schema.benchmarks: lazy entries, no import of mmrobust.families)
        return check_benchmark(value)

    @model_validator(mode="after")
    def _answer_is_an_option(self) -> Sample:
        if self.answer not in self.options:
            raise ValueError(
                f"sample {self.id!r}: answer {self.answer!r} is not one of {list(self.options)}"
            )
        return self

    @property
    def media_kind(self) -> MediaKind:
        """What the sample shows a model: ``"video"``, ``"image"`` or ``"text"`` (no media)."""
        return "video" if self.video is not None else "image" if self.image is not None else "text"

    @property
    def answer_text(self) -> str:
        """Text of the ground-truth option (e.g. "Yes")."""
        return self.options[self.answer]


__all__ = ["TAMPER_ORIGINAL", "Benchmark", "MediaKind", "Polarity", "Sample", "Window"]
