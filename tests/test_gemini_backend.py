"""The ``gemini:`` backend's wire format against the loopback fake, which checks each body
against the public generateContent reference (``tests/fake_gemini.py``); the fault tests
shared with ``openai:`` and ``anthropic:`` are in test_openai_backend.py, test_faults_server.py
and test_reply_cap.py, parametrised over ``BACKENDS``."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import read_frames, sample_clips
from mmrobust.models import Request, load_model
from mmrobust.models.gemini import GeminiModel, GeminiVideoModel, make
from mmrobust.models.spec import frame_encoding_of, placement_of
from mmrobust.status import Status
from tests.fake_gemini import error_body, request_problems
from tests.fake_openai_server import FakeOpenAIServer, Reply, decode_data_url_image

INDICES = (0, 70, 140, 210)
KEY = "AIzaSyTEST-gemini-0123456789abcdef"


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


def _v1beta(server: FakeOpenAIServer) -> str:
    return f"http://127.0.0.1:{server.port}/v1beta"


def _model(server: FakeOpenAIServer, name: str = "gemini-test", **args: str) -> GeminiModel:
    options = {"base_url": _v1beta(server), "api_key_env": "", "backoff_initial": "0.01"}
    model = make(name, {**options, **args})
    assert isinstance(model, GeminiModel)
    model._sleep = lambda _s: None
    return model


def _candidate(parts: list[dict[str, Any]] | None, finish: str = "STOP") -> dict[str, Any]:
    content: dict[str, Any] = {"role": "model"}
    if parts is not None:
        content["parts"] = parts
    return {"candidates": [{"content": content, "finishReason": finish, "index": 0}]}


def test_generate_content_body_key_header_and_reply(
    frames: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMROBUST_GEMINI_KEY", KEY)
    with FakeOpenAIServer(expected_key=KEY) as server:
        server.push(Reply.ok("B", prompt_tokens=321, completion_tokens=2, finish_reason="length"))
        model = _model(server, api_key_env="MMROBUST_GEMINI_KEY", max_tokens="64")
        [resp] = model.generate(
            [_request(frames, system="Watch closely.", assistant_prefill="Best option:(")]
        )
        [sent] = server.chat_requests
        assert server.wire_problems == []
    assert sent.path == "/v1beta/models/gemini-test:generateContent"  # no key in the URL
    assert sent.headers["x-goog-api-key"] == KEY and "authorization" not in sent.headers
    body = sent.body
    assert set(body) == {"contents", "system_instruction", "generationConfig"}
    assert body["system_instruction"] == {"parts": [{"text": "Watch closely."}]}
    assert body["generationConfig"] == {"temperature": 0.0, "maxOutputTokens": 64}
    [turn] = body["contents"]  # prefill=user: the prefill is the user turn's last text part
    assert turn["role"] == "user" and len(turn["parts"]) == 6
    assert turn["parts"][4:] == [{"text": _request().prompt}, {"text": "Best option:("}]
    blobs = [p["inline_data"] for p in turn["parts"][:4]]
    assert {tuple(b) for b in blobs} == {("mime_type", "data")}
    assert {b["mime_type"] for b in blobs} == {"image/jpeg"}
    images = [decode_data_url_image(u) for u in sent.image_urls]
    assert {im.shape for im in images} == {(272, 640, 3)}  # 640 px is under the 1024 cap
    for pos, image in enumerate(images):  # time order kept: each is closest to its own frame
        errors = [float(np.mean((image.astype(np.float32) - f) ** 2)) for f in frames]
        assert int(np.argmin(errors)) == pos
    assert (resp.status, resp.text, resp.error) == (Status.OK, "B", None)
    assert (resp.prompt_tokens, resp.completion_tokens) == (321, 2)
    assert resp.extra["finish_reason"] == "MAX_TOKENS"  # finishReason, as the API names it
    assert resp.extra["n_media"] == 4 and resp.extra["attempts"] == 1


def test_runner_jpegs_are_sent_byte_for_byte_and_prefill_modes() -> None:
    jpeg = b"\xff\xd8\xff\xe0fake-jpeg-bytes\xff\xd9"
    with FakeOpenAIServer() as server:
        _model(server).generate([_request(frame_jpegs=(jpeg, jpeg))])
        _model(server, prefill="message", media_position="after").generate(
            [_request(assistant_prefill="Best option:(")]
        )
        [dropped] = _model(server, prefill="drop").generate([_request(assistant_prefill="X")])
        first, message, drop = (r.body for r in server.chat_requests)
        assert server.wire_problems == []
    sent = [base64.b64decode(p["inline_data"]["data"]) for p in first["contents"][0]["parts"][:2]]
    assert sent == [jpeg, jpeg]
    assert [c["role"] for c in message["contents"]] == ["user", "model"]
    assert message["contents"][1]["parts"] == [{"text": "Best option:("}]
    assert drop["contents"][0]["parts"] == [{"text": _request().prompt}]
    assert dropped.extra["prefill_dropped"] is True


def test_video_true_sends_the_file_inline(tmp_path: Path) -> None:
    from tests.synth import make_synthetic_video

    clip = make_synthetic_video(tmp_path / "clip.mp4", 10, 25, (64, 48))
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(b"\xff\xd8\xff\xe0photo\xff\xd9")
    with FakeOpenAIServer() as server:
        model = _model(server, video="true", video_fps="4")
        assert isinstance(model, GeminiVideoModel) and model.media_input == "path"
        video, image = model.generate([_request(video=clip), _request(image=photo)])
        first, second = (r.body["contents"][0]["parts"] for r in server.chat_requests)
        assert server.wire_problems == []
    assert (video.status, image.status) == (Status.OK, Status.OK)
    assert first[0]["inline_data"]["mime_type"] == "video/mp4"
    assert base64.b64decode(first[0]["inline_data"]["data"]) == clip.read_bytes()
    assert first[0]["video_metadata"] == {"fps": 4.0} and first[1] == {"text": _request().prompt}
    assert second[0] == {
        "inline_data": {"mime_type": "image/jpeg", "data": base64.b64encode(photo.read_bytes())
                        .decode()}
    }  # fmt: skip
    assert model.fingerprint()["video_fps"] == 4.0


def test_thought_parts_are_the_reasoning_and_thinking_counts_as_output() -> None:
    body = _candidate(
        [
            {"text": "Option A looks wrong.", "thought": True},
            {"text": "The answer"},
            {"text": " is B."},
        ]
    )
    body["usageMetadata"] = {
        "promptTokenCount": 10,
        "candidatesTokenCount": 4,
        "thoughtsTokenCount": 30,
    }
    with FakeOpenAIServer([Reply(body=body)]) as server:
        model = _model(server, include_thoughts="true", thinking_budget="512")
        [resp] = model.generate([_request()])
        config = server.chat_requests[0].body["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingBudget": 512, "includeThoughts": True}
    assert config["maxOutputTokens"] == 4096  # thinking counts against the cap
    assert (resp.status, resp.text, resp.reasoning) == (
        Status.OK,
        "The answer is B.",
        "Option A looks wrong.",
    )
    assert (resp.prompt_tokens, resp.completion_tokens) == (10, 34)


@pytest.mark.parametrize("finish", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "SPII"])
def test_a_withheld_answer_is_rejected_and_not_asked_again(finish: str) -> None:
    body = _candidate([{"text": "partial"}], finish)
    with FakeOpenAIServer(responder=lambda _r: Reply(body=body)) as server:
        [resp] = _model(server, max_retries="3").generate([_request()])
        assert len(server.chat_requests) == 1
    assert (resp.status, resp.text) == (Status.REJECTED, "")
    assert resp.error == f"answer withheld by the API (finishReason={finish}) (attempts: 1)"
    assert resp.extra["finish_reason"] == finish


def test_blocked_prompt_empty_candidate_and_missing_candidates() -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {}}
    cut = _candidate(None, "MAX_TOKENS")  # cut before any text (a thinking model's cap)
    with FakeOpenAIServer() as server:
        server.push(Reply(body=blocked), Reply(body=cut), Reply(body={"usageMetadata": {}}))
        server.push(Reply.ok("A"))
        model = _model(server, max_retries="1")
        rejected, empty, retried = model.generate([_request() for _ in range(3)])
        assert len(server.chat_requests) == 4
    assert (rejected.status, rejected.extra["block_reason"]) == (Status.REJECTED, "SAFETY")
    assert rejected.error == "prompt blocked by the API (promptFeedback.blockReason=SAFETY) " + (
        "(attempts: 1)"
    )
    assert (empty.status, empty.error) == (
        Status.EMPTY_REPLY,
        "empty content (finish_reason=MAX_TOKENS) (attempts: 1)",
    )
    assert (retried.status, retried.text, retried.extra["history"]) == (
        Status.OK,
        "A",
        ["api_error", "ok"],
    )


def test_error_envelope_retry_delay_and_an_invalid_key() -> None:
    busy = error_body(429, "Quota exceeded")
    busy["error"]["details"] = [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}
    ]
    bad_key = error_body(400, "API key not valid.", reason="API_KEY_INVALID")
    with FakeOpenAIServer() as server:
        server.push(Reply(429, busy), Reply.ok("A"))
        server.push(Reply.error(400, message="Request contains an invalid argument."))
        server.push(Reply(400, bad_key))
        model = _model(server, max_retries="2")
        waits: list[float] = []
        model._sleep = waits.append
        ok, invalid, key = model.generate([_request() for _ in range(3)])
        assert len(server.chat_requests) == 4  # the 400s are not retried
    assert (ok.status, ok.extra["history"], waits) == (Status.OK, ["rate_limited", "ok"], [7.0])
    assert invalid.status is Status.REJECTED
    assert invalid.error == (
        "HTTP 400: INVALID_ARGUMENT: Request contains an invalid argument. (attempts: 1)"
    )
    assert key.status is Status.API_ERROR  # a bad key: counts toward stopping the run
    assert key.error == "HTTP 400: INVALID_ARGUMENT: API key not valid. (attempts: 1)"


def test_a_too_long_input_is_a_context_limit() -> None:
    message = (
        "The input token count (2000000) exceeds the maximum number of tokens allowed (1048576)."
    )
    with FakeOpenAIServer([Reply.error(400, message=message)]) as server:
        [resp] = _model(server).generate([_request()])
    assert resp.status is Status.REJECTED
    assert resp.extra["server_limit"]["kind"] == "context"


def test_a_wrong_or_missing_key_at_the_fake_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMROBUST_GEMINI_KEY", "wrong-key")
    with FakeOpenAIServer(expected_key=KEY) as server:
        [wrong] = _model(server, api_key_env="MMROBUST_GEMINI_KEY").generate([_request()])
        [missing] = _model(server).generate([_request()])
    assert (wrong.status, missing.status) == (Status.API_ERROR, Status.API_ERROR)
    assert "API key not valid" in (wrong.error or "") and "wrong-key" not in (wrong.error or "")
    assert (missing.error or "").startswith("HTTP 403: PERMISSION_DENIED")


def test_key_variables_in_the_order_googles_libraries_read_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for env in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(env, raising=False)
    with pytest.raises(ValueError, match=r"GEMINI_API_KEY.*not set.*GOOGLE_API_KEY"):
        make("gemini-test", {})
    with FakeOpenAIServer() as server:
        sent = []
        for env in (("GEMINI_API_KEY",), ("GEMINI_API_KEY", "GOOGLE_API_KEY")):
            for name in env:
                monkeypatch.setenv(name, f"key-of-{name}")
            model = make("gemini-test", {"base_url": _v1beta(server)})
            model.generate([_request()])
            sent.append(server.chat_requests[-1].headers["x-goog-api-key"])
            model.close()
    assert sent == ["key-of-GEMINI_API_KEY", "key-of-GOOGLE_API_KEY"]
    monkeypatch.setenv("MMROBUST_UNSET_KEY", "")
    with pytest.raises(ValueError, match="MMROBUST_UNSET_KEY"):
        make("gemini-test", {"api_key_env": "MMROBUST_UNSET_KEY"})


def test_model_names_defaults_options_and_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    caps = {
        (name, budget): _cap(name, budget)
        for name, budget in [
            ("gemini-2.0-flash", None),
            ("gemini-2.5-flash", None),
            ("gemini-2.5-flash", "0"),
            ("gemini-2.0-flash", "8000"),
            ("gemini-3-pro-preview", None),
        ]
    }
    assert list(caps.values()) == [256, 4096, 256, 9024, 4096]
    for bad in ("", "a/b", "m?key=x", "x y"):
        with pytest.raises(ValueError, match="gemini"):
            make(bad, {"api_key_env": ""})
    with pytest.raises(ValueError, match="did you mean 'max_tokens'"):
        make("gemini-test", {"api_key_env": "", "max_token": "5"})
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    model = load_model("gemini:models/gemini-2.0-flash", {"temperature": "0.5", "seed": "3"})
    fp = model.fingerprint()
    assert model.name == "gemini:gemini-2.0-flash" and model.placement == "api"
    assert (fp["backend"], fp["model"], fp["temperature"], fp["seed"]) == (
        "gemini",
        "gemini-2.0-flash",
        0.5,
        3,
    )
    assert KEY not in repr(fp) and "base_url" not in fp and fp["thinking"] is None
    model.close()
    assert placement_of("gemini") == "api"
    assert frame_encoding_of("gemini:m", {"jpeg_quality": "70"}).quality == 70


def _cap(name: str, budget: str | None) -> int:
    args = {"api_key_env": ""} | ({"thinking_budget": budget} if budget else {})
    model = make(name, args)
    assert isinstance(model, GeminiModel)
    model.close()
    return model.options.max_tokens


def test_extra_body_merges_generation_config_and_top_level_fields() -> None:
    extra = {
        "generationConfig": {"topK": 1, "mediaResolution": "MEDIA_RESOLUTION_LOW"},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
    }
    with FakeOpenAIServer() as server:
        _model(server, top_p="0.5", extra_body=json.dumps(extra)).generate([_request()])
        body = server.chat_requests[0].body
        assert server.wire_problems == []
    assert body["generationConfig"] == {
        "temperature": 0.0,
        "maxOutputTokens": 256,
        "topP": 0.5,
        "topK": 1,
        "mediaResolution": "MEDIA_RESOLUTION_LOW",
    }
    assert body["safetySettings"] == extra["safetySettings"]


def test_the_fake_refuses_what_the_api_refuses() -> None:
    """The wire check can fail: each body the reference forbids is named and answered 400."""
    jpeg = base64.b64encode(b"\xff\xd8\xff\xe0x").decode()
    good = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    assert request_problems(good) == []
    bad = [
        {"contents": []},
        {"contents": [{"role": "assistant", "parts": [{"text": "hi"}]}]},
        {"contents": [{"parts": [{"text": "hi", "inline_data": {}}]}]},
        {"contents": [{"parts": [{"inline_data": {"mime_type": "image/jpeg", "data": "!!"}}]}]},
        {"contents": [{"parts": [{"inline_data": {"mime_type": "image/tiff", "data": jpeg}}]}]},
        {"contents": [{"parts": [{"inline_data": {"mime_type": "video/mp4", "data": jpeg}}]}]},
        {**good, "generationConfig": {"max_tokens": 5}},
        {**good, "generationConfig": {"maxOutputTokens": "5"}},
        {**good, "generationConfig": {"thinkingConfig": {"budget": 5}}},
        {**good, "model": "gemini-test"},
    ]
    assert all(request_problems(b) for b in bad)
    with FakeOpenAIServer() as server:
        url = f"{_v1beta(server)}/models/m:generateContent"
        reply = httpx.post(url, json=bad[3])
        assert len(server.wire_problems) == 1
    assert reply.status_code == 400 and reply.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_list_models_shows_gemini_with_its_options() -> None:
    res = CliRunner().invoke(app, ["list", "models"])
    assert res.exit_code == 0, res.output
    block = res.output.split("gemini:ARG", 1)[1].split("\n  hf", 1)[0]
    for option in ("api_key_env", "thinking_budget", "video=<bool>", "include_thoughts"):
        assert option in block


def test_a_refused_key_stops_the_run_after_8_in_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mmrobust eval`` with a key the API calls invalid (400 ``API_KEY_INVALID``): not a
    per-sample refusal but a run that cannot work; stopped like a 401, the key nowhere."""
    from tests.runs import stored_rows

    monkeypatch.setenv("MMROBUST_GEMINI_KEY", "AIzaSy-wrong-key-0123456789")
    data = tmp_path / "d.jsonl"
    rows = [{"id": f"s{i}", "question": "Red?", "options": ["Yes", "No"], "answer": "No"}
            for i in range(20)]  # fmt: skip
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    with FakeOpenAIServer(expected_key=KEY) as server:
        cli = ["eval", "--data", str(data), "--model", "gemini:gemini-test", "--out", str(out)]
        cli += ["--model-arg", f"base_url={_v1beta(server)}", "--model-arg", "concurrency=1"]
        cli += ["--model-arg", "api_key_env=MMROBUST_GEMINI_KEY", "--bootstrap", "0", "-q"]
        res = CliRunner().invoke(app, cli)
        assert len(server.chat_requests) == 8  # not retried; 8 in a row stop the run
    assert res.exit_code == 3, res.output
    stored = stored_rows(out)
    assert {r["status"] for r in stored.values()} == {"api_error"} and len(stored) == 8
    assert "wrong-key" not in res.output + json.dumps(stored)
