"""The Model protocol: what every backend (baseline, detector, API, HF) implements.

The runner turns a ``Sample`` into a ``Request`` (prompt text plus media),
hands a batch of requests to ``Model.generate`` and stores each ``Response``.
A model never sees the ground truth, and ``models`` never imports ``store``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from mmrobust.status import Status

MediaInput = Literal["frames", "path", "none"]
"""What a model wants from the runner.

* ``"frames"``: decoded frames chosen by the frame sampling policy (and the
  image, for image samples) in ``Request.frames``.
* ``"path"``: only ``Request.video`` / ``Request.image``; the model reads the
  media itself (the forensic detector streams the whole clip; a server that
  takes ``video_url``).
* ``"none"``: text only (blind baselines, ``--text-only`` ablations).
"""


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
        video: path of the video, if the sample has one.
        image: path of the image, if the sample has one.
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
    video: Path | None = None
    image: Path | None = None


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
    """

    text: str
    status: Status = Status.OK
    error: str | None = None
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Model(ABC):
    """Base class of every backend.

    Subclasses set ``media_input`` and implement ``generate``. Remote
    backends raise ``max_concurrency`` (the runner sends that many batches at
    once from threads); local ones raise ``batch_size``.
    """

    media_input: ClassVar[MediaInput] = "frames"
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

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (servers, GPU memory). Default: nothing."""


__all__ = ["MediaInput", "Model", "Request", "Response"]
