"""A new API backend in one file with no change under ``src/`` (issue 26): the ``echo``
backend of docs/extending.md, registered here, against a loopback server of its own made-up
wire format (``POST /v1/generate`` -> ``{"output": ..., "stop": ...}``), run end to end by
``mmrobust eval``. Retries, typed statuses and the run folder come from ``models/_http.py``."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.models._encode import data_url, frame_data_url, request_jpegs
from mmrobust.models._http import (
    AttemptError,
    Completion,
    HttpModel,
    HttpOptions,
    body_shape,
    check_base_url,
    empty_reply,
    options_encoding,
    read_api_key,
)
from mmrobust.models._options import parse_options
from mmrobust.models.base import Model, Request
from mmrobust.models.spec import MODELS, frame_encoding_of, placement_of, register_backend
from mmrobust.status import Status
from tests.runs import stored_rows
from tests.synth import make_synthetic_video

# -- the backend: what a user writes (docs/extending.md "An HTTP API (one file)") -----------


class EchoOptions(HttpOptions):
    """The shared options, plus the API's own.

    Attributes:
        style: how the made-up API should answer.
    """

    base_url: str = "https://api.example.com/v1"
    style: str = "plain"


class EchoModel(HttpModel):
    """Client of the made-up ``generate`` API."""

    backend: ClassVar[str] = "echo"
    endpoint: ClassVar[str] = "generate"
    options: EchoOptions

    def auth_headers(self) -> dict[str, str]:
        return {"X-Key": self._api_key} if self._api_key else {}

    def build_payload(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        o = self.options  # the shown frames (or image) as JPEG bytes, encoded as frame_encoding()
        jpegs = request_jpegs(request, max_side=o.image_max_side, quality=o.jpeg_quality)
        images = [data_url(j, "image/jpeg") for j in jpegs]
        body = {
            "model": self.model,
            "prompt": request.prompt,
            "images": images,
            "max_tokens": self.options.max_tokens,
            "style": self.options.style,
        }
        return body, {"n_media": len(images)}

    def parse_reply(self, body: Any) -> Completion:
        if not isinstance(body, dict) or "output" not in body:
            raise AttemptError(
                Status.API_ERROR, f"no output: {body_shape(body, self._clean)}", retryable=True
            )
        if not str(body["output"]).strip():
            raise empty_reply(body.get("stop"), greedy=self.greedy)
        usage = {"prompt_tokens": None, "completion_tokens": None}
        return Completion(str(body["output"]), usage, body.get("stop"))

    def fingerprint(self) -> dict[str, Any]:
        o = self.options
        return {"name": self.name, "backend": "echo", "model": self.model, "style": o.style}


class BlindEchoModel(EchoModel):
    """The mistake the check catches: reading ``Request.frames`` alone (empty for a video when
    the backend takes JPEGs), so a video sample would be answered without its frames."""

    def build_payload(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        images = [frame_data_url(f) for f in request.frames]
        return {"model": self.model, "prompt": request.prompt, "images": images}, {}


def make(arg: str | None, args: Mapping[str, str]) -> Model:
    if arg == "blind":
        return BlindEchoModel(arg, parse_options(EchoOptions, args, "echo"), api_key=None)
    if not arg:
        raise ValueError("echo needs the model name: --model echo:<model>")
    options = parse_options(EchoOptions, args, "echo")
    check_base_url(options.base_url, "echo")
    return EchoModel(arg, options, api_key=read_api_key(options.api_key_env))


def frame_encoding(arg: str | None, args: Mapping[str, str]) -> FrameEncoding:
    return options_encoding(parse_options(EchoOptions, args, "echo"))


if "echo" not in MODELS:  # the one registration
    register_backend(
        "echo",
        "tests.test_backend_seam:make",
        placement="api",
        frame_encoding="tests.test_backend_seam:frame_encoding",
    )


# -- a loopback server of its wire format -------------------------------------------------


class _Server:
    def __init__(self, replies: list[tuple[int, Any]]) -> None:
        self.replies = deque(replies)
        self.bodies: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.bodies.append({"path": self.path, **json.loads(raw)})
                code, body = owner.replies.popleft() if owner.replies else (200, {"output": "B"})
                payload = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(
        [
            (503, {"detail": "warming up"}),  # retried
            (200, {"output": "B", "stop": "done"}),
            (400, {"detail": "prompt rejected"}),  # final: rejected
            (200, {"output": ""}),  # empty at temperature 0: final empty_reply
        ]
    )
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def test_a_backend_written_outside_src_runs_end_to_end(server: _Server, tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    records = [
        {"id": f"s{i}", "question": "Is it tampered?", "options": ["Yes", "No"], "answer": "No"}
        for i in range(3)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "run"
    cli = ["eval", "--data", str(data), "--model", "echo:tiny", "--out", str(out)]
    cli += ["--model-args", f"base_url={server.base_url},style=terse,concurrency=1"]
    cli += ["--model-arg", "backoff_initial=0.01", "--bootstrap", "0", "-q"]
    res = CliRunner().invoke(app, cli)
    assert res.exit_code == 0, res.output
    rows = stored_rows(out)
    assert [rows[f"s{i}"]["status"] for i in range(3)] == ["ok", "rejected", "empty_reply"]
    assert rows["s0"]["raw_text"] == "B" and rows["s0"]["letter"] == "B"
    assert rows["s1"]["error"] == 'HTTP 400: {"detail": "prompt rejected"} (attempts: 1)'
    assert [b["path"] for b in server.bodies] == ["/v1/generate"] * 4  # 503 retried once
    assert {b["style"] for b in server.bodies} == {"terse"}
    info = json.loads((out / "run.json").read_text())
    assert info["config"]["model"] == "echo:tiny"
    assert placement_of("echo") == "api"
    assert frame_encoding_of("echo:tiny", {"jpeg_quality": "80"}) == FrameEncoding(80, 1024)


def test_a_video_sample_sends_its_frames_and_a_blind_body_is_a_media_error(
    tmp_path: Path,
) -> None:
    """The backend reads the shown frames through ``request_jpegs`` (8 JPEGs for the clip);
    one that reads ``Request.frames`` alone would send none for a video: that sample is stored
    ``media_error`` before any request leaves, never answered blind."""
    make_synthetic_video(tmp_path / "clip.mp4", 24)
    data = tmp_path / "v.jsonl"
    row = {"id": "v0", "video": "clip.mp4", "question": "Tampered?", "options": ["Yes", "No"],
           "answer": "No"}  # fmt: skip
    data.write_text(json.dumps(row) + "\n")
    srv = _Server([])
    try:
        for arg in ("tiny", "blind"):
            out = tmp_path / arg
            cli = ["eval", "--data", str(data), "--model", f"echo:{arg}", "--out", str(out)]
            cli += ["--model-arg", f"base_url={srv.base_url}", "--bootstrap", "0", "-q"]
            res = CliRunner().invoke(app, cli)
            assert res.exit_code in (0, 1), res.output
            (stored,) = stored_rows(out).values()
            if arg == "tiny":
                assert stored["status"] == "ok"
            else:
                assert stored["status"] == "media_error"
                assert "holds no image or video for a sample with media" in stored["error"]
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()
    assert [len(b["images"]) for b in srv.bodies] == [8]  # only the seeing backend's request
