"""Server faults that used to block, hang or leak a run (issue 17 items 1, 2, 13, 14, the
judge; issue 18's empty replies and server limits), against loopback servers started and
stopped inside each test. The model-level faults run against every API backend
(``openai``, ``anthropic`` and ``gemini``: the same scripted faults in each wire format)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import VideoWriter, read_frames, sample_clips
from mmrobust.models._http import HttpModel
from mmrobust.models.base import Request
from mmrobust.models.openai_compat import OpenAICompatModel, make
from mmrobust.status import Status
from tests.fake_openai_server import (
    BACKENDS,
    FakeOpenAIServer,
    RecordedRequest,
    Reply,
    auth_header,
    make_client,
)
from tests.fake_openai_server import keyless as no_key
from tests.runs import stored_rows

YN = ["Yes", "No"]


def _jsonl(path: Path, ids: list[str], *, video: str | None = None) -> Path:
    records = []
    for sid in ids:
        rec: dict[str, Any] = {"id": sid, "question": f"Is {sid} tampered?", "options": YN}
        rec["answer"] = "No"
        if video:
            rec["video"] = video
        records.append(rec)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _eval(
    server: FakeOpenAIServer, data: Path, out: Path, *args: str, backend: str = "openai"
) -> Any:
    keyless = no_key(backend)
    cli = [
        "eval", "--data", str(data), "--model", f"{backend}:test", *keyless,
        "--model-arg", f"base_url={server.base_url}",
        "--model-arg", "backoff_initial=0.01", "--model-arg", "backoff_max=0.02",
        "--out", str(out), "--bootstrap", "0", "-q",
        "--cache-dir", str(out.parent / "frame-cache"), *args,
    ]  # fmt: skip
    return CliRunner().invoke(app, cli)


def _request(prompt: str = "Is it tampered?\nA. Yes\nB. No") -> Request:
    return Request(sample_id="s", prompt=prompt, question="q", options={"A": "Yes", "B": "No"})


# -- item 1: permanent rejections are final, never block the run ----------------------------


def test_samples_the_server_always_rejects_do_not_block_the_run(tmp_path: Path) -> None:
    # 12 of 42 samples always refused (listed first, so 8 in a row), 30 good ones behind them.
    bad = [f"bad{i:02d}" for i in range(12)]
    good = [f"good{i:02d}" for i in range(30)]
    data = _jsonl(tmp_path / "d.jsonl", bad + good)

    def respond(request: RecordedRequest) -> Reply:
        if "bad" in request.text:
            return Reply.error(400, message="Invalid image: cannot identify image file")
        return Reply.ok("B")

    out = tmp_path / "run"
    with FakeOpenAIServer(responder=respond) as server:
        first = _eval(server, data, out, "--model-arg", "concurrency=1")
        assert first.exit_code == 0, first.output
        assert len(server.chat_requests) == 42  # refusals are not retried
        rows = stored_rows(out)
        assert sorted(r["status"] for r in rows.values()) == ["ok"] * 30 + ["rejected"] * 12
        assert (
            "HTTP 400: " in rows["bad00"]["error"] and "cannot identify" in rows["bad00"]["error"]
        )
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["status_counts"] == {"ok": 30, "rejected": 12}
        assert metrics["error_rate"] == pytest.approx(12 / 42)

        again = _eval(server, data, out, "--model-arg", "concurrency=1")  # final: not asked
        assert again.exit_code == 0 and len(server.chat_requests) == 42
        retried = _eval(server, data, out, "--model-arg", "concurrency=1", "--retry-failed")
        assert retried.exit_code == 0 and len(server.chat_requests) == 42 + 12
        assert "0 new rows" not in retried.output and "12 new rows, 30 resumed" in retried.output


@pytest.mark.parametrize("code", [401, 403, 404])
def test_auth_and_not_found_stay_transient_and_stop_the_run(tmp_path: Path, code: int) -> None:
    data = _jsonl(tmp_path / "d.jsonl", [f"s{i}" for i in range(20)])
    with FakeOpenAIServer(responder=lambda _r: Reply.error(code)) as server:
        res = _eval(server, data, tmp_path / "run", "--model-arg", "concurrency=1")
        assert res.exit_code == 3, res.output
        assert len(server.chat_requests) == 8  # not retried per sample; 8 in a row stop the run
    assert {r["status"] for r in stored_rows(tmp_path / "run").values()} == {"api_error"}


# -- issue 18: a server limit stops the run at the first occurrence, with the fix ------------


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import cv2

    root = tmp_path_factory.mktemp("clip")
    frames = read_frames(sample_clips()["bikes"], list(range(0, 120, 10)))
    with VideoWriter(root / "clip.mp4", 25, 64, 48) as writer:
        for frame in frames:
            writer.write(cv2.resize(frame, (64, 48), interpolation=cv2.INTER_AREA))
    return root / "clip.mp4"


def test_server_image_limit_stops_at_once_with_the_fix(tmp_path: Path, tiny_clip: Path) -> None:
    data = _jsonl(tmp_path / "d.jsonl", [f"s{i}" for i in range(20)], video=str(tiny_clip))

    def respond(request: RecordedRequest) -> Reply:  # vLLM's wording (vllm/multimodal/parse.py)
        if len(request.image_urls) > 4:
            message = "At most 4 image(s) may be provided in one prompt."
            return Reply.error(400, message=message)
        return Reply.ok("B")

    out = tmp_path / "run"
    with FakeOpenAIServer(responder=respond) as server:
        res = _eval(server, data, out, "--model-arg", "concurrency=1")
        assert res.exit_code == 3, res.output
        assert len(server.chat_requests) == 1  # stopped at the first refusal, not after 8
        assert "At most 4 image(s) may be provided in one prompt." in res.output
        assert "--frames 4" in res.output and "--limit-mm-per-prompt" in res.output
        assert "Traceback" not in res.output
        assert stored_rows(out) == {}  # the refusal is no answer: after the fix it is asked
        fixed = _eval(server, data, tmp_path / "run4", "--frames", "4")
        assert fixed.exit_code == 0, fixed.output
    assert {r["status"] for r in stored_rows(tmp_path / "run4").values()} == {"ok"}


def test_no_video_support_and_context_length_are_server_limits(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        model = make("test", {"base_url": server.base_url})
        assert isinstance(model, OpenAICompatModel)
        server.push(Reply.error(400, message="At most 0 video(s) may be provided in one prompt."))
        server.push(
            Reply.error(
                400,
                message="This model's maximum context length is 4096 tokens. However, you "
                "requested 5000 tokens (4744 in the messages, 256 in the completion).",
            )
        )
        server.push(Reply.error(422, message="image 3 is not a valid JPEG"))
        # vLLM serves LLaVA-NeXT-Video video-only: frames as images are refused
        server.push(Reply.error(400, message="At most 0 image(s) may be provided in one prompt."))
        video, context, other, no_images = model.generate([_request() for _ in range(4)])
    assert (video.status, video.extra["server_limit"]["kind"]) == (Status.REJECTED, "videos")
    assert "video=true" in video.extra["server_limit"]["fix"]
    assert (context.status, context.extra["server_limit"]["kind"]) == (Status.REJECTED, "context")
    assert "--max-model-len" in context.extra["server_limit"]["fix"]
    assert other.status is Status.REJECTED and "server_limit" not in other.extra
    assert no_images.extra["server_limit"]["kind"] == "images"
    assert "--model-arg video=true" in no_images.extra["server_limit"]["fix"]


# -- issue 18: an empty reply at temperature 0 is final -------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_reply_at_temperature_zero_is_final_and_not_asked_again(
    tmp_path: Path, backend: str
) -> None:
    data = _jsonl(tmp_path / "d.jsonl", ["empty", "fine"])

    def respond(request: RecordedRequest) -> Reply:
        return Reply.empty() if "empty" in request.text else Reply.ok("B")

    out = tmp_path / "run"
    with FakeOpenAIServer(responder=respond) as server:
        res = _eval(server, data, out, "--model-arg", "max_retries=5", backend=backend)
        assert res.exit_code == 0, res.output
        assert len(server.chat_requests) == 2  # no retry at greedy decoding
        _eval(server, data, out, "--model-arg", "max_retries=5", backend=backend)
        assert len(server.chat_requests) == 2  # final on resume too
    rows = stored_rows(out)
    finish = {"anthropic": "end_turn", "gemini": "STOP"}.get(backend, "stop")  # each API's own
    assert (rows["empty"]["status"], rows["empty"]["error"]) == (
        "empty_reply",
        f"empty content (finish_reason={finish}) (attempts: 1)",
    )


# -- item 2: an overall deadline per request ------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("headers", [False, True], ids=["body", "headers"])
def test_a_trickling_server_times_out_at_the_deadline(headers: bool, backend: str) -> None:
    with FakeOpenAIServer(responder=lambda _r: Reply.trickle(every_s=0.05, headers=headers)) as srv:
        model = make_client(backend, srv, timeout="0.5", max_retries="0")
        t0 = time.monotonic()
        [resp] = model.generate([_request()])
        took = time.monotonic() - t0
        model.close()
        body = len(json.dumps(Reply.ok("A").body))  # bytes of the reply, one every 0.05 s
    # each byte comes within the 0.5 s read timeout; the 1.5 s deadline (3 x timeout) ends it,
    # long before the last byte would come (no upper bound on wall time: a busy machine is slow)
    assert resp.status is Status.TIMEOUT, resp
    assert "reply not complete within the 1.5s deadline" in (resp.error or ""), resp.error
    assert took >= 1.5  # the deadline never fires early
    assert body * 0.05 > 3 * 1.5  # a reply that could finish in time would prove nothing


@pytest.mark.parametrize("backend", BACKENDS)
def test_deadline_option_and_a_fast_reply_within_it(backend: str) -> None:
    with FakeOpenAIServer(responder=lambda _r: Reply.trickle("B", every_s=0.002)) as srv:
        model = make_client(backend, srv, timeout="5", deadline="20")  # roomy on a busy machine
        assert isinstance(model, HttpModel) and model.deadline_s == 20
        [resp] = model.generate([_request()])
        model.close()
    assert (resp.status, resp.text) == (Status.OK, "B")


# -- items 13, 14: secrets ------------------------------------------------------------------

KEY = "sk-proj-abcdefghijklmnopqrstuvw"  # 29 characters, like the key


def test_redact_before_truncating_and_scrub_urls() -> None:
    from mmrobust.redact import redact, scrub_url, server_text

    body = "x" * 180 + f" header was Authorization: Bearer {KEY} and more"
    cut = server_text(body, [KEY], 200)
    assert len(cut) <= 200 and KEY[:6] not in cut and "abcdefghij" not in cut
    assert redact(f"echo {KEY}", [KEY]) == "echo ***"
    assert scrub_url("http://user:PASS@host:8000/v1") == "http://***@host:8000/v1"
    assert scrub_url("https://h/v1?api_key=zzz&x=1") == "https://h/v1?api_key=***&x=1"
    assert "PASS" not in redact("connect to http://user:PASS@host failed")


def _leaks(folders: list[Path], secrets: tuple[str, ...]) -> list[tuple[str, str]]:
    found = []
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                found += [(path.name, s) for s in secrets if s.encode() in data]
    return found


_KEY_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")


def _echo_auth(request: RecordedRequest) -> Reply:
    auth = next((request.headers[h] for h in _KEY_HEADERS if h in request.headers), "")
    if "echo401" in request.text:  # the key sits across the old 200-character cut
        return Reply.error(401, message="x" * 143 + f" bad header {auth}")
    if "echo200" in request.text:  # a 200 answer that echoes the key
        return Reply.ok(f"B. (your header: {auth})")
    return Reply.ok("B")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("secret", ["api_key", "url_password"])
def test_keys_and_url_passwords_are_nowhere_in_the_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secret: str, backend: str
) -> None:
    monkeypatch.setenv("MMROBUST_FAULT_KEY", KEY)
    data = _jsonl(tmp_path / "d.jsonl", ["echo401", "echo200", "fine"])
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=_echo_auth) as server:
        if secret == "api_key":
            args = ["--model-arg", f"base_url={server.base_url}"]
            args += ["--model-arg", "api_key_env=MMROBUST_FAULT_KEY"]
            hidden: tuple[str, ...] = (KEY[:15], KEY[-12:])
        else:  # httpx sends user:pass as Basic auth; the server echoes that
            base = server.base_url.replace("http://", "http://mmuser:PASSWORD123@")
            args = ["--model-arg", f"base_url={base}"]
            args += no_key(backend)
            hidden = ("PASSWORD123", "bW11c2VyOlBBU1NXT1JE")  # and its base64 form
        cli = ["eval", "--data", str(data), "--model", f"{backend}:test", *args]
        cli += ["--model-arg", "max_retries=0", "--out", str(out), "--bootstrap", "0", "-q"]
        res = CliRunner().invoke(app, cli)
        assert res.exit_code == 0, res.output
        header = auth_header(backend) if secret == "api_key" else "authorization"
        assert server.chat_requests[0].headers[header] != ""
    site = CliRunner().invoke(app, ["report", str(out), "--out", str(tmp_path / "rep")])
    assert site.exit_code == 0, site.output
    rows = stored_rows(out)
    assert rows["echo401"]["status"] == "api_error" and "***" in rows["echo401"]["error"]
    assert rows["echo200"]["status"] == "ok" and "***" in rows["echo200"]["raw_text"]
    for text in (res.output, site.output):
        assert not [s for s in hidden if s in text], text
    assert _leaks([out, tmp_path / "rep"], hidden) == []
    if secret == "url_password":
        info = json.loads((out / "run.json").read_text())
        assert info["config"]["model_args"]["base_url"].startswith("http://***@127.0.0.1:")


# -- the judge: its failure reason is stored and a dead judge stops the run -----------------


def test_a_dead_judge_stores_its_reason_and_stops_the_run(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = _jsonl(tmp_path / "d.jsonl", [f"s{i}" for i in range(20)])
    out = tmp_path / "run"
    cli = ["eval", "--data", str(data), "--model", "constant:perhaps", "--out", str(out)]
    cli += ["--bootstrap", "0", "-q", "--judge", "openai:judge"]
    cli += ["--judge-arg", f"base_url=http://127.0.0.1:{port}/v1", "--judge-arg", "max_retries=0"]
    res = CliRunner().invoke(app, cli)
    assert res.exit_code == 3, res.output  # like a dead model: 8 in a row stop the run
    assert "the judge failed on 8 consecutive replies" in res.output
    assert "connection error" in res.output and "rescore" in res.output
    rows = stored_rows(out)
    assert len(rows) == 8 and {r["status"] for r in rows.values()} == {"judge_error"}
    assert all(r["error"].startswith("judge api_error: connection error") for r in rows.values())

    with FakeOpenAIServer(responder=lambda _r: Reply.ok("B")) as judge:  # the judge is back
        fixed = CliRunner().invoke(
            app,
            [
                "rescore",
                str(out),
                "--judge",
                "openai:judge",
                "--judge-arg",
                f"base_url={judge.base_url}",
            ],
        )
        assert fixed.exit_code == 0, fixed.output
    assert {r["status"] for r in stored_rows(out).values()} == {"ok"}
    assert {r["error"] for r in stored_rows(out).values()} == {None}


# -- issue 30: a dead server or a base_url without http:// gives up at once ------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_eval_against_a_dead_server_stops_after_one_attempt_per_sample(
    tmp_path: Path, backend: str
) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = _jsonl(tmp_path / "d.jsonl", [f"s{i}" for i in range(20)])
    keyless = no_key(backend)
    cli = ["eval", "--data", str(data), "--model", f"{backend}:test", *keyless]
    cli += ["--model-arg", f"base_url=http://127.0.0.1:{port}/v1", "--model-arg", "concurrency=1"]
    cli += ["--out", str(tmp_path / "run"), "--bootstrap", "0", "-q"]
    res = CliRunner().invoke(app, cli)
    assert res.exit_code == 3, res.output  # 8 in a row stop the run, as before
    assert "is it running, and is base_url right?" in res.output
    rows = stored_rows(tmp_path / "run")
    assert len(rows) == 8 and {r["status"] for r in rows.values()} == {"api_error"}
    assert all(r["error"].endswith("(attempts: 1)") for r in rows.values())  # was 6 each


@pytest.mark.parametrize("backend", BACKENDS)
def test_eval_with_a_base_url_without_http_exits_2_before_any_request(
    tmp_path: Path, backend: str
) -> None:
    data = _jsonl(tmp_path / "d.jsonl", ["s0"])
    keyless = no_key(backend)
    cli = ["eval", "--data", str(data), "--model", f"{backend}:test", *keyless]
    cli += ["--model-arg", "base_url=localhost:8000/v1", "--out", str(tmp_path / "run"), "-q"]
    res = CliRunner().invoke(app, cli)
    assert res.exit_code == 2, res.output
    assert "did you mean 'http://localhost:8000/v1'?" in res.output
    assert "Traceback" not in res.output
