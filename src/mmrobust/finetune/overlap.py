"""Is ``--eval-data`` held out? Samples it shares with the training data (pure Python, no torch).

An evaluation loss is a held-out figure only when no evaluation sample was trained on.
Three checks, each over every evaluation sample against every training sample:

* **sample id**: the same record id on both sides (LLaVA-style ids usually name the image);
* **media**: an image or video frame file of the same bytes (sha256), or of the same
  picture (below), so a re-encoded or re-saved copy, or a
  copy under another name, counts as the same media. Flat pictures (below) count only
  for a sample that has nothing else: a black frame shared by two unrelated clips does
  not make them the same, two copies of one plain-colour image do;
* **content**: the same conversation: its turns' text (case and runs of white space
  folded, ``<image>`` marks dropped) together with its media files' sha256, so a
  text-only sample copied to the other side is found too.

Same picture: the image decoded (OpenCV, reduced 2x at decode) and shrunk to 8 x 8 pixels
by area averaging (INTER_AREA): two pictures are the same when their thumbnails differ by
at most 2.5 (of 255) on average and 16 at most, per value. That survives re-encoding, a
change of size, container or format, and padding of the file (measured on a 128 x 96
picture: 0.27 on average for a JPEG q90 copy, 1.7 for a copy shrunk to 100 x 75 at JPEG
q75), and separates distinct photographs or frames by tens (46 between two of the test's
pictures). A
picture that is flat at that size (every thumbnail value within 8 of its mean: a black
or single-colour frame) is matched by its sha256 only. Thumbnails are indexed by their
per-channel mean (buckets of 8), so each lookup compares a few candidates, not all.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrobust.finetune.conversation import Conversation

_SPACE = re.compile(r"\s+")
_FLAT = 8  # thumbnail values within this many of their mean: flat
_MEAN_DIFF = 2.5  # the same picture: mean absolute thumbnail difference at most this
_MAX_DIFF = 16.0  # ... and no value further apart than this
_BUCKET = 8.0  # index width of a channel mean (>= 3 * _MEAN_DIFF: neighbours suffice)

Thumb = Any  # (8, 8, 3) float32 thumbnail


def thumbnail(data: bytes) -> Thumb | None:
    """The 8 x 8 thumbnail of an encoded picture, or ``None`` (not a picture, or flat)."""
    import cv2
    import numpy as np

    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_REDUCED_COLOR_2)
    if image is None or image.size == 0:
        return None
    thumb = cv2.resize(image, (8, 8), interpolation=cv2.INTER_AREA).astype(np.float32)
    if float(np.abs(thumb - thumb.mean()).max()) <= _FLAT:
        return None
    return thumb


def same_picture(a: Thumb, b: Thumb) -> bool:
    """Whether two thumbnails show the same picture (see the module docstring)."""
    import numpy as np

    diff = np.abs(a - b)
    return float(diff.mean()) <= _MEAN_DIFF and float(diff.max()) <= _MAX_DIFF


@dataclass
class MediaKeys:
    """Media files' sha256 and thumbnail, each file read once."""

    sha256: dict[Path, str] = field(default_factory=dict)
    thumbs: dict[Path, Thumb | None] = field(default_factory=dict)

    def of(self, path: Path) -> tuple[str, Thumb | None]:
        """``(sha256 hex, thumbnail or None)`` of one file (``missing:<path>`` if unreadable)."""
        if path not in self.sha256:
            try:
                data = path.read_bytes()
            except OSError:
                self.sha256[path], self.thumbs[path] = f"missing:{path}", None
            else:
                self.sha256[path] = hashlib.sha256(data).hexdigest()
                self.thumbs[path] = thumbnail(data)
        return self.sha256[path], self.thumbs[path]


@dataclass
class _Index:
    """The training side's media: sha256s, and thumbnails bucketed by channel mean."""

    shas: set[str] = field(default_factory=set)
    buckets: dict[tuple[int, ...], list[Thumb]] = field(default_factory=dict)

    @staticmethod
    def _key(thumb: Thumb) -> tuple[int, ...]:
        return tuple(int(m // _BUCKET) for m in thumb.mean(axis=(0, 1)))

    def add(self, sha: str, thumb: Thumb | None) -> None:
        self.shas.add(sha)
        if thumb is not None:
            self.buckets.setdefault(self._key(thumb), []).append(thumb)

    def has(self, sha: str, thumb: Thumb | None) -> bool:
        if sha in self.shas:
            return True
        if thumb is None:
            return False
        key = self._key(thumb)
        for near in itertools.product(*((k - 1, k, k + 1) for k in key)):
            if any(same_picture(thumb, t) for t in self.buckets.get(near, ())):
                return True
        return False


def media_of(conversation: Conversation, media: MediaKeys) -> list[tuple[str, Thumb | None]]:
    """The pictures that identify a conversation's media: those that are not flat; its flat
    ones (by sha256) when it has no other."""
    pictures = [media.of(path) for path in conversation.images]
    informative = [p for p in pictures if p[1] is not None]
    return informative or pictures


def content_key(conversation: Conversation, media: MediaKeys) -> str:
    """sha256 of a conversation's folded text and its media files' sha256 (see the module)."""
    digest = hashlib.sha256()
    for turn in conversation.turns:
        text = _SPACE.sub(" ", turn.text.replace("<image>", " ")).strip().lower()
        digest.update(f"{turn.role}\0{text}\0".encode())
    for path in conversation.images:
        digest.update(f"{media.of(path)[0]}\0".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Overlap:
    """Evaluation samples shared with the training data.

    Attributes:
        samples: evaluation samples that overlap in any way; ``total``: evaluation samples.
        same_id, same_media, same_content: evaluation samples per kind (one sample can count
            under several).
        example: the id of the first overlapping evaluation sample.
    """

    samples: int
    total: int
    same_id: int
    same_media: int
    same_content: int
    example: str | None

    def line(self) -> str | None:
        """The one-line refusal, or ``None`` when nothing overlaps."""
        if not self.samples:
            return None
        kinds = [
            f"{label} {n}"
            for label, n in (
                ("same sample id", self.same_id),
                ("same media", self.same_media),
                ("same content", self.same_content),
            )
            if n
        ]
        return (
            f"--eval-data overlaps the training data: {self.samples} of {self.total} evaluation "
            f"samples are also trained on ({', '.join(kinds)}; e.g. {self.example!r}), so its "
            "loss would not be held out; evaluate on other samples, or pass --allow-overlap"
        )


def find_overlap(train: Sequence[Conversation], held: Sequence[Conversation]) -> Overlap:
    """Compare every held-out conversation with the training ones (see the module docstring)."""
    media = MediaKeys()
    ids = {c.id for c in train}
    index = _Index()
    for conversation in train:
        for sha, thumb in media_of(conversation, media):
            index.add(sha, thumb)
    contents = {content_key(c, media) for c in train}
    same_id = same_media = same_content = hits = 0
    example: str | None = None
    for conversation in held:
        by_id = conversation.id in ids
        by_media = any(index.has(sha, thumb) for sha, thumb in media_of(conversation, media))
        by_content = content_key(conversation, media) in contents
        same_id += by_id
        same_media += by_media
        same_content += by_content
        if by_id or by_media or by_content:
            hits += 1
            example = example or conversation.id
    return Overlap(hits, len(held), same_id, same_media, same_content, example)


__all__ = [
    "MediaKeys",
    "Overlap",
    "content_key",
    "find_overlap",
    "media_of",
    "same_picture",
    "thumbnail",
]
