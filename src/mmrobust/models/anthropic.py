"""``anthropic:<model>``: Anthropic's native Messages API (``POST {base_url}/messages``).

One request per sample; the user message's ``content`` holds one ``image``
block per frame (``{"type": "image", "source": {"type": "base64",
"media_type": "image/jpeg", "data": ...}}``, in time order) and the prompt
as a ``text`` block; ``system`` is a top-level field; ``max_tokens`` is
required by the API. The key goes in ``x-api-key`` with the
``anthropic-version`` header (wire format as documented at
https://docs.anthropic.com/en/api/messages, version ``2023-06-01``).

A reply's answer is the concatenated ``text`` blocks of ``content``;
``thinking`` blocks (extended thinking) are the separate reasoning
(``Completion.reasoning``); ``stop_reason`` is the finish reason and
``usage.input_tokens`` / ``output_tokens`` the token counts. Error bodies are
``{"type": "error", "error": {"type": "overloaded_error", "message": ...}}``;
the HTTP status decides, as for every API backend (``models/_http.py``): 429
``rate_limit_error`` and 529 ``overloaded_error`` are retried (with
``Retry-After``), 400 ``invalid_request_error`` / 413 are final ``rejected``,
401/403/404 stop the run after 8 in a row. No video input: the frames policy
applies (``media_input = "frames"``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Json

from mmrobust.media.jpeg import FrameEncoding
from mmrobust.models._encode import encode_jpeg
from mmrobust.models._http import (
    AttemptError,
    Completion,
    HttpModel,
    HttpOptions,
    body_shape,
    check_base_url,
    empty_reply,
    options_encoding,
    read_api_key,
    token_count,
)
from mmrobust.models._options import parse_options
from mmrobust.models._prefill import place_prefill
from mmrobust.models._reasoning import REASONING_MAX_TOKENS, thinking_budget
from mmrobust.models.base import MediaInput, Model, Request, place_media
from mmrobust.status import Status

DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"


class AnthropicOptions(HttpOptions):
    """``--model-arg`` settings of the ``anthropic`` backend (shared ones: ``HttpOptions``).

    Attributes:
        base_url: API root including ``/v1`` (default ``https://api.anthropic.com/v1``).
        api_key_env: variable holding the key (default ``ANTHROPIC_API_KEY``;
            ``api_key_env=`` sends no key, for a local proxy).
        anthropic_version: the ``anthropic-version`` header.
        media_position: image blocks ``before`` (default) or ``after`` the text.
        prefill: a request's assistant prefill as the last ``assistant`` message
            (``message``, the API continues it), a last text block of the user
            turn (``user``) or not sent (``drop``; recorded in ``Response.extra``).
        top_k: the API's ``top_k``, if set.
        extra_body: JSON object merged into every body (``'{"thinking":
            {"type": "enabled", "budget_tokens": 2048}}'``). With thinking enabled,
            ``max_tokens`` defaults to ``max(4096, budget_tokens + 1024)`` and
            ``temperature`` is sent only when set (the API refuses it with thinking).
    """

    base_url: str = "https://api.anthropic.com/v1"
    api_key_env: str | None = DEFAULT_KEY_ENV
    anthropic_version: str = "2023-06-01"
    media_position: Literal["before", "after"] = "before"
    prefill: Literal["message", "user", "drop"] = "message"
    top_k: int | None = None
    extra_body: Json[dict[str, Any]] | None = None


class AnthropicModel(HttpModel):
    """Messages-API client for one Claude model; sends sampled frames as image blocks.

    Thread-safe (``HttpModel``). Args as :class:`mmrobust.models._http.HttpModel`,
    with ``options`` an :class:`AnthropicOptions`.
    """

    media_input: ClassVar[MediaInput] = "frames"
    backend: ClassVar[str] = "anthropic"
    endpoint: ClassVar[str] = "messages"
    options: AnthropicOptions

    def auth_headers(self) -> dict[str, str]:
        """``x-api-key`` (when a key is set) and ``anthropic-version``."""
        headers = {"anthropic-version": self.options.anthropic_version}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def fingerprint(self) -> dict[str, Any]:
        """Model name and the settings that change answers (no key, URL, timeouts)."""
        o = self.options
        return {
            "name": self.name,
            "backend": "anthropic",
            "model": self.model,
            "temperature": o.temperature,
            "max_tokens": o.max_tokens,
            "top_k": o.top_k,
            "media_input": self.media_input,
            "image_max_side": o.image_max_side,
            "jpeg_quality": o.jpeg_quality,
            "media_position": o.media_position,
            "prefill": o.prefill,
            "anthropic_version": o.anthropic_version,
            "extra_body": o.extra_body,
            **({"reasoning": o.reasoning} if o.reasoning != "keep" else {}),
        }

    def build_payload(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """The Messages body for ``request`` and extras to record.

        Raises:
            ValueError: a frame is not ``(H, W, 3) uint8``.
        """
        o = self.options
        jpegs = list(request.frame_jpegs) or [
            encode_jpeg(f, max_side=o.image_max_side or None, quality=o.jpeg_quality)
            for f in request.frames
        ]
        media = [_image_block(j) for j in jpegs]
        content = place_media(
            request,
            media,
            lambda t: {"type": "text", "text": t},
            before=o.media_position == "before",
        )
        messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        payload: dict[str, Any] = {"model": self.model, "max_tokens": o.max_tokens}
        if thinking_budget(o.extra_body) is None or "temperature" in o.model_fields_set:
            payload["temperature"] = o.temperature
        payload["messages"] = messages
        if request.system:
            payload["system"] = request.system
        if o.top_k is not None:
            payload["top_k"] = o.top_k
        # the API refuses a final assistant turn that ends in whitespace: strip
        extra = {
            "n_media": len(media),
            **place_prefill(request, o.prefill, content, messages, strip=True),
        }
        if o.extra_body:
            payload.update(o.extra_body)
        return payload, extra

    def parse_reply(self, body: Any) -> Completion:
        """``text`` blocks of ``content`` (``thinking`` blocks as reasoning), or ``AttemptError``.

        As for ``openai:``: a body without a ``content`` list (missing, null) is a
        malformed reply, a retried ``api_error``; a ``content`` list without text
        (``[]``, only ``thinking``) is the model's answer, ``empty_reply`` (final at
        temperature 0, else retried).
        """
        blocks = body.get("content") if isinstance(body, dict) else None
        if not isinstance(blocks, list):
            raise AttemptError(
                Status.API_ERROR,
                f"no content blocks in reply: {body_shape(body, self._clean)}",
                retryable=True,
            )
        assert isinstance(body, dict)
        finish = body.get("stop_reason")
        finish = finish if isinstance(finish, str) else None
        parts = [b for b in blocks if isinstance(b, dict)]
        text = "".join(str(b.get("text", "")) for b in parts if b.get("type") == "text")
        thinking = "\n".join(
            str(b.get("thinking", "")) for b in parts if b.get("type") == "thinking"
        )
        if not text.strip() and not thinking:
            raise empty_reply(finish, greedy=self.greedy)
        raw_usage = body.get("usage")
        usage_in = raw_usage if isinstance(raw_usage, dict) else {}
        usage = {
            "prompt_tokens": token_count(usage_in.get("input_tokens")),
            "completion_tokens": token_count(usage_in.get("output_tokens")),
        }
        return Completion(text, usage, finish, reasoning=thinking or None)

    def error_text(self, body: str) -> str:
        """``"<error.type>: <error.message>"`` of an error envelope, else the body as is."""
        try:
            error = json.loads(body).get("error")
        except (ValueError, AttributeError):
            return body
        if not isinstance(error, dict) or not isinstance(error.get("message"), str):
            return body
        kind = error.get("type")
        return f"{kind}: {error['message']}" if isinstance(kind, str) else error["message"]

    def count_media(self, payload: Mapping[str, Any]) -> tuple[int, int]:
        """``(image blocks, 0)`` of the messages (the API takes no video)."""
        images = 0
        for message in payload.get("messages", []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                images += isinstance(block, dict) and block.get("type") == "image"
        return images, 0


def _image_block(jpeg: bytes) -> dict[str, Any]:
    """One base64 JPEG ``image`` content block."""
    data = base64.b64encode(jpeg).decode("ascii")
    return {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": data}}


def frame_encoding(arg: str | None, args: Mapping[str, str]) -> FrameEncoding:
    """The frame encoding ``anthropic:<arg>`` with ``args`` sends, without building a client
    (registered with ``register_backend``; a Ray driver keys its run with it).

    Raises:
        ValueError: an unknown or invalid ``--model-arg``.
    """
    return options_encoding(parse_options(AnthropicOptions, args, "anthropic"))


def make(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory for ``anthropic:<model>`` (registered in ``mmrobust.models.spec``).

    Raises:
        ValueError: no model name, an unknown or invalid ``--model-arg``, a
            ``base_url`` without ``http://``/``https://``, or the key variable is not set.
    """
    if not arg:
        raise ValueError("anthropic needs the model name: --model anthropic:<model>")
    options = parse_options(AnthropicOptions, args, "anthropic")
    check_base_url(options.base_url, "anthropic")
    budget = thinking_budget(options.extra_body)
    if budget is not None and "max_tokens" not in options.model_fields_set:
        cap = max(REASONING_MAX_TOKENS, budget + 1024)
        options = options.model_copy(update={"max_tokens": cap})
    try:
        api_key = read_api_key(options.api_key_env)
    except ValueError as exc:
        raise ValueError(
            f"anthropic: {exc} (export it, or pass --model-arg api_key_env=VAR; "
            "api_key_env= sends no key)"
        ) from None
    return AnthropicModel(arg, options, api_key=api_key)


__all__ = [
    "DEFAULT_KEY_ENV",
    "AnthropicModel",
    "AnthropicOptions",
    "frame_encoding",
    "make",
]
