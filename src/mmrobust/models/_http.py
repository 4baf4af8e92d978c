"""What every HTTP API backend shares: retries, deadlines, HTTP -> typed ``Status``.

A backend (``openai_compat.py``, ``anthropic.py``) subclasses :class:`HttpModel`
and says only what differs on the wire: its options (a subclass of
:class:`HttpOptions`), its headers, the request body (:meth:`HttpModel.build_payload`)
and how a 200 body reads (:meth:`HttpModel.parse_reply`). This module does the rest,
the same way for every backend:

Retry policy (ours, not a client library's, so it is testable): HTTP 429,
408, 5xx (Anthropic's 529 "overloaded" included), timeouts, connection errors
on a server that has answered before and a malformed JSON body are retried up
to ``max_retries`` times with exponential backoff and full jitter
(``wait_random_exponential``); a ``Retry-After`` header (seconds or HTTP date)
replaces the backoff for that wait. Other 4xx answers are not retried. When
retries run out the ``Response`` carries a typed status, never an answer:
``rate_limited`` (last answer 429), ``timeout`` (last attempt timed out or
passed its ``deadline``) or ``api_error`` (everything else).

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
* a dead server: connection refused (or a name that does not resolve, or a URL
  without ``http://``) before the server has ever answered this client is one
  attempt, ``api_error``, with a message naming the server; once it has answered,
  a refused connection (a restart) is retried like any transient failure.

Each HTTP attempt has an overall ``deadline`` (default ``3 x timeout``) on top
of httpx's per-operation ``timeout``, so a server that trickles its reply
cannot hang a run (``models/_deadline.py``).

The key is read from the variable ``api_key_env`` names, sent only in the backend's header and
never part of ``fingerprint()``; ``base_url``'s user and password go as httpx ``auth`` (the URL
it logs holds none). Every string from the server (error bodies, answers) goes through
``mmrobust.redact.server_text``: key, password, tokens masked *before* a body is cut to length.
"""

from __future__ import annotations

import json
import os
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field
from tenacity import Retrying, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_random_exponential

from mmrobust import __version__
from mmrobust.frame_size import DEFAULT_IMAGE_MAX_SIDE
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.models import _deadline
from mmrobust.models._attempt import (
    AttemptError,
    Completion,
    WaitRetryAfter,
    body_shape,
    empty_reply,
    is_retryable,
    oversize,
    parse_retry_after,
    token_count,
)
from mmrobust.models._clients import ClientPool
from mmrobust.models._encode import count_payload_media, missing_media
from mmrobust.models._reasoning import ReasoningMode, drop_reasoning
from mmrobust.models.base import FrameFormat, MediaInput, Model, Placement, Request, Response
from mmrobust.models.limits import recognise_limit
from mmrobust.redact import redact, scrub_url, server_text, url_auth, url_secrets
from mmrobust.status import Status

ERROR_BODY_CHARS = 200
"""Characters of an error body kept in ``Response.error`` (after redaction)."""
MAX_REPLY_BYTES = 1 << 20
"""Default ``max_reply_bytes``: a reply body is read up to 1 MiB (bytes after content decoding)."""


