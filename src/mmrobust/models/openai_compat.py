"""``openai:<model>``: any server that speaks the OpenAI chat-completions API.

vLLM, SGLang, LM Studio, Ollama, TGI and hosted APIs. One request per sample:
a ``POST {base_url}/chat/completions`` whose user message holds the media
parts (base64 JPEG ``image_url`` parts, one per frame in time order, or one
``video_url`` part) and the prompt text.

Retries, deadlines, the HTTP -> ``Status`` mapping and redaction are those of
every API backend (``models/_http.py``); this module is the wire format only:
the request body, the ``Authorization: Bearer`` header and how a
chat-completion body reads (``choices[0].message.content``, ``usage``,
``finish_reason``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Json

from mmrobust.media.jpeg import FrameEncoding
from mmrobust.models._encode import data_url, file_data_url, file_url, frame_data_url
from mmrobust.models._http import (
    AttemptError,
    Completion,
    HttpModel,
    HttpOptions,
    WaitRetryAfter,
    body_shape,
    check_base_url,
    empty_reply,
    options_encoding,
    parse_retry_after,
    read_api_key,
    token_count,
)
from mmrobust.models._options import parse_options
from mmrobust.models._prefill import place_prefill
from mmrobust.models._reasoning import REASONING_NAME, default_max_tokens, separate_field
from mmrobust.models.base import MediaInput, Model, Request, place_media, repeat_seed
from mmrobust.redact import server_text
from mmrobust.status import Status


class OpenAIOptions(HttpOptions):
    """``--model-arg`` settings of the ``openai`` backend (strings are converted); the settings
    every HTTP backend shares (temperature, timeout, deadline, retries, backoff, image size and
    quality) are documented once, in :class:`~mmrobust.models._http.HttpOptions`.

    Attributes:
        base_url: server root including ``/v1`` (``http://localhost:8000/v1``).
        api_key_env: name of the environment variable holding the API key;
            ``None`` sends no ``Authorization`` header (local servers).
        image_detail: OpenAI ``detail`` hint on each image part (omitted when unset).
        video: send the video file itself as one ``video_url`` part instead of
            sampled frames (``media_input = "path"``); the server samples frames.
        video_transport: ``data`` (base64 data URL, works remotely) or
            ``file`` (``file://`` URL; vLLM needs ``--allowed-local-media-path``).
        media_position: media parts ``before`` (default) or ``after`` the prompt text;
            a request with ``media_offset`` (official mode) puts them inside the text.
        prefill: how a request's assistant prefill is sent: ``continue``
            (assistant message plus vLLM/SGLang ``continue_final_message``),
            ``message`` (assistant message only), ``user`` (a last text part of
            the user message, as VLMEvalKit's API wrappers send it), ``drop``
            (not sent; recorded in ``Response.extra``).
        seed: sampling seed passed to the server, if set.
        extra_body: JSON object merged into every request body
            (``'{"top_k": 1}'``, vLLM ``mm_processor_kwargs``).
        chat_template_kwargs: JSON object sent as the body's ``chat_template_kwargs``
            (vLLM / SGLang pass it to the chat template: ``'{"enable_thinking": false}'``).
        max_tokens: 256, or 4096 for a thinking model when not set (the rule in
            ``models/_reasoning.py``).
    """

    base_url: str = "https://api.openai.com/v1"
    image_detail: Literal["auto", "low", "high"] | None = None
    video: bool = False
    video_transport: Literal["data", "file"] = "data"
    media_position: Literal["before", "after"] = "before"
    prefill: Literal["continue", "message", "user", "drop"] = "continue"
    seed: int | None = None
    extra_body: Json[dict[str, Any]] | None = None
    chat_template_kwargs: Json[dict[str, Any]] | None = None


class OpenAICompatModel(HttpModel):
    """Chat-completions client for one served model; sends sampled frames as images.

    Thread-safe (``HttpModel``). Args as :class:`mmrobust.models._http.HttpModel`,
    with ``options`` an :class:`OpenAIOptions`.
    """

    media_input: ClassVar[MediaInput] = "frames"
    backend: ClassVar[str] = "openai"
    endpoint: ClassVar[str] = "chat/completions"
    options: OpenAIOptions

    def auth_headers(self) -> dict[str, str]:
        """``Authorization: Bearer <key>`` when a key is set."""
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def fingerprint(self) -> dict[str, Any]:
        """Served model name and the settings that change answers.

        Not included: the key, timeouts, retries, concurrency, and ``base_url``
        (a server restarted on another port resumes the same run; give
        different checkpoints different served names).
        """
        o = self.options
        return {
            "name": self.name,
            "backend": "openai",
            "model": self.model,
            "temperature": o.temperature,
            "max_tokens": o.max_tokens,
            "seed": o.seed,
            "media_input": self.media_input,
            "image_max_side": o.image_max_side,
            "jpeg_quality": o.jpeg_quality,
            "image_detail": o.image_detail,
            "video_transport": o.video_transport if o.video else None,
            "media_position": o.media_position,
            "prefill": o.prefill,
            "extra_body": o.extra_body,
            **({"chat_template_kwargs": o.chat_template_kwargs} if o.chat_template_kwargs else {}),
            **({"reasoning": o.reasoning} if o.reasoning != "keep" else {}),
        }

    def parse_reply(self, body: Any) -> Completion:
        """``choices[0].message.content`` (see :func:`_parse_completion`)."""
        return _parse_completion(body, greedy=self.greedy, clean=self._clean)

    def count_media(self, payload: Mapping[str, Any]) -> tuple[int, int]:
        """``(image_url parts, video_url parts)`` of the messages."""
        return _count_media(payload)

    # -- request body ------------------------------------------------------------------

    def build_payload(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """The chat-completions JSON body for ``request`` and extras to record.

        The user message holds the media parts (frames in ``Request.frames``
        order, or the video/image file in ``path`` mode) before or after the
        prompt text (``media_position``), or between ``prompt[:k]`` and
        ``prompt[k:]`` when the request has ``media_offset`` k.

        Raises:
            ValueError: a frame is not ``(H, W, 3) uint8``.
            OSError: the video/image file cannot be read (``path`` mode).
        """
        o = self.options
        media = self._media_parts(request)
        content = place_media(
            request,
            media,
            lambda t: {"type": "text", "text": t},
            before=o.media_position == "before",
        )
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": content})
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": o.temperature,
            "max_tokens": o.max_tokens,
        }
        if o.seed is not None:
            payload["seed"] = repeat_seed(o.seed, request.repeat)  # each repeat its own draw
        if o.chat_template_kwargs:
            payload["chat_template_kwargs"] = dict(o.chat_template_kwargs)
        extra = {"n_media": len(media), **place_prefill(request, o.prefill, content, messages)}
        if request.assistant_prefill and o.prefill == "continue":
            payload["continue_final_message"] = True
            payload["add_generation_prompt"] = False
        if o.extra_body:
            payload.update(o.extra_body)
        return payload, extra

    def _media_parts(self, request: Request) -> list[dict[str, Any]]:
        o = self.options
        if self.media_input == "path":
            if request.video is not None:
                return [{"type": "video_url", "video_url": {"url": self._file_ref(request.video)}}]
            if request.image is not None:
                return [self._image_part(self._file_ref(request.image))]
            return []
        if request.frame_jpegs:  # encoded by the runner as frame_encoding() says
            return [self._image_part(data_url(j, "image/jpeg")) for j in request.frame_jpegs]
        return [
            self._image_part(frame_data_url(f, max_side=o.image_max_side, quality=o.jpeg_quality))
            for f in request.frames
        ]

    def _file_ref(self, path: Path) -> str:
        if self.options.video_transport == "file":
            if not Path(path).is_file():
                raise OSError(f"no such file: {path}")
            return file_url(path)
        return file_data_url(path)

    def _image_part(self, url: str) -> dict[str, Any]:
        image_url: dict[str, Any] = {"url": url}
        if self.options.image_detail:
            image_url["detail"] = self.options.image_detail
        return {"type": "image_url", "image_url": image_url}


class OpenAICompatVideoModel(OpenAICompatModel):
    """``video=true``: sends the video file as one ``video_url`` part (``media_input = "path"``).

    The server decodes and samples the video itself (vLLM does for video
    models such as Qwen2-VL / Qwen2.5-VL / LLaVA-OneVision); the frame
    sampling policy of mmrobust does not apply. Image samples are sent as one
    ``image_url`` part holding the original file.
    """

    media_input: ClassVar[MediaInput] = "path"


def _count_media(payload: Mapping[str, Any]) -> tuple[int, int]:
    """``(image parts, video parts)`` in the messages of a chat-completions body."""
    images = videos = 0
    for message in payload.get("messages", []):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            images += part.get("type") == "image_url"
            videos += part.get("type") == "video_url"
    return images, videos


def _parse_completion(
    body: Any, *, greedy: bool = True, clean: Callable[[str, int], str] | None = None
) -> Completion:
    """Text, usage and finish reason of a chat-completion body, or ``AttemptError``.

    The message's separate reasoning (``reasoning_content`` / ``reasoning``) is
    ``Completion.reasoning``; with it, empty content is an answer-less reply
    (``text == ""``, status ``ok``: extraction calls it cut inside its reasoning),
    not an ``empty_reply``.
    A reply without a message (no ``choices``, ``choices: []``, ``message: null`` or a
    message that is not an object) is a malformed reply of the server, not an answer
    of the model: ``api_error``, retried. A message whose content is empty or null is
    the model's answer: ``empty_reply``, final when ``greedy`` (temperature 0), else
    retried (``docs/failures.md``; issue 27 item 12: ``message: null`` used to be a
    final ``empty_reply`` while ``choices: []`` was retried).
    ``clean(text, limit)`` makes a piece of the body safe to quote (default: :func:`server_text`).
    """
    quote = clean or (lambda text, limit: server_text(text, (), limit))
    try:
        choice = body["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError("message is not an object")
    except (KeyError, IndexError, TypeError):
        raise AttemptError(
            Status.API_ERROR,
            f"no choices[0].message in reply: {body_shape(body, quote)}",
            retryable=True,
        ) from None
    content = message.get("content")
    if isinstance(content, list):  # some servers return content parts
        content = "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    reasoning = separate_field(message)
    if not isinstance(content, str) or not content.strip():
        if reasoning:  # cut inside its reasoning (or answered nothing after it): no answer
            content = ""
        else:
            raise empty_reply(finish, greedy=greedy)
    usage_raw = body.get("usage") if isinstance(body, dict) else None
    usage: dict[str, int | None] = {"prompt_tokens": None, "completion_tokens": None}
    if isinstance(usage_raw, dict):
        for key in usage:
            usage[key] = token_count(usage_raw.get(key))
    return Completion(content, usage, finish, reasoning=reasoning)


def frame_encoding(arg: str | None, args: Mapping[str, str]) -> FrameEncoding:
    """The frame encoding ``openai:<arg>`` with ``args`` sends, without building a client
    (registered with ``register_backend``; a Ray driver keys its run with it).

    Raises:
        ValueError: an unknown or invalid ``--model-arg``.
    """
    return options_encoding(parse_options(OpenAIOptions, args, "openai"))


def make(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory for ``openai:<model>`` (registered in ``mmrobust.models.spec``).

    Raises:
        ValueError: no model name, an unknown or invalid ``--model-arg``, a
            ``base_url`` without ``http://``/``https://``, or ``api_key_env``
            names a variable that is not set.
    """
    if not arg:
        raise ValueError("openai needs the served model name: --model openai:<model>")
    options = parse_options(OpenAIOptions, args, "openai")
    check_base_url(options.base_url, "openai")
    if "max_tokens" not in options.model_fields_set:  # a thinking model needs room to think
        cap = default_max_tokens(
            options.max_tokens,
            kwargs=options.chat_template_kwargs,
            detected=REASONING_NAME.search(arg) is not None,
        )
        options = options.model_copy(update={"max_tokens": cap})
    api_key = read_api_key(options.api_key_env)
    cls = OpenAICompatVideoModel if options.video else OpenAICompatModel
    return cls(arg, options, api_key=api_key)


__all__ = [
    "AttemptError",
    "OpenAICompatModel",
    "OpenAICompatVideoModel",
    "OpenAIOptions",
    "WaitRetryAfter",
    "frame_encoding",
    "make",
    "parse_retry_after",
]
