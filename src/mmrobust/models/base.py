"""The Model protocol: what every backend (baseline, detector, API, HF) implements.

The runner turns a ``Sample`` into a ``Request`` (prompt text plus media),
hands a batch of requests to ``Model.generate`` and stores each ``Response``.
A model never sees the ground truth, and ``models`` never imports ``store``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import numpy as np

from mmrobust.schema.sample import MediaKind
from mmrobust.status import Status

if TYPE_CHECKING:
    from mmrobust.media.jpeg import FrameEncoding

MediaInput = Literal["frames", "path", "none"]
"""What a model wants from the runner.

* ``"frames"``: decoded frames chosen by the frame sampling policy (and the
  image, for image samples) in ``Request.frames``.
* ``"path"``: only ``Request.video`` / ``Request.image``; the model reads the
  media itself (the forensic detector streams the whole clip; a server that
  takes ``video_url``).
* ``"none"``: text only (blind baselines, ``--text-only`` ablations).
"""

MEDIA_KINDS: tuple[MediaKind, ...] = ("video", "image", "text")
"""Every media kind: what a model answers unless it declares less (``Model.media_kinds``)."""

_KIND_WORDS: dict[str, str] = {"video": "videos", "image": "images", "text": "no media"}

Placement = Literal["api", "gpu", "cpu"]
"""Where a model's work runs, for executors that place replicas (``distributed/``).

* ``"api"``: a client of a remote server; a replica only sends requests, so one
  replica is enough (raise ``concurrency``: the server is what scales).