class HttpOptions(BaseModel):
    """``--model-arg`` settings every HTTP backend has (strings are converted).

    Attributes:
        base_url: server root (``http://localhost:8000/v1``); must start with
            ``http://`` or ``https://``.
        api_key_env: name of the environment variable holding the API key;
            ``None`` sends no key (local servers).
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
        reasoning: ``keep`` (default) stores the model's reasoning, ``drop`` does not
            (``models/_reasoning.py``).
        max_reply_bytes: bytes of a reply body read at most (decoded; default 1 MiB); a
            longer body is not read on: the row is ``rejected``, not retried.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = "http://localhost:8000/v1"
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
    image_max_side: int = Field(DEFAULT_IMAGE_MAX_SIDE, ge=0)
    jpeg_quality: int = Field(90, ge=1, le=100)
    reasoning: ReasoningMode = "keep"
    max_reply_bytes: int = Field(MAX_REPLY_BYTES, ge=1)


def options_encoding(options: HttpOptions) -> FrameEncoding:
    """The frames an HTTP backend with ``options`` sends: JPEG ``jpeg_quality``, longer side
    at most ``image_max_side`` (``HttpModel.frame_encoding``; computed without a client for
    ``models.spec.frame_encoding_of``)."""
    return FrameEncoding(quality=options.jpeg_quality, max_side=options.image_max_side or None)


def check_base_url(url: str, backend: str) -> None:
    """Refuse a ``base_url`` httpx cannot send to, in one line, before any request.

    Raises:
        ValueError: no ``http://`` / ``https://`` scheme (``localhost:8000/v1``), or no host.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        guess = url.strip().split("://", 1)[-1]
        raise ValueError(
            f"{backend}: base_url={scrub_url(url)!r} must start with http:// or https:// "
            f"(did you mean 'http://{scrub_url(guess)}'?)"
        )
    if not parts.hostname:
        raise ValueError(f"{backend}: base_url={scrub_url(url)!r} names no host")


def read_api_key(env: str | None) -> str | None:
    """The key in the environment variable ``env`` (``None`` when ``env`` is ``None``).

    Raises:
        ValueError: ``env`` names a variable that is not set or is empty.
    """
    if not env:
        return None
    key = os.environ.get(env)
    if not key:
        raise ValueError(f"api_key_env={env}: that environment variable is not set")
    return key


