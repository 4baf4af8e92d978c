"""A loopback fake of the Hugging Face Hub endpoints ``--push-to-hub`` uses.

Read from ``huggingface_hub``'s source (``hf_api.create_repo``, ``_commit_api``:
``_fetch_upload_modes`` and ``_send_commit``, ``repocard.RepoCard.load`` / ``validate``):

* ``POST /api/repos/create`` (JSON ``name``, ``organization``, ``type``, ``visibility``);
* ``POST /api/{type}s/{repo}/preupload/{revision}`` (JSON ``files``: path, sample, size):
  every file is answered ``regular`` (sent inline, base64, in the commit);
* ``POST /api/{type}s/{repo}/commit/{revision}[?create_pr=1]``: NDJSON, a ``header`` line
  (``summary``, ``description``) then one ``file`` line per file (``path``, ``content``);
* ``HEAD`` / ``GET /{repo}/resolve/{revision}/README.md``: a model card, or 404
  ``EntryNotFound``;
* ``POST /api/validate-yaml``: accepted.

Anything else is answered 404. Every request is recorded (:attr:`FakeHub.requests`).
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

OID = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class Commit:
    kind: str  # "models" / "datasets"
    repo: str
    summary: str
    description: str
    files: dict[str, bytes]
    create_pr: bool


@dataclass
class FakeHub:
    """The server; ``cards``: model repo id -> its README.md text."""

    cards: dict[str, str] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    created: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, data: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _json(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
            self._send(code, json.dumps(obj).encode(), headers)

        def _any(self) -> None:
            url = urlsplit(self.path)
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            query = parse_qs(url.query)
            hub.requests.append(Request(self.command, url.path, query, dict(self.headers), body))
            path = url.path
            if path == "/api/repos/create":
                req = json.loads(body)
                hub.created.append(req)
                prefix = {"dataset": "datasets/", "space": "spaces/"}.get(req.get("type"), "")
                repo = f"{req['organization']}/{req['name']}"
                return self._json(200, {"url": f"{hub.url}/{prefix}{repo}"})
            if path == "/api/validate-yaml":
                return self._json(200, {})
            if path.startswith("/api/") and "/preupload/" in path:
                files = json.loads(body)["files"]
                return self._json(200, {"files": [
                    {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                    for f in files
                ]})  # fmt: skip
            if path.startswith("/api/") and "/commit/" in path:
                kind, _, rest = path[len("/api/") :].partition("/")
                repo = rest.split("/commit/")[0]
                lines = [json.loads(x) for x in body.decode().splitlines() if x.strip()]
                header = next(x["value"] for x in lines if x["key"] == "header")
                files = {x["value"]["path"]: base64.b64decode(x["value"]["content"])
                         for x in lines if x["key"] == "file"}  # fmt: skip
                pr = query.get("create_pr") == ["1"]
                hub.commits.append(Commit(kind, repo, header.get("summary", ""),
                                          header.get("description", ""), files, pr))  # fmt: skip
                prefix = "" if kind == "models" else f"{kind}/"
                answer = {"commitUrl": f"{hub.url}/{prefix}{repo}/commit/{OID}", "commitOid": OID}
                if pr:
                    answer["pullRequestUrl"] = f"{hub.url}/{prefix}{repo}/discussions/1"
                return self._json(200, answer)
            if "/resolve/" in path:
                repo, _, rest = path.lstrip("/").partition("/resolve/")
                if rest.endswith("/README.md") and repo in hub.cards:
                    data = hub.cards[repo].encode()
                    return self._send(200, data, {
                        "Content-Type": "text/plain", "ETag": f'"{OID}"',
                        "X-Repo-Commit": OID, "Content-Length": str(len(data)),
                    })  # fmt: skip
                return self._json(404, {"error": "Entry not found"},
                                  {"X-Error-Code": "EntryNotFound"})  # fmt: skip
            return self._json(404, {"error": f"not faked: {self.command} {path}"})

        do_GET = do_POST = do_HEAD = do_PUT = _any

    return Handler