* ``"gpu"``: a local model that wants a GPU when the cluster has one (``hf:``).
* ``"cpu"``: local work on CPU cores (baselines, the forensic detector).
"""

FrameFormat = Literal["arrays", "jpeg"]
"""How a ``frames`` model reads video frames: ``Request.frames`` (decoded
``(H, W, 3) uint8 RGB`` arrays) or ``Request.frame_jpegs`` (the JPEG bytes,
e.g. to send them as they are). Both come from the same JPEGs
(``Model.frame_encoding``), so the pixels are the same either way."""


def repeat_seed(seed: int, repeat: int) -> int:
    """The sampling seed of ``repeat`` (``Request.repeat``) for a backend seeded ``seed``:
    ``seed`` itself for repeat 0 (a run without repeats draws as before), else a value
    mixed from both (first 8 bytes of a SHA-256, as an unsigned integer below 2**63)."""
    if repeat == 0:
        return seed
    import hashlib

    digest = hashlib.sha256(f"{seed}\0repeat\0{repeat}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True)
class Request:
    """Everything a model may see for one sample.

    Attributes:
        sample_id: the sample's id (for logging; a model must not use it to decide).
        prompt: the full user text (question, options, instruction).
        question: the question stem alone.
        options: option letter -> text, in display order.
        option_keys: option letter -> the option's meaning as a key, for questions
            of ``--task type|when|leading`` (``none``, ``rotation``, ``middle``,
            ``reject`` ...; ``mmrobust.tasks``); empty otherwise. Rule-based models
            (``forensic``, ``constant:<key>``) answer by it; language models read the text.
        system: optional system message.
        assistant_prefill: optional start of the assistant turn
            (VLMEvalKit's "Best option:(" in official mode).
        frames: decoded frames, each ``(H, W, 3) uint8 RGB``, in time order;
            empty unless ``model.media_input == "frames"``.
        frame_indices: source frame index of each entry of ``frames`` (video only).
        video_fps: frame rate of the source video (frames per second), so that
            ``frame_indices[i] / video_fps`` is the time of ``frames[i]`` in seconds.
        video_frame_count: frames in the whole source video (decoded count);
            ``video_frame_count / video_fps`` is its duration in seconds.
        frame_jpegs: the same frames as JPEG bytes (video only), encoded as the
            model's ``frame_encoding()`` says; filled for every ``frames`` model,
            while ``frames`` stays empty for a model whose ``frame_format`` is ``"jpeg"``.
        video: path of the video, if the sample has one.
        image: path of the image, if the sample has one.
        media_offset: where the media go inside ``prompt``: a character offset
            ``k`` means ``prompt[:k]``, then the frames/image, then ``prompt[k:]``
            (VLMEvalKit's question / frames / instruction order in official
            mode). ``None``: the backend's default place. A backend that cannot
            interleave still sends the whole ``prompt``.
        repeat: which of ``--repeats`` asks of this sample this request is (0: the first,
            the only one without repeats). A sampling backend mixes it into its seed
            (:func:`repeat_seed`), so each repeat is its own draw, reproducibly.
    """

    sample_id: str
    prompt: str
    question: str
    options: Mapping[str, str]
    option_keys: Mapping[str, str] = field(default_factory=dict)
    system: str | None = None
    assistant_prefill: str | None = None
    frames: tuple[np.ndarray, ...] = ()
    frame_indices: tuple[int, ...] = ()
    video_fps: float | None = None
    video_frame_count: int | None = None
    video: Path | None = None
    image: Path | None = None
    media_offset: int | None = None
    frame_jpegs: tuple[bytes, ...] = ()
    repeat: int = 0


@dataclass
class Response:
    """A model's reply to one request.

    Attributes:
        text: the raw generated text ("" on error).
        status: ``ok`` when the model answered; on failure one of the error
            statuses (``api_error``, ``timeout``, ``rate_limited``,
            ``media_error``, ``model_error``). Never ``parse_fail``: extraction
            decides that later, from ``text``.
        error: one-line reason when ``status`` is an error.
        latency_s: wall time of the call in seconds, retries included.
        prompt_tokens: tokens in the prompt, when the backend reports them.
        completion_tokens: tokens generated, when the backend reports them.
        extra: backend-specific, JSON-serialisable details stored with the row
            (forensic detector: ``score``, ``pred_type``, ``pred_window``).
        reasoning: the model's reasoning when the server returns it apart from the
            answer (vLLM's ``reasoning_content`` / ``reasoning``, DeepSeek-style APIs,
            Anthropic ``thinking`` blocks), else ``None``; reasoning written inside
            ``text`` (``<think>...</think>``) stays there. ``None`` too under
            ``--model-arg reasoning=drop`` (``models/_reasoning.py``).
    """

    text: str
    status: Status = Status.OK
    error: str | None = None
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    reasoning: str | None = None


class Model(ABC):
    """Base class of every backend.

    Subclasses set ``media_input`` (and ``placement``, default ``"cpu"``) and
    implement ``generate``. Remote backends raise ``max_concurrency`` (the
    runner sends that many batches at once from threads); local ones raise
    ``batch_size``.
    """

    placement: ClassVar[Placement] = "cpu"
    media_input: ClassVar[MediaInput] = "frames"
    media_kinds: ClassVar[tuple[MediaKind, ...]] = MEDIA_KINDS
    """The kinds of sample this model can answer (default: every kind; ``forensic``: video
    only). Declared for the backend too (``models.spec.register_backend(media=...)``), so a
    suite plans no run the model cannot answer before loading it."""
    frame_format: ClassVar[FrameFormat] = "arrays"
    name: str = "model"
    max_concurrency: int = 1
    batch_size: int = 1

    @abstractmethod
    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Answer each request, in order; one ``Response`` per request.

        Must not raise for a per-request failure: return a ``Response`` with
        an error status instead. May raise for a failure that makes every
        request impossible (a model that cannot load).
        """

    def fingerprint(self) -> dict[str, Any]:
        """The configuration that identifies this model's answers (no secrets).

        Two runs whose fingerprints are equal may share stored rows.
        """
        return {"name": self.name}

    def frame_encoding(self) -> FrameEncoding:
        """How this model's video frames are encoded (and cached): JPEG quality, size cap.

        Default: JPEG quality 95 at the decoded size. A remote backend returns
        exactly what it sends (its ``jpeg_quality`` and ``image_max_side``).
        """
        from mmrobust.media.jpeg import FrameEncoding

        return FrameEncoding()

    def cannot_answer(
        self, options: Sequence[Mapping[str, str]], keys: Sequence[Mapping[str, str]] = ()
    ) -> str | None:
        """Why this model can answer none of the samples with these options, else ``None``.

        Checked before any request is sent (``constant:Z`` on Yes/No questions).
        ``keys``: each sample's option keys (letter -> key, ``--task`` questions; may be
        empty). Default: ``None`` (a model is assumed able to answer).
        """
        return None

    def cannot_take(self, kinds: Collection[str]) -> str | None:
        """Why this model can answer none of the samples, whose media kinds are ``kinds``
        (``Sample.media_kind``, or ``{"text"}`` under ``--text-only``), else ``None``: see
        :func:`media_refusal`. Checked before any request is sent."""
        return media_refusal(self.name, self.media_kinds, kinds)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (servers, GPU memory). Default: nothing."""


def media_refusal(
    name: str, takes: Collection[str], kinds: Collection[str], *, of: str | None = None
) -> str | None:
    """One line when a model that takes the media kinds ``takes`` can answer no sample of the
    kinds ``kinds`` (``"forensic takes video only; the samples have images"``, or ``"...;
    mmr-demo has images"`` with ``of="mmr-demo"``), else ``None`` (also for no kinds at all).
    Pure."""
    if not kinds or set(kinds) & set(takes):
        return None
    has = ", ".join(_KIND_WORDS.get(k, k) for k in MEDIA_KINDS if k in kinds)
    whose = f"{of} has" if of else "the samples have"
    return f"{name} takes {' or '.join(takes)} only; {whose} {has}"


P = TypeVar("P")


def place_media(
    request: Request, media: Sequence[P], text: Callable[[str], P], *, before: bool = True
) -> list[P]:
    """Message parts: the media and the prompt text in the order the request asks for.

    With ``request.media_offset`` k: ``text(prompt[:k])``, the media,
    ``text(prompt[k:])`` (empty texts left out). Otherwise the media
    ``before`` (default) or after one ``text(prompt)`` part. Pure.
    """
    k = request.media_offset
    if k is None or not media:
        part = text(request.prompt)
        return [*media, part] if before else [part, *media]
    head, tail = request.prompt[:k], request.prompt[k:]
    return [*([text(head)] if head else []), *media, *([text(tail)] if tail else [])]


__all__ = [
    "MEDIA_KINDS",
    "FrameFormat",
    "MediaInput",
    "MediaKind",
    "Model",
    "Placement",
    "Request",
    "Response",
    "media_refusal",
    "place_media",
    "repeat_seed",
]
