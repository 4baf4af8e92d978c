"""The openai backend against a real HTTP server on 127.0.0.1, with real video frames.

The retry and failure tests run against every API backend (``openai``, ``anthropic``
and ``gemini``, ``BACKENDS``): the same scripted faults, sent in each wire format.
"""

from __future__ import annotations

import base64
import dataclasses
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mmrobust.media import read_frames, sample_clips
from mmrobust.models import Request, load_model
from mmrobust.models._encode import cap_size, encode_jpeg
from mmrobust.models._http import HttpModel
from mmrobust.models.openai_compat import (
    OpenAICompatModel,
    OpenAICompatVideoModel,
    OpenAIOptions,
    make,
    parse_retry_after,
)
from mmrobust.status import Status
from tests.fake_openai_server import (
    BACKENDS,
    FakeOpenAIServer,
    RecordedRequest,
    Reply,
    auth_header,
    keyed_by_text,
    make_client,
    sent_key,
)

INDICES = (0, 35, 70, 105, 140, 175, 210, 245)  # 8 frames of the 250-frame bikes clip


@pytest.fixture(scope="session")
def bikes() -> Path:
    return sample_clips()["bikes"]


@pytest.fixture(scope="session")
def bikes_frames(bikes: Path) -> np.ndarray:
    return read_frames(bikes, list(INDICES))


@pytest.fixture
def server() -> FakeOpenAIServer:
    with FakeOpenAIServer() as srv:
        yield srv


def _request(frames: np.ndarray | tuple[np.ndarray, ...] = (), **kw: object) -> Request:
    base: dict[str, object] = {
        "sample_id": "s1",
        "prompt": "Does this video exhibit any signs of tampering?\nA. Yes\nB. No",
        "question": "Does this video exhibit any signs of tampering?",
        "options": {"A": "Yes", "B": "No"},
        "frames": tuple(frames),
        "frame_indices": INDICES[: len(frames)],
    }
    base.update(kw)
    return Request(**base)  # type: ignore[arg-type]


def _model(
    server: FakeOpenAIServer, sleeps: list[float] | None = None, **args: str
) -> OpenAICompatModel:
    options = {"base_url": server.base_url, "backoff_initial": "0.01", "backoff_max": "0.05"}
    options.update(args)
    model = make("test", options)
    assert isinstance(model, OpenAICompatModel)
    if sleeps is not None:
        model._sleep = sleeps.append
    return model


def _client(
    backend: str, server: FakeOpenAIServer, sleeps: list[float] | None = None, **args: str
) -> HttpModel:
    """``<backend>:test`` on ``server`` with fast backoff (waits recorded in ``sleeps``)."""
    options = {"backoff_initial": "0.01", "backoff_max": "0.05", **args}
    model = make_client(backend, server, **options)
    assert isinstance(model, HttpModel) and model.name == f"{backend}:test"
    if sleeps is not None:
        model._sleep = sleeps.append
    return model


per_backend = pytest.mark.parametrize("backend", BACKENDS)


# -- request body ----------------------------------------------------------------------------


def test_frames_arrive_in_time_order_as_capped_jpegs(
    server: FakeOpenAIServer, bikes_frames: np.ndarray
) -> None:
    server.push(Reply.ok("A", prompt_tokens=812, completion_tokens=1))
    model = _model(server, image_max_side="320", jpeg_quality="95")
    [resp] = model.generate([_request(bikes_frames, system="Watch carefully.")])

    assert (resp.status, resp.text, resp.error) == (Status.OK, "A", None)
    assert (resp.prompt_tokens, resp.completion_tokens) == (812, 1)
    assert resp.latency_s > 0
    assert resp.extra["attempts"] == 1 and resp.extra["n_media"] == 8

    [sent] = server.chat_requests
    assert sent.body["model"] == "test"
    assert sent.body["temperature"] == 0 and sent.body["max_tokens"] == 256
    assert sent.body["messages"][0] == {"role": "system", "content": "Watch carefully."}
    assert sent.part_types == ["image_url"] * 8 + ["text"]
    assert sent.text == _request().prompt
    images = sent.images()
    # 640x272 capped to 320 on the long side keeps the aspect ratio.
    assert {im.shape for im in images} == {(136, 320, 3)}
    assert cap_size(640, 272, 320) == (320, 136)
    # Each received image is closest to the frame in the same position: order is kept.
    small = [np.asarray(_downscale(f, 320), dtype=np.float32) for f in bikes_frames]
    for pos, image in enumerate(images):
        errors = [float(np.mean((image.astype(np.float32) - s) ** 2)) for s in small]
        assert int(np.argmin(errors)) == pos
        assert errors[pos] < 30.0  # JPEG q95 of the same pixels


