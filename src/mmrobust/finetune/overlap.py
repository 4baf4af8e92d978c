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

Same video: a sample whose pictures are the sampled frames of one clip (a record with
``video_metadata``, as ``mmrobust tamper-data`` writes) is also compared as a whole clip,
by the content fingerprint ``tamper-data`` splits its sources with
(:mod:`mmrobust.media.fingerprint`: per frame a 64-bit dHash of 9 x 8 luma cells and the
mean luma, 16 frames picked evenly from the clip's frames; :func:`~mmrobust.media.fingerprint.same_content`
decides). It is computed once per distinct clip from the frames decoded for the thumbnails,
and catches what a frame-by-frame look misses: the frames of a dark clip are flat at 8 x 8,
so a re-encoded copy of a dark training clip (every frame at 8% brightness, CRF 18 against
CRF 40) has no frame of the same bytes and no thumbnail to compare, while its fingerprint
is 0.08 from the source's (different clips: at least 0.4). Both sides must sample the clip
with the same frame policy: 8 frames against 16 of one moving clip are 0.21 apart, not the
same video by this measure.
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


def _decode(data: bytes) -> Any:
    """``(H/2, W/2, 3) uint8`` BGR of an encoded picture, or ``None`` (not a picture)."""
    import cv2
    import numpy as np

    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_REDUCED_COLOR_2)
    return None if image is None or image.size == 0 else image


def _thumb(image: Any) -> Thumb | None:
    import cv2
    import numpy as np

    thumb = cv2.resize(image, (8, 8), interpolation=cv2.INTER_AREA).astype(np.float32)
    if float(np.abs(thumb - thumb.mean()).max()) <= _FLAT:
        return None
    return thumb


def thumbnail(data: bytes) -> Thumb | None:
    """The 8 x 8 thumbnail of an encoded picture, or ``None`` (not a picture, or flat)."""
    image = _decode(data)
    return None if image is None else _thumb(image)


def same_picture(a: Thumb, b: Thumb) -> bool:
    """Whether two thumbnails show the same picture (see the module docstring)."""
    import numpy as np

    diff = np.abs(a - b)
    return float(diff.mean()) <= _MEAN_DIFF and float(diff.max()) <= _MAX_DIFF


@dataclass
class MediaKeys:
    """Media files' sha256, thumbnail and frame hash (each file read and decoded once), and
    clips' content fingerprints (each distinct clip computed once)."""

    sha256: dict[Path, str] = field(default_factory=dict)
    thumbs: dict[Path, Thumb | None] = field(default_factory=dict)
    frames: dict[Path, bytes | None] = field(default_factory=dict)
    clips: dict[tuple[Path, ...], str | None] = field(default_factory=dict)

    def of(self, path: Path) -> tuple[str, Thumb | None]:
        """``(sha256 hex, thumbnail or None)`` of one file (``missing:<path>`` if unreadable)."""
        if path not in self.sha256:
            from mmrobust.media.fingerprint import frame_hash

            self.thumbs[path] = self.frames[path] = None
            try:
                data = path.read_bytes()
            except OSError:
                self.sha256[path] = f"missing:{path}"
            else:
                self.sha256[path] = hashlib.sha256(data).hexdigest()
                image = _decode(data)
                if image is not None:
                    self.thumbs[path], self.frames[path] = _thumb(image), frame_hash(image)
        return self.sha256[path], self.thumbs[path]

    def clip(self, conversation: Conversation) -> str | None:
        """The content fingerprint of a conversation's clip (its frames, in order), or
        ``None``: not the frames of one clip (no ``video_metadata``), or a frame unreadable."""
        frames = conversation.images
        if conversation.video is None or not frames:
            return None
        if frames not in self.clips:
            from mmrobust.media.fingerprint import frames_fingerprint

            for path in frames:
                self.of(path)
            hashes = [h for h in (self.frames[path] for path in frames) if h is not None]
            self.clips[frames] = frames_fingerprint(hashes) if len(hashes) == len(frames) else None
        return self.clips[frames]


Source = tuple[str, Path]  # (training conversation id, its media file or clip folder)


