"""``openai:<model>``: any server that speaks the OpenAI chat-completions API.

vLLM, SGLang, LM Studio, Ollama, TGI and hosted APIs. One request per sample:
a ``POST {base_url}/chat/completions`` whose user message holds the media
parts (base64 JPEG ``image_url`` parts, one per frame in time order, or one
``video_url`` part) and the prompt text.

Retry policy (ours, not the client library's, so it is testable): HTTP 429,
408, 5xx, timeouts, connection errors and a malformed JSON body are retried
up to ``max_retries`` times with exponential backoff and full jitter
(``wait_random_exponential``); a ``Retry-After`` header (seconds or HTTP
date) replaces the backoff for that wait. Other 4xx answers are not retried.
When retries run out the ``Response`` carries a typed status, never an
answer: ``rate_limited`` (last answer 429), ``timeout`` (last attempt timed
out or passed its ``deadline``) or ``api_error`` (everything else).

Final answers, never retried (``docs/failures.md``):

* ``rejected``: a 4xx other than 401/403/404/408/429 (the server refuses
  this request for good; ``400`` for an image it cannot take). When the
  message names a limit of the server that every sample will hit (too many
  images, no video input, context too long; ``models/limits.py``),
  ``Response.extra["server_limit"]`` says which and how to fix it, and the
  runner stops the run at once.
* ``empty_reply``: empty content at temperature 0 (greedy decoding gives the
  same nothing again); at temperature > 0 an empty reply is retried and is
  ``empty_reply`` only when every attempt was empty.

Each HTTP attempt has an overall ``deadline`` (default ``3 x timeout``) on top
of httpx's per-operation ``timeout``, so a server that trickles its reply
cannot hang a run (``models/_deadline.py``).

The API key is read from the environment variable named by ``api_key_env``
and sent only in the ``Authorization`` header; it is not part of
``fingerprint()``. Every string taken from the server (error bodies,
answers) goes through ``mmrobust.redact.server_text``: the key, bearer tokens
and URL credentials are masked *before* an error body is cut to length.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, Json
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_base, wait_random_exponential

from mmrobust import __version__
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.models import _deadline
from mmrobust.models._encode import data_url, file_data_url, file_url, frame_data_url
from mmrobust.models._options import parse_options
from mmrobust.models.base import (
    FrameFormat,
    MediaInput,
    Model,
    Request,
    Response,
    place_media,
)
from mmrobust.models.limits import recognise_limit
from mmrobust.redact import redact, scrub_url, server_text
from mmrobust.status import Status

_ERROR_BODY_CHARS = 200


class OpenAIOptions(BaseModel):
    """``--model-arg`` settings of the ``openai`` backend (strings are converted).

    Attributes:
        base_url: server root including ``/v1`` (``http://localhost:8000/v1``).
        api_key_env: name of the environment variable holding the API key;
            ``None`` sends no ``Authorization`` header (local servers).
        temperature: sampling temperature; 0 (greedy) by default.
        max_tokens: cap on generated tokens.
        timeout: seconds one socket operation of an attempt may wait (connect,
            each read, each write).
        deadline: seconds one whole HTTP attempt may take, connect to last byte
            (default ``3 * timeout``); past it the attempt is a ``timeout``.
        concurrency: requests in flight at once (``Model.max_concurrency``).
        max_retries: retries after the first attempt (0: try once).
        backoff_initial: seconds; the n-th backoff is uniform in
            ``[0, min(backoff_max, backoff_initial * 2**n)]``.
        backoff_max: seconds; cap on one backoff wait.
        retry_after_max: seconds; cap on a server's ``Retry-After``.
        image_max_side: pixels; frames are downscaled so the longer side is
            at most this (0: send full size).
        jpeg_quality: JPEG quality (1..100) of the frames sent.
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
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = "https://api.openai.com/v1"
    api_key_env: str | None = None
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(256, ge=1)
    timeout: float = Field(60.0, gt=0)
    deadline: float | None = Field(None, gt=0)
    concurrency: int = Field(4, ge=1)
    max_retries: int = Field(5, ge=0)
    backoff_initial: float = Field(1.0, ge=0)
    backoff_max: float = Field(60.0, ge=0)
    retry_after_max: float = Field(300.0, ge=0)
    image_max_side: int = Field(1024, ge=0)
    jpeg_quality: int = Field(90, ge=1, le=100)
    image_detail: Literal["auto", "low", "high"] | None = None
    video: bool = False
    video_transport: Literal["data", "file"] = "data"
    media_position: Literal["before", "after"] = "before"
    prefill: Literal["continue", "message", "user", "drop"] = "continue"
    seed: int | None = None
    extra_body: Json[dict[str, Any]] | None = None


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (RFC 9110 section 10.2.3).

    Accepts delay-seconds (``"120"``, also ``"1.5"``) or an HTTP date
    (``"Wed, 21 Oct 2015 07:28:00 GMT"``; a date in the past gives 0).
    Returns ``None`` for a missing or unparsable value.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    current = now or datetime.now(timezone.utc)
    return max(0.0, (when - current).total_seconds())


class AttemptError(Exception):
    """One failed HTTP attempt, classified.

    Attributes:
        status: the typed status this failure maps to if it is the last one.
        message: one-line reason (no secrets).
        retryable: whether the policy retries it.
        retry_after: seconds the server asked us to wait, if it did.
        extra: details stored with the row (``server_limit`` of a rejection).
    """

    def __init__(
        self,
        status: Status,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.extra = extra or {}


class WaitRetryAfter(wait_base):
    """Wait what the server's ``Retry-After`` says (capped), else ``fallback``."""

    def __init__(self, fallback: wait_base, cap: float) -> None:
        self.fallback = fallback
        self.cap = cap

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        if isinstance(exc, AttemptError) and exc.retry_after is not None:
            return min(exc.retry_after, self.cap)
        return float(self.fallback(retry_state))


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, AttemptError) and exc.retryable


class OpenAICompatModel(Model):
    """Chat-completions client for one served model; sends sampled frames as images.

    Thread-safe: the runner calls ``generate`` from up to ``max_concurrency``
    threads at once; each call answers its requests one after another.

    Args:
        model: the server's model name (``openai:<model>``).
        options: validated settings (see ``OpenAIOptions``).
        api_key: the key itself, or ``None``; never stored in results.
        transport: optional httpx transport (tests).
        sleep: function used to wait between attempts (tests record waits).
    """

    media_input: ClassVar[MediaInput] = "frames"
    frame_format: ClassVar[FrameFormat] = "jpeg"

    def __init__(
        self,
        model: str,
        options: OpenAIOptions,
        *,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.options = options
        self.name = f"openai:{model}"
        self.max_concurrency = options.concurrency
        self.batch_size = 1
        self._api_key = api_key or None
        self._sleep = sleep
        headers = {"User-Agent": f"mmrobust/{__version__}"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self._client = httpx.Client(
            base_url=options.base_url.rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(options.timeout),
            limits=httpx.Limits(max_connections=max(options.concurrency, 1) * 2),
            transport=transport,
        )
        self._deadline = _deadline.Deadline()
        _deadline.install(self._client, self._deadline)

    @property
    def deadline_s(self) -> float:
        """Seconds one HTTP attempt may take in all (``deadline``, else ``3 * timeout``)."""
        return self.options.deadline or 3 * self.options.timeout

    # -- public API --------------------------------------------------------------------

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Answer each request in order; never raises for a per-request failure."""
        return [self._one(request) for request in requests]

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
        }

    def frame_encoding(self) -> FrameEncoding:
        """Exactly what is sent: ``jpeg_quality``, longer side at most ``image_max_side``."""
        return _encoding(self.options)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    # -- one request -------------------------------------------------------------------

    def _one(self, request: Request) -> Response:
        started = time.monotonic()
        try:
            payload, extra = self.build_payload(request)
        except (OSError, ValueError) as exc:
            return Response(
                text="",
                status=Status.MEDIA_ERROR,
                error=self._clean(f"could not encode media: {exc}"),
                latency_s=time.monotonic() - started,
            )
        history: list[str] = []
        retrying = Retrying(
            stop=stop_after_attempt(self.options.max_retries + 1),
            wait=WaitRetryAfter(
                wait_random_exponential(
                    multiplier=self.options.backoff_initial, max=self.options.backoff_max
                ),
                cap=self.options.retry_after_max,
            ),
            retry=retry_if_exception(_is_retryable),
            sleep=self._sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    try:
                        body = self._attempt(payload)
                    except AttemptError as exc:
                        history.append(exc.status.value)
                        raise
                    history.append("ok")
        except AttemptError as exc:
            return Response(
                text="",
                status=exc.status,
                error=self._clean(f"{exc.message} (attempts: {len(history)})"),
                latency_s=time.monotonic() - started,
                extra={**extra, **exc.extra, "attempts": len(history), "history": history},
            )
        except Exception as exc:  # one bad item never ends a run; the reason is kept
            reason = f"unexpected {type(exc).__name__}: {exc}".splitlines()[0]
            return Response(
                text="",
                status=Status.API_ERROR,
                error=self._clean(reason),
                latency_s=time.monotonic() - started,
                extra={**extra, "attempts": len(history), "history": history},
            )
        text, usage, finish = body
        return Response(
            text=redact(text, [self._api_key]),
            status=Status.OK,
            latency_s=time.monotonic() - started,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            extra={**extra, "attempts": len(history), "history": history, "finish_reason": finish},
        )

    def _attempt(self, payload: dict[str, Any]) -> tuple[str, dict[str, int | None], str | None]:
        """One HTTP attempt: ``(text, usage, finish_reason)`` or ``AttemptError``."""
        self._deadline.start(self.deadline_s)
        try:
            code, headers, raw = self._post(payload)
        except httpx.TimeoutException as exc:
            what = (
                f"reply not complete within the {self.deadline_s:g}s deadline"
                if self._deadline.passed()
                else f"no reply within {self.options.timeout:g}s"
            )
            raise AttemptError(
                Status.TIMEOUT, f"{what} ({type(exc).__name__})", retryable=True
            ) from None
        except httpx.TransportError as exc:
            raise AttemptError(
                Status.API_ERROR,
                self._clean(
                    f"connection error to {scrub_url(self.options.base_url)}: "
                    f"{type(exc).__name__}: {exc}"
                ),
                retryable=True,
            ) from None
        except httpx.HTTPError as exc:  # undecodable body, too many redirects, ...
            raise AttemptError(
                Status.API_ERROR,
                self._clean(f"HTTP client error: {type(exc).__name__}: {exc}"),
                retryable=True,
            ) from None
        finally:
            self._deadline.clear()
        text = raw.decode("utf-8", errors="replace")
        if code >= 400:
            retry_after = parse_retry_after(headers.get("retry-after"))
            snippet = self._clean(text, _ERROR_BODY_CHARS)
            message = f"HTTP {code}: {snippet}" if snippet else f"HTTP {code}"
            if code == 429:
                raise AttemptError(
                    Status.RATE_LIMITED, message, retryable=True, retry_after=retry_after
                )
            if code == 408:
                raise AttemptError(Status.TIMEOUT, message, retryable=True, retry_after=retry_after)
            if code >= 500 or code in (401, 403, 404):  # server down, bad key, wrong URL/name
                raise AttemptError(
                    Status.API_ERROR, message, retryable=code >= 500, retry_after=retry_after
                )
            n_images, n_videos = _count_media(payload)
            limit = recognise_limit(self._clean(text), n_images=n_images, n_videos=n_videos)
            raise AttemptError(
                Status.REJECTED,
                message,
                retryable=False,
                extra={"server_limit": limit.as_extra()} if limit else None,
            )
        try:
            body = json.loads(text)
        except ValueError:
            raise AttemptError(
                Status.API_ERROR,
                f"malformed JSON body: {self._clean(text, 60)!r}",
                retryable=True,
            ) from None
        return _parse_completion(body, greedy=self.options.temperature == 0, clean=self._clean)

    def _post(self, payload: dict[str, Any]) -> tuple[int, httpx.Headers, bytes]:
        """POST ``chat/completions``; ``(status, headers, body)``, read within the deadline.

        Raises:
            httpx.TimeoutException: a socket operation timed out or the deadline passed.
            httpx.HTTPError: any other client or transport failure.
        """
        with self._client.stream("POST", "chat/completions", json=payload) as reply:
            chunks = []
            for chunk in reply.iter_bytes():
                chunks.append(chunk)
                if self._deadline.passed():  # public-API guard if the socket hook is absent
                    raise httpx.ReadTimeout("overall request deadline passed")
            return reply.status_code, reply.headers, b"".join(chunks)

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
            payload["seed"] = o.seed
        extra: dict[str, Any] = {"n_media": len(media)}
        if request.assistant_prefill:
            if o.prefill == "drop":
                extra["prefill_dropped"] = True
            elif o.prefill == "user":
                content.append({"type": "text", "text": request.assistant_prefill})
            else:
                messages.append({"role": "assistant", "content": request.assistant_prefill})
                if o.prefill == "continue":
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

    def _clean(self, message: str, limit: int | None = None) -> str:
        """A server's (or the client library's) text, key masked, then made one line and cut."""
        return server_text(message, [self._api_key], limit)


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
) -> tuple[str, dict[str, int | None], str | None]:
    """Text, usage and finish reason of a chat-completion body, or ``AttemptError``.

    Empty content is ``empty_reply``: final when ``greedy`` (temperature 0), else retried.
    ``clean(text, limit)`` makes a piece of the body safe to quote (default: :func:`server_text`).
    """
    quote = clean or (lambda text, limit: server_text(text, (), limit))
    try:
        choice = body["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        shape = (
            quote(json.dumps(body), 80) if isinstance(body, (dict, list)) else type(body).__name__
        )
        raise AttemptError(
            Status.API_ERROR, f"no choices[0].message in reply: {shape}", retryable=True
        ) from None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):  # some servers return content parts
        content = "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    if not isinstance(content, str) or not content.strip():
        raise AttemptError(
            Status.EMPTY_REPLY, f"empty content (finish_reason={finish})", retryable=not greedy
        )
    usage_raw = body.get("usage") if isinstance(body, dict) else None
    usage: dict[str, int | None] = {"prompt_tokens": None, "completion_tokens": None}
    if isinstance(usage_raw, dict):
        for key in usage:
            value = usage_raw.get(key)
            usage[key] = int(value) if isinstance(value, (int, float)) else None
    return content, usage, finish


def _encoding(options: OpenAIOptions) -> FrameEncoding:
    return FrameEncoding(quality=options.jpeg_quality, max_side=options.image_max_side or None)


def frame_encoding(arg: str | None, args: Mapping[str, str]) -> FrameEncoding:
    """The frame encoding ``openai:<arg>`` with ``args`` sends, without building a client
    (registered in ``mmrobust.models.spec.FRAME_ENCODINGS``; a Ray driver keys its run with it).

    Raises:
        ValueError: an unknown or invalid ``--model-arg``.
    """
    return _encoding(parse_options(OpenAIOptions, args, "openai"))


def make(arg: str | None, args: Mapping[str, str]) -> Model:
    """Factory for ``openai:<model>`` (registered in ``mmrobust.models.spec``).

    Raises:
        ValueError: no model name, an unknown or invalid ``--model-arg``, or
            ``api_key_env`` names a variable that is not set.
    """
    if not arg:
        raise ValueError("openai needs the served model name: --model openai:<model>")
    options = parse_options(OpenAIOptions, args, "openai")
    api_key: str | None = None
    if options.api_key_env:
        api_key = os.environ.get(options.api_key_env)
        if not api_key:
            raise ValueError(
                f"api_key_env={options.api_key_env}: that environment variable is not set"
            )
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
