"""``gemini:<model>``: Google's native Gemini API (``POST {base_url}/models/<model>:generateContent``).

One request per sample. The wire format follows the public API reference:

* request (https://ai.google.dev/api/generate-content, ``models.generateContent``):
  ``contents`` holds one ``user`` turn whose ``parts`` are one ``inline_data``
  part per frame (``{"inline_data": {"mime_type": "image/jpeg", "data": <base64>}}``,
  in time order) and the prompt as a ``text`` part; with ``video=true`` the
  sample's video file itself is one ``inline_data`` part (``video/mp4``; an
  image sample's file keeps its own type), the API samples it (``video_fps``
  sets ``video_metadata.fps``). ``system_instruction`` carries a system
  message; ``generationConfig`` holds ``temperature``, ``maxOutputTokens``
  (and ``topP``, ``topK``, ``seed``, ``thinkingConfig`` when set).
* the key goes in the ``x-goog-api-key`` header, never in the URL
  (https://ai.google.dev/api, "Authentication").
* reply: the answer is the concatenated ``text`` of
  ``candidates[0].content.parts`` that are not ``thought: true``; those are the
  reasoning (returned with ``include_thoughts=true``). ``finishReason``
  (``Candidate.FinishReason``): ``STOP`` / ``MAX_TOKENS`` / ``OTHER`` with text
  are answers (the reason is stored as ``finish_reason``); without text they are
  an ``empty_reply``. ``SAFETY``, ``RECITATION``, ``LANGUAGE``, ``BLOCKLIST``,
  ``PROHIBITED_CONTENT``, ``SPII`` and ``IMAGE_SAFETY`` withhold the answer:
  the row is ``rejected`` (final), whatever partial text came with it. No
  candidate and ``promptFeedback.blockReason`` set: the prompt was blocked,
  ``rejected``; no candidate and no reason: a malformed reply, ``api_error``
  (retried). ``usageMetadata``: ``promptTokenCount`` is ``prompt_tokens``,
  ``candidatesTokenCount`` + ``thoughtsTokenCount`` is ``completion_tokens``
  (thinking is generated output, as OpenAI counts reasoning tokens).
* errors are ``{"error": {"code", "message", "status"}}`` (Google's RPC
  status). The HTTP status decides as for every API backend
  (``models/_http.py``): 429 ``RESOURCE_EXHAUSTED`` and 5xx are retried (a
  ``RetryInfo.retryDelay`` in the error details counts as ``Retry-After``), 400
  ``INVALID_ARGUMENT`` is a final ``rejected``, 403/404 stop the run after 8 in
  a row; so does a 400 ``API_KEY_INVALID`` (a bad key is no fault of the sample).

The key comes from the variable ``api_key_env`` names; unset, from
``GOOGLE_API_KEY`` or else ``GEMINI_API_KEY``, the order Google's own libraries
read them in (https://ai.google.dev/gemini-api/docs/api-key).
Gemini 2.5 and later think by default and their thinking counts against
``maxOutputTokens``: the default cap follows ``models/_reasoning.py``.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import httpx
from pydantic import Field, Json

from mmrobust.media.jpeg import FrameEncoding
from mmrobust.models._encode import guess_mime, request_jpegs
from mmrobust.models._http import (
    ERROR_BODY_CHARS,
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
from mmrobust.models._reasoning import REASONING_MAX_TOKENS
from mmrobust.models.base import MediaInput, Model, Request, place_media
from mmrobust.status import Status

KEY_ENVS = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
"""The variables read for the key when ``api_key_env`` is not given, first set wins."""

WITHHELD = frozenset(
    {"SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)
"""``finishReason`` values that withhold the answer: the row is ``rejected``."""

THINKING_NAME = re.compile(r"(?i)(gemini-(2\.5|[3-9])|thinking)")
"""Model names that think unless told not to (Gemini 2.5 and later, ``*-thinking-*``)."""

_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class GeminiOptions(HttpOptions):
    """``--model-arg`` settings of the ``gemini`` backend (shared ones: ``HttpOptions``).

    Attributes:
        base_url: API root including the version (default
            ``https://generativelanguage.googleapis.com/v1beta``).
        api_key_env: variable holding the key (default: ``GOOGLE_API_KEY`` if set,
            else ``GEMINI_API_KEY``; ``api_key_env=`` sends no key, for a local proxy).
        video: send the video file itself as one inline ``video/mp4`` part
            (``media_input = "path"``; the API samples it) instead of sampled frames.
        video_fps: frames per second the API samples a sent video at (its default: 1).
        media_position: media parts ``before`` (default) or ``after`` the text.
        prefill: a request's assistant prefill as a last text part of the user turn
            (``user``, default), as a final ``model`` turn (``message``), or not sent
            (``drop``; recorded in ``Response.extra``).
        max_tokens: ``maxOutputTokens``: 256, or for a model that thinks (a
            ``thinking_budget`` other than 0, a ``thinking_level``, a Gemini 2.5 or later
            name) ``max(4096, thinking_budget + 1024)``, when not set.
        top_p: ``generationConfig.topP``, if set.
        top_k: ``generationConfig.topK``, if set.
        seed: ``generationConfig.seed``, if set.
        thinking_budget: ``thinkingConfig.thinkingBudget`` (tokens; 0 turns thinking
            off where the model allows it, -1 lets the model decide).
        thinking_level: ``thinkingConfig.thinkingLevel`` (Gemini 3).
        include_thoughts: ask for thought summaries (stored as the reasoning).
        extra_body: JSON object merged into every body (``'{"safetySettings": [...]}'``);
            its ``generationConfig`` is merged into ours key by key.
    """

    base_url: str = "https://generativelanguage.googleapis.com/v1beta"
    api_key_env: str | None = KEY_ENVS[-1]
    video: bool = False
    video_fps: float | None = Field(None, gt=0)
    media_position: Literal["before", "after"] = "before"
    prefill: Literal["user", "message", "drop"] = "user"
    top_p: float | None = Field(None, ge=0, le=1)
    top_k: int | None = Field(None, ge=1)
    seed: int | None = None
    thinking_budget: int | None = Field(None, ge=-1)
    thinking_level: Literal["minimal", "low", "medium", "high"] | None = None
    include_thoughts: bool = False
    extra_body: Json[dict[str, Any]] | None = None


class GeminiModel(HttpModel):
    """generateContent client for one Gemini model; sends sampled frames as inline JPEGs.

    Thread-safe (``HttpModel``). Args as :class:`mmrobust.models._http.HttpModel`,
    with ``options`` a :class:`GeminiOptions`.
    """

    media_input: ClassVar[MediaInput] = "frames"
    backend: ClassVar[str] = "gemini"
    endpoint: ClassVar[str] = "models/{model}:generateContent"
    options: GeminiOptions

    def auth_headers(self) -> dict[str, str]:
        """``x-goog-api-key`` when a key is set."""
        return {"x-goog-api-key": self._api_key} if self._api_key else {}

    def fingerprint(self) -> dict[str, Any]:
        """Model name and the settings that change answers (no key, URL, timeouts)."""
        o = self.options
        return {
            "name": self.name,
            "backend": "gemini",
            "model": self.model,
            "temperature": o.temperature,
            "max_tokens": o.max_tokens,
            "top_p": o.top_p,
            "top_k": o.top_k,
            "seed": o.seed,
            "media_input": self.media_input,
            "image_max_side": o.image_max_side,
            "jpeg_quality": o.jpeg_quality,
            "video_fps": o.video_fps if o.video else None,
            "media_position": o.media_position,
            "prefill": o.prefill,
            "thinking": _thinking_config(o) or None,
            "extra_body": o.extra_body,
            **({"reasoning": o.reasoning} if o.reasoning != "keep" else {}),
        }

    def build_payload(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """The generateContent body for ``request`` and extras to record.

        Raises:
            ValueError: a frame is not ``(H, W, 3) uint8``.
            OSError: the video/image file cannot be read (``video=true``).
        """
        o = self.options
        media = self._media_parts(request)
        parts = place_media(
            request, media, lambda t: {"text": t}, before=o.media_position == "before"
        )
        contents: list[dict[str, Any]] = [{"role": "user", "parts": parts}]
        extra: dict[str, Any] = {"n_media": len(media)}
        prefill = request.assistant_prefill
        if prefill and o.prefill == "drop":
            extra["prefill_dropped"] = True
        elif prefill and o.prefill == "user":
            parts.append({"text": prefill})
        elif prefill:
            contents.append({"role": "model", "parts": [{"text": prefill}]})
        config: dict[str, Any] = {"temperature": o.temperature, "maxOutputTokens": o.max_tokens}
        for key, value in (("topP", o.top_p), ("topK", o.top_k), ("seed", o.seed)):
            if value is not None:
                config[key] = value
        if thinking := _thinking_config(o):
            config["thinkingConfig"] = thinking
        payload: dict[str, Any] = {"contents": contents}
        if request.system:
            payload["system_instruction"] = {"parts": [{"text": request.system}]}
        payload["generationConfig"] = config
        if o.extra_body:
            more = dict(o.extra_body)
            if isinstance(more.get("generationConfig"), dict):
                config.update(more.pop("generationConfig"))
            payload.update(more)
        return payload, extra

    def _media_parts(self, request: Request) -> list[dict[str, Any]]:
        o = self.options
        if self.media_input == "path":
            path = request.video if request.video is not None else request.image
            if path is None:
                return []
            part = _inline(Path(path).read_bytes(), guess_mime(Path(path)))
            if request.video is not None and o.video_fps is not None:
                part["video_metadata"] = {"fps": o.video_fps}
            return [part]
        jpegs = request_jpegs(request, max_side=o.image_max_side, quality=o.jpeg_quality)
        return [_inline(j, "image/jpeg") for j in jpegs]

    def parse_reply(self, body: Any) -> Completion:
        """The answer of ``candidates[0]`` (see the module docstring), or ``AttemptError``."""
        if not isinstance(body, dict):
            raise AttemptError(
                Status.API_ERROR, f"reply is not an object: {type(body).__name__}", retryable=True
            )
        candidates = body.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            feedback = body.get("promptFeedback")
            reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
            if isinstance(reason, str) and reason:
                raise AttemptError(
                    Status.REJECTED,
                    f"prompt blocked by the API (promptFeedback.blockReason={reason})",
                    retryable=False,
                    extra={"block_reason": reason},
                )
            raise AttemptError(
                Status.API_ERROR,
                f"no candidates in reply: {body_shape(body, self._clean)}",
                retryable=True,
            )
        first = candidates[0]
        finish = first.get("finishReason") if isinstance(first, dict) else None
        finish = finish if isinstance(finish, str) else None
        content = first.get("content") if isinstance(first, dict) else None
        if not isinstance(content, dict) and finish is None:
            raise AttemptError(
                Status.API_ERROR,
                f"candidate without content: {body_shape(first, self._clean)}",
                retryable=True,
            )
        if finish in WITHHELD:
            raise AttemptError(
                Status.REJECTED,
                f"answer withheld by the API (finishReason={finish})",
                retryable=False,
                extra={"finish_reason": finish},
            )
        raw_parts = content.get("parts") if isinstance(content, dict) else None
        parts = [
            p for p in raw_parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        text = "".join(p["text"] for p in parts if not p.get("thought"))
        thoughts = "\n".join(p["text"] for p in parts if p.get("thought"))
        if not text.strip() and not thoughts:
            raise empty_reply(finish, greedy=self.greedy)
        meta = body.get("usageMetadata")
        meta = meta if isinstance(meta, dict) else {}
        counts = [token_count(meta.get(k)) for k in ("candidatesTokenCount", "thoughtsTokenCount")]
        known = [n for n in counts if n is not None]
        usage = {
            "prompt_tokens": token_count(meta.get("promptTokenCount")),
            "completion_tokens": sum(known) if known else None,
        }
        return Completion(text, usage, finish, reasoning=thoughts or None)

    def error_text(self, body: str) -> str:
        """``"<error.status>: <error.message>"`` of Google's error envelope, else the body."""
        error = _error_of(body)
        if not isinstance(error.get("message"), str):
            return body
        kind = error.get("status")
        return f"{kind}: {error['message']}" if isinstance(kind, str) else error["message"]

    def count_media(self, payload: Mapping[str, Any]) -> tuple[int, int]:
        """``(image parts, video parts)`` of the contents, by their ``mime_type``."""
        images = videos = 0
        for content in payload.get("contents", []):
            for part in content.get("parts", []) if isinstance(content, dict) else []:
                blob = part.get("inline_data") if isinstance(part, dict) else None
                mime = str(blob.get("mime_type", "")) if isinstance(blob, dict) else ""
                images += mime.startswith("image/")
                videos += mime.startswith("video/")
        return images, videos

    def _http_error(
        self, code: int, headers: httpx.Headers, text: str, payload: Mapping[str, Any]
    ) -> AttemptError:
        """As every backend, but a 400 ``API_KEY_INVALID`` is a bad key (``api_error``, not
        retried, counted toward stopping the run), and a 429's ``RetryInfo.retryDelay``
        (``"37s"``) is its wait when no ``Retry-After`` header came."""
        error = _error_of(text)
        if code == 400 and "API_KEY_INVALID" in _reasons(error):
            quoted = self._clean(self.error_text(text), ERROR_BODY_CHARS)
            return AttemptError(Status.API_ERROR, f"HTTP 400: {quoted}", retryable=False)
        failure = super()._http_error(code, headers, text, payload)
        if failure.retryable and failure.retry_after is None:
            failure.retry_after = _retry_delay(error)
        return failure


def _inline(data: bytes, mime: str) -> dict[str, Any]:
    """One ``inline_data`` part: the bytes base64-encoded with their MIME type."""
    return {"inline_data": {"mime_type": mime, "data": base64.b64encode(data).decode("ascii")}}


def _thinking_config(o: GeminiOptions) -> dict[str, Any]:
    """``generationConfig.thinkingConfig`` from the options (empty: not sent)."""
    config: dict[str, Any] = {}
    if o.thinking_budget is not None:
        config["thinkingBudget"] = o.thinking_budget
    if o.thinking_level is not None:
        config["thinkingLevel"] = o.thinking_level
    if o.include_thoughts:
        config["includeThoughts"] = True
    return config


def _error_of(body: str) -> dict[str, Any]:
    """The ``error`` object of Google's error envelope (empty when the body has none)."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return {}
    return error if isinstance(error, dict) else {}


def _reasons(error: Mapping[str, Any]) -> list[str]:
    """``reason`` of each ``ErrorInfo`` in an error's ``details``."""
    details = error.get("details")
    return (
        [str(d.get("reason")) for d in details or [] if isinstance(d, dict)]
        if isinstance(details, list)
        else []
    )


def _retry_delay(error: Mapping[str, Any]) -> float | None:
    """Seconds of a ``RetryInfo.retryDelay`` (``"37s"``, ``"1.5s"``) in ``details``, if any."""
    details = error.get("details")
    for detail in details if isinstance(details, list) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and (m := re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", delay)):
            return float(m.group(1))
    return None


def default_max_tokens(model: str, options: GeminiOptions) -> int:
    """``maxOutputTokens`` when the user set none: 256, or for a model that thinks (a
    ``thinking_budget`` other than 0, a ``thinking_level``, or a thinking model's name with
    no budget) ``max(4096, budget + 1024)``: its thinking counts against the cap."""
    budget = options.thinking_budget
    if budget == 0:
        return options.max_tokens
    if budget is not None and budget > 0:
        return max(REASONING_MAX_TOKENS, budget + 1024)
    if budget == -1 or options.thinking_level or THINKING_NAME.search(model):
        return REASONING_MAX_TOKENS
    return options.max_tokens


def frame_encoding(arg: str | None, args: Mapping[str, str]) -> FrameEncoding:
    """The frame encoding ``gemini:<arg>`` with ``args`` sends, without building a client
    (registered with ``register_backend``; a Ray driver keys its run with it).

    Raises:
        ValueError: an unknown or invalid ``--model-arg``.
    """
    return options_encoding(parse_options(GeminiOptions, args, "gemini"))


def make(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory for ``gemini:<model>`` (``gemini-2.5-flash``; a leading ``models/`` is dropped).

    Raises:
        ValueError: no or a malformed model name, an unknown or invalid ``--model-arg``, a
            ``base_url`` without ``http://``/``https://``, or no key variable is set.
    """
    name = (arg or "").strip().removeprefix("models/")
    if not name:
        raise ValueError("gemini needs the model name: --model gemini:<model>")
    if not _MODEL_NAME.fullmatch(name):
        raise ValueError(
            f"gemini: model name {name!r} must be letters, digits, '.', '_' or '-' "
            "(as gemini-2.5-flash)"
        )
    options = parse_options(GeminiOptions, args, "gemini")
    check_base_url(options.base_url, "gemini")
    if "max_tokens" not in options.model_fields_set:
        options = options.model_copy(update={"max_tokens": default_max_tokens(name, options)})
    if "api_key_env" not in options.model_fields_set:
        env = next((e for e in KEY_ENVS if os.environ.get(e)), KEY_ENVS[-1])
        options = options.model_copy(update={"api_key_env": env})
    try:
        api_key = read_api_key(options.api_key_env)
    except ValueError as exc:
        raise ValueError(
            f"gemini: {exc} (export GEMINI_API_KEY or GOOGLE_API_KEY, or pass --model-arg "
            "api_key_env=VAR; api_key_env= sends no key)"
        ) from None
    cls = GeminiVideoModel if options.video else GeminiModel
    return cls(name, options, api_key=api_key)


class GeminiVideoModel(GeminiModel):
    """``video=true``: the video file itself as one inline part (``media_input = "path"``);
    the API samples its frames (``video_fps``), not mmrobust's frame policy."""

    media_input: ClassVar[MediaInput] = "path"


__all__ = [
    "KEY_ENVS",
    "THINKING_NAME",
    "WITHHELD",
    "GeminiModel",
    "GeminiOptions",
    "GeminiVideoModel",
    "default_max_tokens",
    "frame_encoding",
    "make",
]
