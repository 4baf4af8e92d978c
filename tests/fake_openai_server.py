"""A small scriptable OpenAI chat-completions (Anthropic Messages, Gemini) server on 127.0.0.1.

Start it inside a test (it needs no network beyond the loopback):

    with FakeOpenAIServer() as server:                 # default: answers "A"
        server.push(Reply.error(429, retry_after="0"), Reply.ok("B"))
        ...  # POST {server.base_url}/chat/completions
        server.requests[0].image_urls                  # what the client sent

Replies come from, in this order:
1. the in-order queue (``push``), one reply per request;
2. otherwise the ``responder`` callable, given the parsed request, which
   returns a ``Reply`` (use it for replies keyed on the prompt, the model
   name or the images; ``keyed_by_text`` builds one from a dict).

Every request is recorded (``requests``), including ones that got errors.
``GET /v1/models`` lists one model. Thread-safe; handlers run in threads, so
a hanging reply does not block others, and ``stop()`` releases hung ones.

The same server speaks Anthropic's Messages API on ``POST /v1/messages``: a
reply made by ``Reply.ok`` / ``Reply.error`` (and ``trickle`` / ``hang``) is
sent in that wire format there (``{"type": "message", "content": [{"type":
"text", ...}], "stop_reason", "usage": {"input_tokens", "output_tokens"}}``,
errors as ``{"type": "error", "error": {"type", "message"}}``), and the key is
checked in ``x-api-key``; any other reply's body is sent as it is. So one
scripted fault runs against every backend (``make_client``).

It speaks Gemini's ``POST .../models/<model>:generateContent`` the same way
(``tests/fake_gemini.py``: a ``GenerateContentResponse``, Google's error
envelope, the key in ``x-goog-api-key``), and first checks the request body
against the public API reference: a body the real API would refuse is answered
400 ``INVALID_ARGUMENT`` naming what is wrong, and counted in ``wire_problems``.
A wrong key gets the API's 400 ``API_KEY_INVALID``, a missing one 403.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import cv2
import numpy as np

from tests import fake_gemini


@dataclass(frozen=True)
class Reply:
    """One canned HTTP reply.

    Attributes:
        status: HTTP status code.
        body: ``dict``/``list`` (sent as JSON), ``str``/``bytes`` (sent as is).
        headers: extra headers (``Retry-After``...).
        delay_s: seconds to wait before answering (a hang when longer than
            the client's timeout; ``stop()`` cuts it short).
        trickle_s: when > 0, send the body one byte every ``trickle_s`` seconds
            (each read of the client gets a byte long before its read timeout).
        trickle_headers: trickle the status line and headers too, not only the body.
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    trickle_s: float = 0.0
    trickle_headers: bool = False
    meaning: tuple[Any, ...] | None = None
    """What the reply says, for other wire formats: ``("ok", text, prompt_tokens,
    completion_tokens, finish_reason)`` or ``("error", message)``; ``None``: send ``body``."""

    def gemini_body(self) -> Any:
        """``body`` as a Gemini ``GenerateContentResponse`` or error (as is without ``meaning``)."""
        if self.meaning is None:
            return self.body
        if self.meaning[0] == "error":
            return fake_gemini.error_body(self.status, self.meaning[1])
        return fake_gemini.reply_body(*self.meaning[1:])

    def anthropic_body(self) -> Any:
        """``body`` in Anthropic Messages form (as is when the reply has no ``meaning``)."""
        if self.meaning is None:
            return self.body
        if self.meaning[0] == "error":
            kind = _ANTHROPIC_ERRORS.get(self.status, "api_error")
            return {"type": "error", "error": {"type": kind, "message": self.meaning[1]}}
        _, text, prompt_tokens, completion_tokens, finish = self.meaning
        stop = {"stop": "end_turn", "length": "max_tokens"}.get(finish, finish)
        content = [] if text is None else [{"type": "text", "text": text}]
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": "test",
            "content": content,
            "stop_reason": stop,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": completion_tokens},
        }

    @classmethod
    def ok(
        cls,
        text: str | None,
        *,
        prompt_tokens: int = 11,
        completion_tokens: int = 1,
        finish_reason: str = "stop",
        model: str = "test",
    ) -> Reply:
        """A normal chat completion whose message content is ``text`` (may be None/"")."""
        return cls(
            body={
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
            meaning=("ok", text, prompt_tokens, completion_tokens, finish_reason),
        )

    @classmethod
    def empty(cls) -> Reply:
        """A well-formed completion with empty content."""
        return cls.ok("", completion_tokens=0)

    @classmethod
    def error(cls, status: int, *, retry_after: str | None = None, message: str = "") -> Reply:
        """An OpenAI-style error body with ``status`` (and ``Retry-After`` if given)."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        text = message or f"fake error {status}"
        body = {"error": {"message": text, "code": status}}
        return cls(status=status, body=body, headers=headers, meaning=("error", text))

    @classmethod
    def malformed(cls) -> Reply:
        """HTTP 200 whose body is not JSON."""
        return cls(
            body='{"choices": [ this is not json', headers={"Content-Type": "application/json"}
        )

    @classmethod
    def trickle(cls, text: str = "A", *, every_s: float = 0.1, headers: bool = False) -> Reply:
        """A normal answer sent one byte every ``every_s`` seconds (a "slow loris" reply)."""
        ok = cls.ok(text)
        return cls(body=ok.body, trickle_s=every_s, trickle_headers=headers, meaning=ok.meaning)

    @classmethod
    def hang(cls, seconds: float = 30.0) -> Reply:
        """Answer "A" only after ``seconds`` (past any sensible test timeout)."""
        ok = cls.ok("A")
        return cls(body=ok.body, delay_s=seconds, meaning=ok.meaning)


_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received.

    Attributes:
        method: ``GET`` / ``POST``.
        path: request path (``/v1/chat/completions``).
        headers: request headers (lower-cased names).
        body: parsed JSON body (``None`` when absent or not JSON).
        raw: the raw body bytes.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    raw: bytes

    @property
    def user_content(self) -> list[dict[str, Any]]:
        """Content parts of the last user message (a string content becomes one text part;
        Gemini's parts as ``fake_gemini.flat_parts`` gives them)."""
        if self.path.endswith(fake_gemini.PATH_SUFFIX):
            return fake_gemini.flat_parts(self.body)
        messages = (self.body or {}).get("messages", [])
        for message in reversed(messages):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return [{"type": "text", "text": content}]
                return list(content or [])
        return []

    @property
    def text(self) -> str:
        """All text parts of the last user message, joined by newlines."""
        return "\n".join(p.get("text", "") for p in self.user_content if p.get("type") == "text")

    @property
    def part_types(self) -> list[str]:
        """Types of the user content parts in order (``["image_url", ..., "text"]``)."""
        return [str(p.get("type")) for p in self.user_content]

    @property
    def image_urls(self) -> list[str]:
        """URLs of the ``image_url`` parts (Anthropic ``image`` blocks, Gemini image
        ``inline_data``, as data URLs), in order."""
        urls = []
        for p in self.user_content:
            if p.get("type") == "image_url":
                urls.append(p["image_url"]["url"])
            elif p.get("type") == "image" and p.get("source", {}).get("type") == "base64":
                src = p["source"]
                urls.append(f"data:{src['media_type']};base64,{src['data']}")
            elif p.get("type") == "inline_data" and str(p["mime_type"]).startswith("image/"):
                urls.append(f"data:{p['mime_type']};base64,{p['data']}")
        return urls

    @property
    def video_urls(self) -> list[str]:
        """URLs of the ``video_url`` parts (Gemini video ``inline_data`` as data URLs), in order."""
        urls = []
        for p in self.user_content:
            if p.get("type") == "video_url":
                urls.append(p["video_url"]["url"])
            elif p.get("type") == "inline_data" and str(p["mime_type"]).startswith("video/"):
                urls.append(f"data:{p['mime_type']};base64,{p['data']}")
        return urls

    def images(self) -> list[np.ndarray]:
        """Decode the base64 ``image_url`` parts: each ``(H, W, 3) uint8 RGB``, in order.

        Raises:
            ValueError: a URL is not a base64 data URL of a decodable image.
        """
        out = []
        for url in self.image_urls:
            out.append(decode_data_url_image(url))
        return out


def decode_data_url_image(url: str) -> np.ndarray:
    """``data:image/...;base64,...`` -> ``(H, W, 3) uint8 RGB``.

    Raises:
        ValueError: not a base64 data URL, or not a decodable image.
    """
    head, sep, payload = url.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        raise ValueError(f"not a base64 data URL: {url[:40]!r}")
    buf = np.frombuffer(base64.b64decode(payload), dtype=np.uint8)
    bgr = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError("data URL does not hold a decodable image")
    return np.ascontiguousarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))


