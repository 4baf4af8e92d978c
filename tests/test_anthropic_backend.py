"""The ``anthropic:`` backend's wire format against the loopback fake Messages server, and
backend placement (the fault tests shared with ``openai:`` are in test_openai_backend.py
and test_faults_server.py, parametrised over ``BACKENDS``)."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest

from mmrobust.media import read_frames, sample_clips
from mmrobust.models import Request, load_model, parse_spec
from mmrobust.models.anthropic import AnthropicModel, AnthropicOptions, make
from mmrobust.models.spec import placement_of
from mmrobust.status import Status
from tests.fake_openai_server import FakeOpenAIServer, Reply, decode_data_url_image

INDICES = (0, 70, 140, 210)


@pytest.fixture(scope="module")
def frames() -> np.ndarray:
    return read_frames(sample_clips()["bikes"], list(INDICES))


def _request(frames: Any = (), **kw: Any) -> Request:
    base: dict[str, Any] = {
        "sample_id": "s1",
        "prompt": "Is it tampered?\nA. Yes\nB. No",
        "question": "Is it tampered?",
        "options": {"A": "Yes", "B": "No"},
        "frames": tuple(frames),
        "frame_indices": INDICES[: len(frames)],
    }
    base.update(kw)
    return Request(**base)


def _model(server: FakeOpenAIServer, **args: str) -> AnthropicModel:
    options = {"base_url": server.base_url, "api_key_env": "", "backoff_initial": "0.01"}
    model = make("claude-test", {**options, **args})
    assert isinstance(model, AnthropicModel)
    model._sleep = lambda _s: None
    return model


def test_messages_body_headers_and_reply(
    frames: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMROBUST_ANT_KEY", "sk-ant-test-0123456789")
    with FakeOpenAIServer(expected_key="sk-ant-test-0123456789") as server:
        server.push(Reply.ok("B", prompt_tokens=321, completion_tokens=2, finish_reason="length"))
        model = _model(server, api_key_env="MMROBUST_ANT_KEY", max_tokens="64")
        [resp] = model.generate(
            [_request(frames, system="Watch closely.", assistant_prefill="Best option:( ")]
        )
        [sent] = server.chat_requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test-0123456789"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    body = sent.body
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("claude-test", 64, 0.0)
    assert body["system"] == "Watch closely."  # top level, not a message
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["messages"][1]["content"] == "Best option:("  # trailing space refused by the API
    assert sent.part_types == ["image"] * 4 + ["text"]
    assert sent.text == _request().prompt
    first = sent.user_content[0]["source"]
    assert (first["type"], first["media_type"]) == ("base64", "image/jpeg")
    images = [decode_data_url_image(u) for u in sent.image_urls]
    assert {im.shape for im in images} == {(272, 640, 3)}  # 640 px is under the 1024 cap
    for pos, image in enumerate(images):  # time order kept: each is closest to its own frame
        errors = [float(np.mean((image.astype(np.float32) - f) ** 2)) for f in frames]
        assert int(np.argmin(errors)) == pos
    assert (resp.status, resp.text) == (Status.OK, "B")
    assert (resp.prompt_tokens, resp.completion_tokens) == (321, 2)
    assert resp.extra["finish_reason"] == "max_tokens"  # stop_reason, as the API names it
    assert resp.extra["n_media"] == 4 and resp.extra["attempts"] == 1


def test_text_blocks_joined_and_thinking_kept_apart() -> None:
    body = {
        "type": "message",
        "content": [
            {"type": "thinking", "thinking": "Option A looks wrong.", "signature": "x"},
            {"type": "text", "text": "The answer"},
            {"type": "text", "text": " is B."},
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 7},
    }
    with FakeOpenAIServer([Reply(body=body)]) as server:
        model = _model(server)
        reply = model.parse_reply(body)
        [resp] = model.generate([_request()])
    assert (reply.text, reply.reasoning, reply.finish) == (
        "The answer is B.",
        "Option A looks wrong.",
        "end_turn",
    )
    assert resp.text == "The answer is B." and "Option A" not in resp.text


def test_overloaded_529_and_429_are_retried_then_answer() -> None:
    with FakeOpenAIServer() as server:
        server.push(Reply.error(529, message="Overloaded"), Reply.error(429, retry_after="0"))
        server.push(Reply.ok("A"))
        [resp] = _model(server).generate([_request()])
    assert (resp.status, resp.text) == (Status.OK, "A")
    assert resp.extra["history"] == ["api_error", "rate_limited", "ok"]


def test_error_envelope_is_quoted_by_type_and_message() -> None:
    with FakeOpenAIServer([Reply.error(400, message="messages.0: too many images")]) as server:
        [resp] = _model(server).generate([_request()])
        assert len(server.chat_requests) == 1  # final
    assert resp.status is Status.REJECTED
    assert resp.error == (
        "HTTP 400: invalid_request_error: messages.0: too many images (attempts: 1)"
    )


def test_persistent_overload_is_api_error_after_all_retries() -> None:
    with FakeOpenAIServer(responder=lambda _r: Reply.error(529, message="Overloaded")) as server:
        [resp] = _model(server, max_retries="2").generate([_request()])
        assert len(server.chat_requests) == 3
    assert resp.status is Status.API_ERROR
    assert resp.error == "HTTP 529: overloaded_error: Overloaded (attempts: 3)"


def test_options_key_and_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"ANTHROPIC_API_KEY.*not set.*api_key_env="):
        make("claude-test", {})
    with pytest.raises(ValueError, match="anthropic:<model>"):
        make(None, {"api_key_env": ""})
    with pytest.raises(ValueError, match="did you mean 'max_tokens'"):
        make("claude-test", {"api_key_env": "", "max_token": "5"})
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-abcdef")
    model = load_model("anthropic:claude-test", {"temperature": "0.5"})
    fp = model.fingerprint()
    assert (fp["backend"], fp["model"], fp["temperature"]) == ("anthropic", "claude-test", 0.5)
    assert "sk-ant" not in repr(fp) and "base_url" not in fp
    assert AnthropicOptions().base_url == "https://api.anthropic.com/v1"
    model.close()


def test_extra_body_and_top_k_are_sent() -> None:
    with FakeOpenAIServer() as server:
        model = _model(server, top_k="1", extra_body='{"thinking": {"type": "disabled"}}')
        model.generate([_request()])
        body = server.chat_requests[0].body
    assert (body["top_k"], body["thinking"]) == (1, {"type": "disabled"})


# -- placement: the registry says where a backend runs; distributed/ asks it -------------


def test_placement_comes_from_the_registration() -> None:
    assert [placement_of(n) for n in ("openai", "anthropic", "hf", "forensic", "constant")] == [
        "api",
        "api",
        "gpu",
        "cpu",
        "cpu",
    ]
    assert parse_spec("anthropic:claude-x").placement == "api"
    assert placement_of("no-such-backend") == "cpu"
    model = load_model("anthropic:claude-x", {"api_key_env": ""})
    assert model.placement == "api" and load_model("constant:A").placement == "cpu"
    model.close()


class _Session:
    """A stand-in for ``RaySession``: room for 6 replicas, 2 GPUs."""

    def slots(self, request: dict[str, float]) -> int:
        return 6

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 6.0, "GPU": 2.0}


def test_replicas_and_gpus_follow_placement() -> None:
    from mmrobust.distributed import RayOptions
    from mmrobust.distributed.eval import gpus_per_replica, replica_count

    session: Any = _Session()
    options = RayOptions()
    got = {
        spec: (
            replica_count(session, options, {"CPU": 1.0}, parse_spec(spec)),
            gpus_per_replica(session, options, parse_spec(spec)),
        )
        for spec in ("anthropic:c", "openai:m", "hf:some/model", "forensic")
    }
    assert got == {
        "anthropic:c": (1, 0.0),  # an API client: one replica, raise its concurrency
        "openai:m": (1, 0.0),
        "hf:some/model": (6, 1.0),
        "forensic": (6, 0.0),
    }


def test_image_blocks_hold_the_runner_jpegs_unchanged() -> None:
    jpeg = b"\xff\xd8fake-jpeg-bytes\xff\xd9"
    with FakeOpenAIServer() as server:
        _model(server).generate([_request(frame_jpegs=(jpeg, jpeg))])
        [sent] = server.chat_requests
    data = [p["source"]["data"] for p in sent.user_content if p["type"] == "image"]
    assert [base64.b64decode(d) for d in data] == [jpeg, jpeg]