@dataclass
class _Index:
    """The training side's media: sha256s, and thumbnails bucketed by channel mean, each
    with the first training sample and file that has it."""

    shas: dict[str, Source] = field(default_factory=dict)
    buckets: dict[tuple[int, ...], list[tuple[Thumb, Source]]] = field(default_factory=dict)

    @staticmethod
    def _key(thumb: Thumb) -> tuple[int, ...]:
        return tuple(int(m // _BUCKET) for m in thumb.mean(axis=(0, 1)))

    def add(self, sha: str, thumb: Thumb | None, source: Source) -> None:
        self.shas.setdefault(sha, source)
        if thumb is not None:
            self.buckets.setdefault(self._key(thumb), []).append((thumb, source))

    def find(self, sha: str, thumb: Thumb | None) -> Source | None:
        """The training sample and file with these bytes or this picture, or ``None``."""
        if sha in self.shas:
            return self.shas[sha]
        if thumb is None:
            return None
        key = self._key(thumb)
        for near in itertools.product(*((k - 1, k, k + 1) for k in key)):
            for other, source in self.buckets.get(near, ()):
                if same_picture(thumb, other):
                    return source
        return None


def clip_folder(conversation: Conversation) -> Path:
    """Where a clip's frames are: their common folder (``frames/<clip>`` of ``tamper-data``),
    else the first frame."""
    parents = {path.parent for path in conversation.images}
    return parents.pop() if len(parents) == 1 else conversation.images[0]


def media_of(conversation: Conversation, media: MediaKeys) -> list[tuple[str, Thumb | None, Path]]:
    """The pictures that identify a conversation's media, ``(sha256, thumbnail, path)``: those
    that are not flat; its flat ones (by sha256) when it has no other."""
    pictures = [(*media.of(path), path) for path in conversation.images]
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
            under several; the same video counts as same media).
        example: the id of the first overlapping evaluation sample.
        why: what it shares, and with which training sample (and file), in words.
    """

    samples: int
    total: int
    same_id: int
    same_media: int
    same_content: int
    example: str | None
    why: str | None = None

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
        why = f": {self.why}" if self.why else ""
        return (
            f"--eval-data overlaps the training data: {self.samples} of {self.total} evaluation "
            f"samples are also trained on ({', '.join(kinds)}; e.g. {self.example!r}{why}), so "
            "its loss would not be held out; evaluate on other samples, or pass --allow-overlap"
        )


def find_overlap(train: Sequence[Conversation], held: Sequence[Conversation]) -> Overlap:
    """Compare every held-out conversation with the training ones (see the module docstring).

    Decodes every media file once (both sides); a clip's fingerprint is computed once per
    distinct clip and looked up in all the training clips' at once
    (:class:`mmrobust.media.fingerprint.ContentIndex`).
    """
    from mmrobust.media.fingerprint import ContentIndex

    media = MediaKeys()
    ids = {c.id for c in train}
    index = _Index()
    clips: dict[str, Source] = {}
    for conversation in train:
        for sha, thumb, path in media_of(conversation, media):
            index.add(sha, thumb, (conversation.id, path))
        clip = media.clip(conversation)
        if clip is not None:
            clips.setdefault(clip, (conversation.id, clip_folder(conversation)))
    videos = ContentIndex(list(clips))
    sources = list(clips.values())
    contents: dict[str, str] = {}
    for conversation in train:
        contents.setdefault(content_key(conversation, media), conversation.id)
    same_id = same_media = same_content = hits = 0
    example: str | None = None
    why: str | None = None
    for conversation in held:
        reasons: list[str] = []
        by_id = conversation.id in ids
        if by_id:
            reasons.append("a training sample has this id")
        by_media = False
        for sha, thumb, path in media_of(conversation, media):
            found = index.find(sha, thumb)
            if found is not None:
                by_media = True
                reasons.insert(
                    0,
                    f"training {found[0]!r} has {path} too"
                    if path == found[1]
                    else f"{path} is the same picture as {found[1]} of training {found[0]!r}",
                )
                break
        clip = media.clip(conversation)
        if not by_media and clip is not None:
            near = videos.matches(clip)
            if near:
                by_media = True
                tid, folder = sources[near[0]]
                reasons.insert(
                    0,
                    f"the clip {clip_folder(conversation)} is the same video as {folder} of "
                    f"training {tid!r} (content fingerprint)",
                )
        trained = contents.get(content_key(conversation, media))
        by_content = trained is not None
        if by_content:
            reasons.append(f"training {trained!r} has the same text and media")
        same_id += by_id
        same_media += by_media
        same_content += by_content
        if reasons:
            hits += 1
            if example is None:
                example, why = conversation.id, reasons[0]
    return Overlap(hits, len(held), same_id, same_media, same_content, example, why)


__all__ = [
    "MediaKeys",
    "Overlap",
    "clip_folder",
    "content_key",
    "find_overlap",
    "media_of",
    "same_picture",
    "thumbnail",
]