Responder = Callable[[RecordedRequest], Reply]


def keyed_by_text(replies: Mapping[str, Reply], default: Reply | None = None) -> Responder:
    """A responder that picks the reply whose key occurs in the request's user text.

    The first matching key (in ``replies`` order) wins; no match gives
    ``default`` (an "A" answer when not given).
    """
    fallback = default or Reply.ok("A")

    def respond(request: RecordedRequest) -> Reply:
        text = request.text
        for key, reply in replies.items():
            if key in text:
                return reply
        return fallback

    return respond


_MODEL_PATHS = ("/chat/completions", "/messages", fake_gemini.PATH_SUFFIX)


class FakeOpenAIServer:
    """Chat-completions endpoint on ``127.0.0.1:<free port>`` run in a thread.

    Args:
        replies: initial in-order queue of replies.
        responder: reply for a request when the queue is empty (default: "A").
        expected_key: when set, a request without ``Authorization: Bearer <key>``
            gets HTTP 401.
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        responder: Responder | None = None,
        expected_key: str | None = None,
    ) -> None:
        self._queue: deque[Reply] = deque(replies)
        self.responder: Responder = responder or (lambda _req: Reply.ok("A"))
        self.expected_key = expected_key
        self.requests: list[RecordedRequest] = []
        self.wire_problems: list[str] = []
        """What was wrong with each Gemini body the fake refused (empty: every one was valid)."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- control -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound TCP port."""
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *replies: Reply) -> None:
        """Append replies to the in-order queue."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Recorded model requests (``POST .../chat/completions``, ``.../messages`` or
        ``...:generateContent``), in order."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith(_MODEL_PATHS)]

    def start(self) -> FakeOpenAIServer:
        """Serve in a daemon thread; returns self."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release hanging handlers."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals -----------------------------------------------------------------------

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
        return self.responder(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return  # keep test output quiet

            def _record(self, method: str) -> RecordedRequest:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                headers = {k.lower(): v for k, v in self.headers.items()}
                return RecordedRequest(method, self.path, headers, body, raw)

            def _send(self, reply: Reply, *, wire: str = "openai") -> None:
                if reply.delay_s > 0 and server._stopping.wait(reply.delay_s):
                    return
                render = {"anthropic": reply.anthropic_body, "gemini": reply.gemini_body}
                body = render[wire]() if wire in render else reply.body
                if isinstance(body, (dict, list)):
                    payload = json.dumps(body).encode()
                elif isinstance(body, str):
                    payload = body.encode()
                else:
                    payload = body or b""
                if reply.trickle_s > 0:
                    self._trickle(reply, payload)
                    return
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/json", **reply.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout); nothing to do

            def _trickle(self, reply: Reply, payload: bytes) -> None:
                head = [f"HTTP/1.1 {reply.status} OK"]
                head += [f"{k}: {v}" for k, v in {"Content-Type": "application/json"}.items()]
                head += [f"Content-Length: {len(payload)}", "", ""]
                raw_head = "\r\n".join(head).encode()
                slow = raw_head + payload if reply.trickle_headers else payload
                try:
                    if not reply.trickle_headers:
                        self.wfile.write(raw_head)
                        self.wfile.flush()
                    for i in range(len(slow)):
                        if server._stopping.wait(reply.trickle_s):
                            return
                        self.wfile.write(slow[i : i + 1])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up
                self.close_connection = True

            def do_GET(self) -> None:
                request = self._record("GET")
                with server._lock:
                    server.requests.append(request)
                if self.path.rstrip("/").endswith("/models"):
                    body = {"object": "list", "data": [{"id": "test", "object": "model"}]}
                    self._send(Reply(body=body))
                else:
                    self._send(Reply.error(404))

            def do_POST(self) -> None:
                request = self._record("POST")
                path = self.path.rstrip("/")
                wire = "openai"
                if path.endswith("/messages"):
                    wire = "anthropic"
                elif path.endswith(fake_gemini.PATH_SUFFIX):
                    wire = "gemini"
                if not path.endswith(_MODEL_PATHS):
                    with server._lock:
                        server.requests.append(request)
                    self._send(Reply.error(404))
                    return
                refusal = self._refusal(request, wire)
                if refusal is not None:
                    with server._lock:
                        server.requests.append(request)
                    self._send(refusal, wire=wire)
                    return
                self._send(server._next_reply(request), wire=wire)

            def _refusal(self, request: RecordedRequest, wire: str) -> Reply | None:
                """The reply to a request with the wrong key or (Gemini) a malformed body."""
                want = server.expected_key
                header = auth_header(wire)
                sent = request.headers.get(header)
                if wire == "gemini":
                    if want is not None and sent is None:  # the API: unregistered caller
                        return Reply(403, fake_gemini.error_body(403, "unregistered caller"))
                    if want is not None and sent != want:
                        body = fake_gemini.error_body(
                            400, "API key not valid.", reason="API_KEY_INVALID"
                        )
                        return Reply(400, body)
                    problems = fake_gemini.request_problems(request.body)
                    if problems:
                        with server._lock:
                            server.wire_problems.extend(problems)
                        message = "Invalid JSON payload received. " + "; ".join(problems)
                        return Reply(400, fake_gemini.error_body(400, message))
                    return None
                if want is not None and sent != (want if wire == "anthropic" else f"Bearer {want}"):
                    return Reply.error(401, message="bad key")
                return None

        return Handler


BACKENDS = ("openai", "anthropic", "gemini")
"""The API backends this server speaks for (``make_client``)."""


def make_client(backend: str, server: FakeOpenAIServer, **args: str) -> Any:
    """``<backend>:test`` pointed at ``server`` (no key unless ``api_key_env`` is given)."""
    from mmrobust.models import load_model

    options: dict[str, str] = {"base_url": server.base_url, "api_key_env": "", **args}
    if backend == "openai" and not options["api_key_env"]:
        del options["api_key_env"]
    return load_model(f"{backend}:test", options)


def auth_header(backend: str) -> str:
    """The request header that carries the key for ``backend``."""
    return {"anthropic": "x-api-key", "gemini": fake_gemini.KEY_HEADER}.get(
        backend, "authorization"
    )


def keyless(backend: str) -> list[str]:
    """``--model-arg api_key_env=`` for a backend that reads a key variable by default."""
    return [] if backend == "openai" else ["--model-arg", "api_key_env="]


def sent_key(backend: str, key: str) -> str:
    """The value of ``auth_header(backend)`` that carries ``key``."""
    return f"Bearer {key}" if backend == "openai" else key


__all__ = [
    "BACKENDS",
    "FakeOpenAIServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "auth_header",
    "decode_data_url_image",
    "keyed_by_text",
    "keyless",
    "make_client",
    "sent_key",
]