def _downscale(frame: np.ndarray, side: int) -> np.ndarray:
    import cv2

    w, h = cap_size(frame.shape[1], frame.shape[0], side)
    return cv2.resize(frame, (w, h), interpolation=cv2.INTER_AREA)


def test_media_after_text_and_image_detail(
    server: FakeOpenAIServer, bikes_frames: np.ndarray
) -> None:
    model = _model(server, media_position="after", image_detail="low", image_max_side="0")
    [resp] = model.generate([_request(bikes_frames[:2])])
    assert resp.status == Status.OK
    [sent] = server.chat_requests
    assert sent.part_types == ["text", "image_url", "image_url"]
    assert [p["image_url"]["detail"] for p in sent.user_content[1:]] == ["low", "low"]
    assert sent.images()[0].shape == (272, 640, 3)  # no cap: full size


def test_text_only_request_has_no_media(server: FakeOpenAIServer) -> None:
    [resp] = _model(server).generate([_request()])
    assert resp.status == Status.OK
    assert server.chat_requests[0].part_types == ["text"]


def test_prefill_modes(server: FakeOpenAIServer) -> None:
    req = _request(assistant_prefill="Best option:(")
    for mode, expect_msg, expect_continue in [
        ("continue", True, True),
        ("message", True, False),
        ("drop", False, False),
    ]:
        [resp] = _model(server, prefill=mode).generate([req])
        sent = server.chat_requests[-1].body
        last = sent["messages"][-1]
        assert (last["role"] == "assistant") is expect_msg
        assert sent.get("continue_final_message", False) is expect_continue
        assert resp.extra.get("prefill_dropped", False) is (mode == "drop")


def test_extra_body_and_seed_are_merged(server: FakeOpenAIServer) -> None:
    model = _model(server, seed="7", extra_body='{"top_k": 1, "max_tokens": 5}')
    model.generate([_request()])
    body = server.chat_requests[0].body
    assert (body["seed"], body["top_k"], body["max_tokens"]) == (7, 1, 5)


def test_bad_frame_is_media_error_without_a_request(server: FakeOpenAIServer) -> None:
    bad = np.zeros((4, 4, 3), dtype=np.float32)
    [resp] = _model(server).generate([_request((bad,))])
    assert resp.status == Status.MEDIA_ERROR
    assert "uint8" in (resp.error or "")
    assert server.chat_requests == []


# -- retries and typed failures -------------------------------------------------------------


@per_backend
def test_retry_after_is_honoured_then_answer(server: FakeOpenAIServer, backend: str) -> None:
    server.push(Reply.error(429, retry_after="2"), Reply.error(503), Reply.ok("B"))
    sleeps: list[float] = []
    [resp] = _client(backend, server, sleeps).generate([_request()])
    assert (resp.status, resp.text) == (Status.OK, "B")
    assert resp.extra["history"] == ["rate_limited", "api_error", "ok"]
    assert len(server.chat_requests) == 3
    assert sleeps[0] == 2.0  # Retry-After seconds, not the backoff
    assert 0.0 <= sleeps[1] <= 0.02  # jittered backoff: uniform in [0, 0.01 * 2**1]


@per_backend
def test_retry_after_is_capped(server: FakeOpenAIServer, backend: str) -> None:
    server.push(Reply.error(429, retry_after="3600"), Reply.ok("A"))
    sleeps: list[float] = []
    _client(backend, server, sleeps, retry_after_max="5").generate([_request()])
    assert sleeps == [5.0]


def test_parse_retry_after_seconds_and_http_date() -> None:
    now = datetime(2015, 10, 21, 7, 27, 30, tzinfo=timezone.utc)
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=now) == 30.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