class HttpModel(Model):
    """An API model answered over HTTP: one POST to ``endpoint`` per request.

    Thread-safe: the runner calls ``generate`` from up to ``max_concurrency``
    threads at once; each call answers its requests one after another.
    Subclasses set ``backend`` and ``endpoint`` (``{model}``: the model) and implement
    :meth:`auth_headers`, :meth:`build_payload`, :meth:`parse_reply` and
    :meth:`fingerprint`; :meth:`count_media` feeds the server-limit check.

    Args:
        model: the server's model name (``<backend>:<model>``).
        options: validated settings (a :class:`HttpOptions` subclass).
        api_key: the key itself, or ``None``; never stored in results.
        transport: optional httpx transport (tests).
        sleep: function used to wait between attempts (tests record waits).
    """

    placement: ClassVar[Placement] = "api"
    media_input: ClassVar[MediaInput] = "frames"
    frame_format: ClassVar[FrameFormat] = "jpeg"
    backend: ClassVar[str] = "http"
    endpoint: ClassVar[str] = ""

    def __init__(
        self,
        model: str,
        options: HttpOptions,
        *,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.options = options
        self.name = f"{self.backend}:{model}"
        self.max_concurrency = options.concurrency
        self.batch_size = 1
        self._api_key = api_key or None
        self._secrets = [self._api_key, *url_secrets(options.base_url)]
        self._sleep = sleep
        self._answered = False  # has the server ever sent an HTTP reply to this client?
        headers = {"User-Agent": f"mmrobust/{__version__}", **self.auth_headers()}
        base_url, auth = url_auth(options.base_url)
        self._deadline = _deadline.Deadline()
        self._clients = ClientPool(
            {
                "base_url": base_url.rstrip("/") + "/",  # httpx logs it: no password in it
                "auth": auth,
                "headers": headers,
                "timeout": httpx.Timeout(options.timeout),
                "transport": transport,
            },
            self._deadline,
        )

    # -- what a backend says ---------------------------------------------------------

    def auth_headers(self) -> dict[str, str]:
        """Headers sent with every request (the key's header goes here). Default: none."""
        return {}

    @abstractmethod
    def build_payload(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """The JSON body for ``request`` and extras to record with its row.

        Raises:
            ValueError, OSError: the media cannot be encoded (a ``media_error`` row).
        """

    @abstractmethod
    def parse_reply(self, body: Any) -> Completion:
        """Read a 200 body (parsed JSON).

        Raises:
            AttemptError: no answer in it (``empty_reply`` via :func:`empty_reply`, or
                ``api_error`` for a body of the wrong shape, retried).
        """

    def count_media(self, payload: Mapping[str, Any]) -> tuple[int, int]:
        """``(image parts, video parts)`` in a request body (``recognise_limit``; a body with
        none for a sample with media is ``media_error``): default ``count_payload_media``."""
        return count_payload_media(payload)

    def error_text(self, body: str) -> str:
        """The part of an error body worth quoting (default: all of it, cut later)."""
        return body

    # -- shared ------------------------------------------------------------------------

    @property
    def deadline_s(self) -> float:
        """Seconds one HTTP attempt may take in all (``deadline``, else ``3 * timeout``)."""
        return self.options.deadline or 3 * self.options.timeout

    @property
    def greedy(self) -> bool:
        """Temperature 0: an empty reply is final."""
        return self.options.temperature == 0

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Answer each request in order; never raises for a per-request failure."""
        return [self._one(request) for request in requests]

    def frame_encoding(self) -> FrameEncoding:
        """Exactly what is sent: ``jpeg_quality``, longer side at most ``image_max_side``."""
        return options_encoding(self.options)

    def close(self) -> None:
        """Close the HTTP connections."""
        self._clients.close()

    def _clean(self, message: str, limit: int | None = None) -> str:
        """A server's (or the client library's) text, key masked, then made one line and cut."""
        return server_text(message, self._secrets, limit)

    def _retrying(self) -> Retrying:
        o = self.options
        return Retrying(
            stop=stop_after_attempt(o.max_retries + 1),
            wait=WaitRetryAfter(
                wait_random_exponential(multiplier=o.backoff_initial, max=o.backoff_max),
                cap=o.retry_after_max,
            ),
            retry=retry_if_exception(is_retryable),
            sleep=self._sleep,
            reraise=True,
        )

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
        if blind := missing_media(request, self.media_input, self.count_media(payload)):
            err = self._clean(f"{self.backend}: {blind}")
            return Response("", Status.MEDIA_ERROR, err, time.monotonic() - started, extra=extra)
        history: list[str] = []
        try:
            reply = self._attempts(payload, history)
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
        return self._response(
            reply, started, {**extra, "attempts": len(history), "history": history}
        )

    def _attempts(self, payload: dict[str, Any], history: list[str]) -> Completion:
        """The attempts of one request under the retry policy: the reply, or the last
        ``AttemptError`` raised (``history`` gains each attempt's status). Attempt 1 runs
        outside tenacity (most requests need one; tenacity's bookkeeping cost CPU); a retryable
        failure of it is replayed as tenacity's attempt 1: waits and stop are unchanged."""
        try:
            return self._logged_attempt(payload, history)
        except AttemptError as exc:
            if not exc.retryable:
                raise
            first: AttemptError | None = exc
        for attempt in self._retrying():
            with attempt:
                if first is not None:  # attempt 1 was made above: its failure decides the wait
                    failed, first = first, None
                    raise failed
                reply = self._logged_attempt(payload, history)
        return reply

    def _logged_attempt(self, payload: dict[str, Any], history: list[str]) -> Completion:
        """One :meth:`_attempt`, its status (``ok`` or the failure's) appended to ``history``."""
        try:
            reply = self._attempt(payload)
        except AttemptError as exc:
            history.append(exc.status.value)
            raise
        history.append("ok")
        return reply

    def _response(self, reply: Completion, started: float, extra: dict[str, Any]) -> Response:
        """The ``ok`` response for a parsed reply (texts redacted; ``reasoning=drop`` applied)."""
        text, reasoning = reply.text, reply.reasoning
        extra = {**extra, "finish_reason": reply.finish}
        if self.options.reasoning == "drop":
            text, reasoning, removed = drop_reasoning(text, reasoning)
            if removed:
                extra["reasoning_dropped_chars"] = removed
        return Response(
            text=redact(text, self._secrets),
            status=Status.OK,
            latency_s=time.monotonic() - started,
            prompt_tokens=reply.usage.get("prompt_tokens"),
            completion_tokens=reply.usage.get("completion_tokens"),
            extra=extra,
            reasoning=redact(reasoning, self._secrets) if reasoning else None,
        )

    def _attempt(self, payload: dict[str, Any]) -> Completion:
        """One HTTP attempt: the parsed reply, or ``AttemptError``."""
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
            dead = isinstance(exc, (httpx.ConnectError, httpx.UnsupportedProtocol))
            never = dead and not self._answered
            hint = " (no server answers there; is it running, and is base_url right?)"
            raise AttemptError(
                Status.API_ERROR,
                self._clean(
                    f"connection error to {scrub_url(self.options.base_url)}: "
                    f"{type(exc).__name__}: {exc}{hint if never else ''}"
                ),
                retryable=not never,
            ) from None
        except httpx.HTTPError as exc:  # undecodable body, too many redirects, ...
            raise AttemptError(
                Status.API_ERROR,
                self._clean(f"HTTP client error: {type(exc).__name__}: {exc}"),
                retryable=True,
            ) from None
        finally:
            self._deadline.clear()
        self._answered = True
        text = raw.decode("utf-8", errors="replace")
        if code >= 400:
            raise self._http_error(code, headers, text, payload)
        try:
            body = json.loads(text)
        except ValueError:
            raise AttemptError(
                Status.API_ERROR,
                f"malformed JSON body: {self._clean(text, 60)!r}",
                retryable=True,
            ) from None
        return self.parse_reply(body)

    def _http_error(
        self, code: int, headers: httpx.Headers, text: str, payload: Mapping[str, Any]
    ) -> AttemptError:
        """HTTP status ``code`` (>= 400) -> the typed failure (see the module docstring)."""
        retry_after = parse_retry_after(headers.get("retry-after"))
        text = self.error_text(text)
        snippet = self._clean(text, ERROR_BODY_CHARS)
        message = f"HTTP {code}: {snippet}" if snippet else f"HTTP {code}"
        if code == 429:
            return AttemptError(
                Status.RATE_LIMITED, message, retryable=True, retry_after=retry_after
            )
        if code == 408:
            return AttemptError(Status.TIMEOUT, message, retryable=True, retry_after=retry_after)
        if code >= 500 or code in (401, 403, 404):  # server down, bad key, wrong URL/name
            return AttemptError(
                Status.API_ERROR, message, retryable=code >= 500, retry_after=retry_after
            )
        n_images, n_videos = self.count_media(payload)
        limit = recognise_limit(self._clean(text), n_images=n_images, n_videos=n_videos)
        return AttemptError(
            Status.REJECTED,
            message,
            retryable=False,
            extra={"server_limit": limit.as_extra()} if limit else None,
        )

    def _post(self, payload: dict[str, Any]) -> tuple[int, httpx.Headers, bytes]:
        """POST ``endpoint``; ``(status, headers, body)``, read within the deadline.

        Raises:
            httpx.TimeoutException: a socket operation timed out or the deadline passed.
            httpx.HTTPError: any other client or transport failure.
        """
        cap, size, path = self.options.max_reply_bytes, 0, self.endpoint.format(model=self.model)
        with self._clients.client() as client, client.stream("POST", path, json=payload) as reply:
            chunks = []
            for chunk in reply.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > cap:  # stop reading: the rest never reaches memory
                    if reply.status_code >= 400:  # an error body is only quoted: its start
                        break
                    self._answered = True
                    raise oversize(reply.headers.get("content-length"), cap)
                if self._deadline.passed():  # public-API guard if the socket hook is absent
                    raise httpx.ReadTimeout("overall request deadline passed")
            return reply.status_code, reply.headers, b"".join(chunks)


__all__ = [
    "ERROR_BODY_CHARS",
    "AttemptError",
    "Completion",
    "HttpModel",
    "HttpOptions",
    "WaitRetryAfter",
    "body_shape",
    "check_base_url",
    "empty_reply",
    "parse_retry_after",
    "read_api_key",
    "token_count",
]
