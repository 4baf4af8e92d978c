"""Reasoning-model knobs on the API backends (issue 28): the server's separate reasoning
field in ``Response.reasoning``, ``chat_template_kwargs``, the larger default budget for
thinking models, and ``reasoning=keep|drop``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.models import Request, load_model
from mmrobust.models._http import HttpModel
from mmrobust.models._reasoning import drop_inline, is_reasoning_template, thinking_requested
from mmrobust.status import Status
from tests.fake_openai_server import FakeOpenAIServer, Reply
from tests.runs import stored_rows


def _request() -> Request:
    return Request(sample_id="s", prompt="Q?\nA. Yes\nB. No", question="Q?", options={"A": "Yes"})


def _completion(message: dict[str, Any], finish: str = "stop") -> Reply:
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
    return Reply(body={"choices": [choice], "usage": {"prompt_tokens": 9, "completion_tokens": 40}})


def _openai(server: FakeOpenAIServer, name: str = "test", **args: str) -> HttpModel:
    model = load_model(f"openai:{name}", {"base_url": server.base_url, **args})
    assert isinstance(model, HttpModel)
    return model


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_the_servers_reasoning_field_is_kept_apart_from_the_answer(field: str) -> None:
    with FakeOpenAIServer(
        [_completion({"content": "B", field: "Option A is wrong. So B."})]
    ) as srv:
        [resp] = _openai(srv).generate([_request()])
    assert (resp.status, resp.text, resp.reasoning) == (Status.OK, "B", "Option A is wrong. So B.")


def test_a_reply_cut_inside_its_reasoning_is_an_answerless_ok_not_an_empty_reply() -> None:
    # vLLM's reasoning parser with a too-small max_tokens: content null, the thought cut off
    cut = _completion({"content": None, "reasoning_content": "Let me look at frame 3"}, "length")
    with FakeOpenAIServer([cut]) as srv:
        [resp] = _openai(srv).generate([_request()])
        assert len(srv.chat_requests) == 1
    assert (resp.status, resp.text) == (Status.OK, "")  # before: a final empty_reply
    assert resp.reasoning == "Let me look at frame 3"
    assert resp.extra["finish_reason"] == "length"


def test_reasoning_drop_stores_neither_the_field_nor_a_leading_think_block() -> None:
    replies = [
        _completion({"content": "B", "reasoning_content": "twelve chars"}),
        Reply.ok("<think>A is wrong.</think>\n\nB"),
        Reply.ok("<think>cut in the midd"),
        _completion({"content": None, "reasoning_content": "cut in the midd"}, "length"),
    ]
    with FakeOpenAIServer(replies) as srv:
        model = _openai(srv, reasoning="drop")
        field, inline, unclosed, cut = model.generate([_request()] * 4)
    assert (field.text, field.reasoning, field.extra["reasoning_dropped_chars"]) == ("B", None, 12)
    assert (inline.text, inline.extra["reasoning_dropped_chars"]) == ("B", 28)
    assert unclosed.text == "<think>cut in the midd"  # kept: extraction sees it was cut
    assert (cut.text, cut.reasoning) == ("", "cut in the midd")  # no answer: kept too
    assert model.fingerprint()["reasoning"] == "drop"


def test_chat_template_kwargs_go_in_the_body_and_the_fingerprint() -> None:
    with FakeOpenAIServer() as srv:
        model = _openai(srv, chat_template_kwargs='{"enable_thinking": false}')
        model.generate([_request()])
        body = srv.chat_requests[0].body
        plain = _openai(srv)
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert model.fingerprint()["chat_template_kwargs"] == {"enable_thinking": False}
    assert (
        "chat_template_kwargs" not in plain.fingerprint() and "reasoning" not in plain.fingerprint()
    )


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("test", {}, 256),
        ("Qwen/Qwen2.5-VL-7B-Instruct", {}, 256),
        ("gpt-4o", {}, 256),
        ("Qwen/Qwen3-VL-8B-Thinking", {}, 4096),
        ("THUDM/GLM-4.1V-9B-Thinking", {}, 4096),
        ("deepseek-r1", {}, 4096),
        ("o4-mini", {}, 4096),
        ("microsoft/Phi-4-reasoning", {}, 4096),
        ("Qwen/Qwen3-VL-8B-Thinking", {"chat_template_kwargs": '{"enable_thinking": false}'}, 256),
        ("qwen3-vl", {"chat_template_kwargs": '{"enable_thinking": true}'}, 4096),
        ("Qwen/Qwen3-VL-8B-Thinking", {"max_tokens": "300"}, 300),
    ],
)
def test_default_max_tokens_rule(name: str, args: dict[str, str], expected: int) -> None:
    with FakeOpenAIServer() as srv:
        model = _openai(srv, name, **args)
        model.generate([_request()])
        sent = srv.chat_requests[0].body["max_tokens"]
    assert (model.fingerprint()["max_tokens"], sent) == (expected, expected)


def test_anthropic_thinking_budget_sets_max_tokens_and_omits_temperature() -> None:
    body = {
        "type": "message",
        "content": [{"type": "thinking", "thinking": "Frame 4 is rotated.", "signature": "s"}],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 5, "output_tokens": 9000},
    }
    with FakeOpenAIServer([Reply(body=body)]) as srv:
        args = {"base_url": srv.base_url, "api_key_env": ""}
        think = '{"thinking": {"type": "enabled", "budget_tokens": 8000}}'
        model = load_model("anthropic:claude-test", {**args, "extra_body": think})
        small = load_model(
            "anthropic:claude-test", {**args, "extra_body": think.replace("8000", "1024")}
        )
        [resp] = model.generate([_request()])
        sent = srv.chat_requests[0].body
    assert (model.fingerprint()["max_tokens"], small.fingerprint()["max_tokens"]) == (9024, 4096)
    assert sent["max_tokens"] == 9024 and "temperature" not in sent
    assert (resp.status, resp.text, resp.reasoning) == (Status.OK, "", "Frame 4 is rotated.")


def test_helpers() -> None:
    assert drop_inline("  <thinking>x</thinking><think>y</think> A") == ("A", 41)
    assert drop_inline("B <think>late</think>") == ("B <think>late</think>", 0)
    assert is_reasoning_template("{% if enable_thinking %}") and not is_reasoning_template(None)
    assert [thinking_requested(k) for k in ({}, {"enable_thinking": "false"}, {"thinking": 1})] == [
        None,
        False,
        True,
    ]


# -- end to end: what the backend returns is what the stored row keeps --------------------


def _eval(server: FakeOpenAIServer, tmp_path: Path, *args: str) -> Any:
    data = tmp_path / "d.jsonl"
    records = [
        {"id": sid, "question": "Is it tampered?", "options": ["Yes", "No"], "answer": "No"}
        for sid in ("field", "cut")
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    cli = ["eval", "--data", str(data), "--model", "openai:test", "--out", str(tmp_path / "run")]
    cli += ["--model-arg", f"base_url={server.base_url}", "--model-arg", "concurrency=1"]
    cli += ["--bootstrap", "0", "-q", *args]
    return CliRunner().invoke(app, cli)


@pytest.mark.parametrize("mode", ["keep", "drop"])
def test_the_reasoning_field_reaches_the_stored_row(tmp_path: Path, mode: str) -> None:
    thought = "Frame 3 and 4 look the same, but motion is smooth. So B."
    replies = [
        _completion({"content": "B", "reasoning_content": thought}),
        _completion({"content": None, "reasoning_content": "Let me look at fra"}, "length"),
    ]
    with FakeOpenAIServer(replies) as srv:
        res = _eval(srv, tmp_path, "--model-arg", f"reasoning={mode}")
        assert res.exit_code in (0, 1), res.output
    rows = stored_rows(tmp_path / "run")
    assert (rows["field"]["status"], rows["field"]["raw_text"]) == ("ok", "B")
    assert rows["field"]["reasoning"] == (thought if mode == "keep" else None)
    # a reply cut inside its reasoning has no answer; drop keeps that reasoning, so it
    # is counted as cut, not as an empty reply
    assert (rows["cut"]["status"], rows["cut"]["rule"]) == ("parse_fail", "reasoning:cut")