@pytest.mark.parametrize(
    ("reply", "status", "history"),
    [
        (Reply.error(429, retry_after="0"), Status.RATE_LIMITED, "rate_limited"),
        (Reply.error(500), Status.API_ERROR, "api_error"),
        (Reply.malformed(), Status.API_ERROR, "api_error"),
        (Reply.empty(), Status.EMPTY_REPLY, "empty_reply"),
        (Reply.ok(None), Status.EMPTY_REPLY, "empty_reply"),
        (Reply(body={"object": "chat.completion", "choices": []}), Status.API_ERROR, "api_error"),
        (
            Reply(body="not gzip", headers={"Content-Encoding": "gzip"}),
            Status.API_ERROR,
            "api_error",
        ),
        (Reply(body=["a", "list"]), Status.API_ERROR, "api_error"),
    ],
    ids=[
        "429",
        "500",
        "malformed-json",
        "empty-content",
        "null-content",
        "no-choices",
        "undecodable-gzip",
        "json-list",
    ],
)
@per_backend
def test_persistent_failure_gives_typed_status_after_all_retries(
    server: FakeOpenAIServer, reply: Reply, status: Status, history: str, backend: str
) -> None:
    server.responder = lambda _req: reply
    sleeps: list[float] = []
    # temperature > 0: an empty reply is retried (at 0 it is final at once, tested below)
    [resp] = _client(backend, server, sleeps, max_retries="2", temperature="0.7").generate(
        [_request()]
    )
    assert resp.status == status
    assert resp.text == ""
    assert "attempts: 3" in (resp.error or "")
    assert resp.extra["history"] == [history] * 3
    assert len(server.chat_requests) == 3  # first try + 2 retries
    assert len(sleeps) == 2


@per_backend
@pytest.mark.parametrize(
    "body",
    [
        {"choices": [{"index": 0, "message": None, "finish_reason": "stop"}]},
        {"choices": []},
        {"choices": [{"index": 0, "message": "A", "finish_reason": "stop"}]},
    ],
    ids=["null-message", "no-choices", "string-message"],
)
def test_a_reply_without_a_message_is_retried_even_at_temperature_zero(
    server: FakeOpenAIServer, backend: str, body: dict[str, Any]
) -> None:
    # issue 27 item 12: `message: null` was a final empty_reply while `choices: []` was
    # retried; both are the server's malformed reply, not the model's (empty) answer
    server.push(Reply(body=body), Reply.ok("B"))
    [resp] = _client(backend, server, []).generate([_request()])
    assert (resp.status, resp.text, resp.extra["history"]) == (Status.OK, "B", ["api_error", "ok"])


@per_backend
def test_an_empty_message_is_final_at_temperature_zero(
    server: FakeOpenAIServer, backend: str
) -> None:
    server.push(Reply.ok(None), Reply.ok("B"))  # content null (anthropic: content [])
    [resp] = _client(backend, server, []).generate([_request()])
    assert (resp.status, resp.extra["history"]) == (Status.EMPTY_REPLY, ["empty_reply"])
    assert len(server.chat_requests) == 1


@pytest.mark.parametrize(
    ("first", "label"),
    [(Reply.malformed(), "malformed"), (Reply.empty(), "empty"), (Reply.error(502), "502")],
)
@per_backend
def test_transient_failure_then_answer(
    server: FakeOpenAIServer, first: Reply, label: str, backend: str
) -> None:
    server.push(first, Reply.ok("B"))
    [resp] = _client(backend, server, [], temperature="0.7").generate([_request()])
    assert (resp.status, resp.text, resp.extra["attempts"]) == (Status.OK, "B", 2), label


@per_backend
def test_client_error_is_not_retried(server: FakeOpenAIServer, backend: str) -> None:
    server.push(Reply.error(400, message="too many images"))
    sleeps: list[float] = []
    [resp] = _client(backend, server, sleeps).generate([_request()])
    assert resp.status == Status.REJECTED  # final: a permanent refusal of this request
    assert "HTTP 400" in (resp.error or "") and "too many images" in (resp.error or "")
    assert len(server.chat_requests) == 1 and sleeps == []


@per_backend
def test_hang_past_timeout_is_timeout(server: FakeOpenAIServer, backend: str) -> None:
    server.responder = lambda _req: Reply.hang(30)
    [resp] = _client(backend, server, [], timeout="0.3", max_retries="1").generate([_request()])
    assert resp.status == Status.TIMEOUT
    assert resp.extra["history"] == ["timeout", "timeout"]
    assert len(server.chat_requests) == 2
    assert resp.latency_s >= 0.6  # two full timeouts, retries included


