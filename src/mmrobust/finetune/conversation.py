"""Training samples as values: turns, conversations, the clip timing of video frames, problems.

Pure Python (no torch, no I/O). :mod:`mmrobust.finetune.data` reads files into these;
:mod:`mmrobust.finetune.collate` turns them into model inputs.

``video_metadata`` (LLaVA records of ``mmrobust tamper-data``): a record whose images
are the sampled frames of one clip may carry, beside ``"image"``, the clip's timing::

    "video_metadata": {"fps": 30.0, "frames_indices": [18, 56, ...],
                       "total_num_frames": 300, "duration": 10.0}

``fps`` is the source clip's frame rate, ``frames_indices`` the source frame index of
each image (one per image, in order, so a frame's time is ``index / fps`` seconds),
``total_num_frames`` the clip's decoded frame count (optional) and ``duration`` its
length in seconds (optional, informative). LLaVA readers that do not know the key
ignore it and see frames as images; ``finetune --video-input video`` gives such a
sample to the model as one native video with these times, as ``hf:`` evaluation does
with ``--model-arg video_input=video``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

IMAGE_MARK = "<image>"
"""Where an image goes in a LLaVA-format turn."""

ProblemKind = Literal[
    "malformed", "missing_image", "unreadable_image", "too_long", "no_answer_tokens", "unaligned"
]


@dataclass(frozen=True)
class Turn:
    """One message: ``role`` is ``system``, ``user`` or ``assistant``; ``text`` keeps ``<image>`` marks."""

    role: str
    text: str


@dataclass(frozen=True)
class VideoTiming:
    """When the frames of a conversation were taken in their source clip.

    Attributes:
        fps: the source clip's frame rate (frames per second, > 0).
        frames_indices: source frame index of each image, in image order (0-based).
        total_num_frames: frames in the source clip (``None``: not recorded).
    """

    fps: float
    frames_indices: tuple[int, ...]
    total_num_frames: int | None = None


def read_video_timing(raw: Any, n_images: int) -> VideoTiming | str:
    """A record's ``video_metadata`` value as :class:`VideoTiming`, or why not (pure).

    Returns:
        the timing, or a one-line reason: not an object, ``fps`` not a positive
        number, ``frames_indices`` not one non-negative integer per image,
        ``total_num_frames`` not an integer above the last index.
    """
    if not isinstance(raw, dict):
        return "'video_metadata' must be an object"
    fps, indices, total = raw.get("fps"), raw.get("frames_indices"), raw.get("total_num_frames")
    if isinstance(fps, bool) or not isinstance(fps, int | float) or not fps > 0:
        return "video_metadata.fps must be a positive number"
    if not isinstance(indices, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in indices
    ):
        return "video_metadata.frames_indices must be a list of frame indices"
    if len(indices) != n_images:
        return f"video_metadata has {len(indices)} frames_indices for {n_images} images"
    if total is not None and (
        isinstance(total, bool) or not isinstance(total, int) or total <= max(indices, default=-1)
    ):
        return "video_metadata.total_num_frames must be an integer above every frame index"
    return VideoTiming(float(fps), tuple(indices), total)


@dataclass(frozen=True)
class Conversation:
    """One training sample.

    Attributes:
        id: ``<file stem>:<record id or index>``.
        source: ``generated`` or ``extra``.
        images: image files, in the order of the ``<image>`` marks.
        turns: system? then user/assistant alternating, ending with assistant.
        polarity: ``positive`` / ``negative`` for generated MMR samples, else ``None``.
        video: the clip timing when ``images`` are the sampled frames of one video
            (the record's ``video_metadata``), else ``None``.
    """

    id: str
    source: str
    images: tuple[Path, ...]
    turns: tuple[Turn, ...]
    polarity: str | None = None
    video: VideoTiming | None = None

    @property
    def rounds(self) -> int:
        """Number of assistant turns (conversation rounds)."""
        return sum(t.role == "assistant" for t in self.turns)


@dataclass(frozen=True)
class Problem:
    """A record that is not trained on, and why (``kind`` counts; ``detail`` is one line)."""

    kind: ProblemKind
    id: str
    detail: str


@dataclass
class DataFile:
    """One input file: its path, sha256, format and record counts."""

    path: Path
    sha256: str
    format: Literal["llava", "mmr"]
    source: str
    records: int
    kept: int = 0


@dataclass
class DataReport:
    """What was read, composed and skipped (``problems``: every skipped record)."""

    files: list[DataFile] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    composition: str = "generated"
    rounds: int | None = None
    polarity: str = "both"
    samples: int = 0
    rounds_total: int = 0
    rounds_left_out: int = 0

    def counts(self) -> dict[str, int]:
        """Skipped records per problem kind."""
        return dict(sorted(Counter(p.kind for p in self.problems).items()))

    def summary(self, examples: int = 3) -> dict[str, Any]:
        """JSON-able summary: files with hashes, counts, and the first ``examples`` problems per kind."""
        first: dict[str, list[str]] = {}
        for problem in self.problems:
            items = first.setdefault(problem.kind, [])
            if len(items) < examples:
                items.append(f"{problem.id}: {problem.detail}")
        return {
            "files": [{**vars(f), "path": str(f.path)} for f in self.files],
            "composition": self.composition,
            "rounds": self.rounds,
            "polarity": self.polarity,
            "samples": self.samples,
            "rounds_total": self.rounds_total,
            "rounds_left_out": self.rounds_left_out,
            "skipped": self.counts(),
            "skipped_examples": first,
        }


__all__ = [
    "IMAGE_MARK",
    "Conversation",
    "DataFile",
    "DataReport",
    "Problem",
    "ProblemKind",
    "Turn",
    "VideoTiming",
    "read_video_timing",
]
