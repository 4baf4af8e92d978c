"""A reply's size is capped while it is read (``max_reply_bytes``, default 1 MiB), on every
HTTP backend: a body of the cap less 1,000 bytes and one of exactly the cap are answers; one
byte more is ``rejected`` at once (not retried, nothing of it stored); an error body over the
cap is still a typed error (its start is quoted). The loopback fake server sends each body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.models._http import MAX_REPLY_BYTES
from mmrobust.models.base import Request
from mmrobust.status import Status
from tests.fake_gemini import reply_body
from tests.fake_openai_server import BACKENDS, FakeOpenAIServer, Reply, make_client


def _body(backend: str, size: int) -> bytes:
    """A JSON completion of exactly ``size`` bytes whose text is ``A`` then spaces."""

    def encode(text: str) -> bytes:
        if backend == "gemini":
            body = reply_body(text, 3, 1, "stop")
        elif backend == "anthropic":
            body = {"type": "message", "role": "assistant", "stop_reason": "end_turn",
                    "content": [{"type": "text", "text": text}],
                    "usage": {"input_tokens": 3, "output_tokens": 1}}  # fmt: skip
        else:
            body = {"choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 1}}  # fmt: skip
        return json.dumps(body).encode()

    pad = size - len(encode("A"))
    raw = encode("A" + " " * pad)
    assert len(raw) == size
    return raw


def _request() -> Request:
    return Request(sample_id="s", prompt="Red?\nA. Yes\nB. No", question="Red?",
                   options={"A": "Yes", "B": "No"})  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_under_at_and_over_the_cap(backend: str) -> None:
    assert MAX_REPLY_BYTES == 1024 * 1024
    with FakeOpenAIServer() as server:
        model = make_client(backend, server, max_retries="2", backoff_initial="0")
        try:
            sizes = (MAX_REPLY_BYTES - 1000, MAX_REPLY_BYTES, MAX_REPLY_BYTES + 1)
            server.push(*(Reply(body=_body(backend, n)) for n in sizes))
            under, at, over = (model.generate([_request()])[0] for _ in sizes)
            assert len(server.chat_requests) == 3  # the oversized reply is not asked again
        finally:
            model.close()
    for ok in (under, at):
        assert ok.status is Status.OK and ok.text.startswith("A ")
    assert ok.text.rstrip() == "A" and len(at.text) == len(under.text) + 1000
    assert over.status is Status.REJECTED and over.text == ""
    assert over.error is not None and over.error.startswith(
        f"reply longer than max_reply_bytes={MAX_REPLY_BYTES} bytes (Content-Length "
        f"{MAX_REPLY_BYTES + 1}): not read on, not stored; raise --model-arg max_reply_bytes=N"
    )
    assert over.extra["attempts"] == 1


def test_a_lower_cap_through_eval_and_an_oversized_error_body(tmp_path: Path) -> None:
    """Through ``eval``: ``max_reply_bytes=2000`` stores a 5,000-byte answer as ``rejected``
    (final: a re-run asks it nothing); a 500 with a 5,000-byte body stays ``api_error`` (asked
    again on a re-run), its message the body's start."""
    from mmrobust.export import sample_records

    data = tmp_path / "d.jsonl"
    data.write_text("".join(
        json.dumps({"id": i, "question": f"{i}?", "options": ["Yes", "No"], "answer": "Yes"})
        + "\n" for i in ("big", "err")
    ))  # fmt: skip
    big = Reply(body=_body("openai", 5000))
    err = Reply(status=500, body="E" * 5000)
    run = tmp_path / "run"
    with FakeOpenAIServer(responder=lambda r: big if "big?" in r.text else err) as server:
        args = ["eval", "--data", str(data), "--model", "openai:test", "--out", str(run),
                "--model-arg", f"base_url={server.base_url}", "--model-arg", "max_reply_bytes=2000",
                "--model-arg", "max_retries=0", "--bootstrap", "0", "-q", "--workers", "1"]  # fmt: skip
        first = CliRunner().invoke(app, args)
        asked = [r.text.split("?")[0] for r in server.chat_requests]
        CliRunner().invoke(app, args)
        again = [r.text.split("?")[0] for r in server.chat_requests][len(asked) :]
    assert first.exit_code == 1, first.output  # nothing scored
    assert sorted(asked) == ["big", "err"] and again == ["err"]
    rows = {r["id"]: r for r in sample_records(run)}
    assert rows["big"]["status"] == "rejected" and rows["big"]["raw_answer"] == ""
    assert str(rows["big"]["error"]).startswith("reply longer than max_reply_bytes=2000 bytes")
    assert rows["err"]["status"] == "api_error"
    assert str(rows["err"]["error"]).startswith("HTTP 500: EEEE")