@per_backend
def test_hang_then_answer(server: FakeOpenAIServer, backend: str) -> None:
    server.push(Reply.hang(30), Reply.ok("A"))
    # 2 s: the prompt answer must come within the read timeout even on a busy machine
    [resp] = _client(backend, server, [], timeout="2").generate([_request()])
    assert (resp.status, resp.text, resp.extra["history"]) == (Status.OK, "A", ["timeout", "ok"])


@per_backend
def test_connection_refused_is_api_error(backend: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = load_model(
        f"{backend}:test",
        {"base_url": f"http://127.0.0.1:{port}/v1", "max_retries": "1", "api_key_env": ""},
    )  # nothing listens on that port now
    assert isinstance(model, HttpModel)
    model._sleep = lambda _s: None
    [resp] = model.generate([_request()])
    assert resp.status == Status.API_ERROR
    # the error names the server it tried (a forgotten base_url means api.openai.com)
    assert f"connection error to http://127.0.0.1:{port}/v1: ConnectError" in (resp.error or "")


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens on it once closed


@per_backend
def test_a_dead_server_fails_fast_with_one_attempt(backend: str) -> None:
    # issue 30: connection refused used to take every retry (70-75 s with the defaults)
    port = _dead_port()
    url = f"http://127.0.0.1:{port}/v1"
    model = load_model(f"{backend}:test", {"base_url": url, "api_key_env": ""})
    assert isinstance(model, HttpModel) and model.options.max_retries == 5
    sleeps: list[float] = []
    model._sleep = sleeps.append
    [resp] = model.generate([_request()])
    assert resp.status is Status.API_ERROR
    assert resp.extra["history"] == ["api_error"] and sleeps == []
    assert f"connection error to {url}: ConnectError" in (resp.error or "")
    assert "is it running, and is base_url right?" in (resp.error or "")


@per_backend
def test_a_refused_connection_after_answers_is_retried(backend: str) -> None:
    # a server that answered and then went away (a restart) may come back: retried
    closing = dataclasses.replace(Reply.ok("A"), headers={"Connection": "close"})
    with FakeOpenAIServer(responder=lambda _r: closing) as srv:
        model = _client(backend, srv, [], max_retries="2")
        [first] = model.generate([_request()])
    assert first.status is Status.OK
    [resp] = model.generate([_request()])
    assert resp.status is Status.API_ERROR
    assert resp.extra["history"] == ["api_error"] * 3
    assert "is it running" not in (resp.error or "")


@per_backend
@pytest.mark.parametrize(
    ("url", "hint"),
    [
        ("localhost:8000/v1", "did you mean 'http://localhost:8000/v1'?"),
        ("127.0.0.1:8000/v1", "did you mean 'http://127.0.0.1:8000/v1'?"),
        ("ftp://gpu-box/v1", "did you mean 'http://gpu-box/v1'?"),
        ("http:///v1", "names no host"),
    ],
)
def test_a_base_url_without_http_is_refused_before_any_request(
    backend: str, url: str, hint: str
) -> None:
    with pytest.raises(ValueError, match="base_url") as info:
        load_model(f"{backend}:test", {"base_url": url, "api_key_env": ""})
    assert hint in str(info.value) and "\n" not in str(info.value)


@per_backend
def test_one_bad_request_does_not_end_the_batch(server: FakeOpenAIServer, backend: str) -> None:
    server.responder = keyed_by_text({"poison": Reply.error(500)}, default=Reply.ok("A"))
    reqs = [_request(), _request(prompt="poison"), _request()]
    resps = _client(backend, server, [], max_retries="0").generate(reqs)
    assert [r.status for r in resps] == [Status.OK, Status.API_ERROR, Status.OK]


# -- API key --------------------------------------------------------------------------------


@per_backend
def test_api_key_goes_in_the_header_and_nowhere_else(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    key = "sk-test-SECRET-5f2c9a"
    monkeypatch.setenv("MMROBUST_TEST_KEY", key)
    header = auth_header(backend)

    def echo_auth(req: RecordedRequest) -> Reply:  # a server that echoes the header back
        return Reply.error(500, message=f"bad auth {req.headers.get(header)}")

    with FakeOpenAIServer(expected_key=key, responder=echo_auth) as srv:
        srv.push(Reply.ok("A"))
        model = _client(backend, srv, [], api_key_env="MMROBUST_TEST_KEY", max_retries="0")
        ok, failed = model.generate([_request(), _request()])
        sent = srv.chat_requests[0].headers[header]
        assert sent == sent_key(backend, key)
    assert ok.status == Status.OK
    assert failed.status == Status.API_ERROR
    assert key not in (failed.error or "") and "***" in (failed.error or "")
    assert key not in repr(model.fingerprint())
    assert "api_key" not in repr(model.fingerprint())


def test_missing_key_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MMROBUST_NO_SUCH_KEY", raising=False)
    with pytest.raises(ValueError, match=r"MMROBUST_NO_SUCH_KEY.*not set"):
        make("test", {"api_key_env": "MMROBUST_NO_SUCH_KEY"})


# -- options and spec -----------------------------------------------------------------------


def test_spec_builds_model_with_options() -> None:
    model = load_model(
        "openai:Qwen/Qwen2-VL-7B-Instruct",
        {"base_url": "http://user:pw@gpu-box:8000/v1/", "concurrency": "8"},  # ?token=: refused
    )
    assert isinstance(model, OpenAICompatModel)
    assert model.media_input == "frames"
    assert model.max_concurrency == 8
    assert model.name == "openai:Qwen/Qwen2-VL-7B-Instruct"
    fp = model.fingerprint()
    assert "base_url" not in fp and "pw" not in repr(fp)  # may carry credentials
    assert (fp["model"], fp["temperature"], fp["max_tokens"]) == (
        "Qwen/Qwen2-VL-7B-Instruct",
        0.0,
        256,
    )
    model.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"concurency": "2"}, "did you mean 'concurrency'"),
        ({"concurrency": "two"}, "concurrency"),
        ({"temperature": "-1"}, "temperature"),
        ({"video_transport": "ftp"}, "video_transport"),
        ({"extra_body": "{not json"}, "extra_body"),
    ],
)
def test_bad_model_args_are_one_line_errors(args: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        make("test", args)
    assert "\n" not in str(info.value)


def test_model_name_is_required() -> None:
    with pytest.raises(ValueError, match="openai:<model>"):
        make(None, {})


# -- video_url mode -------------------------------------------------------------------------


def test_video_mode_sends_the_file_as_video_url(server: FakeOpenAIServer, bikes: Path) -> None:
    model = _model(server, video="true")
    assert isinstance(model, OpenAICompatVideoModel)
    assert model.media_input == "path"
    assert OpenAICompatModel.media_input == "frames"  # the class default is untouched
    [resp] = model.generate([_request(video=bikes)])
    assert resp.status == Status.OK
    [sent] = server.chat_requests
    assert sent.part_types == ["video_url", "text"]
    head, _, payload = sent.video_urls[0].partition(",")
    assert head == "data:video/mp4;base64"
    assert base64.b64decode(payload) == bikes.read_bytes()


def test_video_mode_file_transport_and_missing_file(server: FakeOpenAIServer, bikes: Path) -> None:
    model = _model(server, video="true", video_transport="file")
    ok, missing = model.generate([_request(video=bikes), _request(video=Path("/nope/x.mp4"))])
    assert ok.status == Status.OK
    assert server.chat_requests[0].video_urls == [bikes.resolve().as_uri()]
    assert missing.status == Status.MEDIA_ERROR
    assert len(server.chat_requests) == 1


def test_video_mode_image_sample_sends_the_image_file(
    server: FakeOpenAIServer, bikes_frames: np.ndarray, tmp_path: Path
) -> None:
    image = tmp_path / "one.jpg"
    image.write_bytes(encode_jpeg(bikes_frames[0]))
    _model(server, video="true").generate([_request(image=image)])
    [sent] = server.chat_requests
    assert sent.part_types == ["image_url", "text"]
    assert sent.image_urls[0].startswith("data:image/jpeg;base64,")
    assert sent.images()[0].shape == (272, 640, 3)


def test_options_defaults_match_the_docs() -> None:
    o = OpenAIOptions()
    assert (o.temperature, o.max_tokens, o.timeout, o.concurrency, o.max_retries) == (
        0.0,
        256,
        60.0,
        4,
        5,
    )
    assert (o.image_max_side, o.jpeg_quality, o.video, o.prefill) == (1024, 90, False, "continue")


def test_unexpected_exception_becomes_a_typed_row(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(server)

    def boom(_payload: object) -> None:
        raise RuntimeError("bug\nsecond line")

    monkeypatch.setattr(model, "_attempt", boom)
    [resp] = model.generate([_request()])
    assert resp.status == Status.API_ERROR
    assert resp.error == "unexpected RuntimeError: bug"
