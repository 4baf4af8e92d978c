"""Helpers of ``tests/test_crossings.py``: the backends, the cells of the matrix, the tiny set.

A *cell* is one ``(backend, task, executor)`` eval of the same tiny data
through the CLI, as a user runs it. ``Backend`` says how each backend kind is
spelled on the command line; ``cells()`` lists the cells the matrix runs
(with the reason for every one it leaves out); ``comparable`` strips what may
differ between two runs of the same cell on different executors.

The tiny set (``build_tiny_set``): two synthetic clips of 40 frames, 96x64 px,
25 fps (``tests/synth.py``), tampered with ``dropping`` and ``masking`` in the
middle for 0.4 s: 6 clips (2 originals + 4 tampered), codec control on.
MMR cells use the built-in ``mmr-demo`` data, its first 4 records (2 pairs).

The secret cells (``SECRET_SPELLINGS`` x ``http_backends()``, ``tests/test_secrets.py``): a
credential in each spelling a user may write, on each HTTP backend registered.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.fake_openai_server import RecordedRequest, Reply

TASKS = ("detect", "type", "when", "leading", "mmr")
"""``--task`` values on the tiny tamper set, and ``mmr``: the ``mmr-demo`` data."""
EXECUTORS = ("serial", "threads", "ray")

FRAMES = ("--frames", "2")
"""The fewest frames that still show a window and a clip's motion."""

VARIANTS = {
    "frames": FRAMES,
    "fps": ("--fps", "10", "--max-frames", "3"),
    "text-only": (*FRAMES, "--text-only"),
    "official": (*FRAMES, "--official"),
}
"""Options of a cell: the matrix's ``--frames 2``; ``--fps`` with a cap (another frame
policy, so another run key); ``--text-only`` (no media sent; what worked on Ray before item 1);
``--official`` (the reference's prompt and decisions, which the replicas must apply too)."""

RAY_VARIANTS = (
    ("random", "fps"),
    ("openai", "fps"),
    ("openai", "text-only"),
    ("openai", "official"),
)
"""``(backend, variant)`` also run on Ray (``detect``) beside the matrix's ``--frames 2``: the
options that item 1's run key mismatch depended on, for a backend that decodes frames on the
replicas and for the API backend that encodes them its own way, and the official protocol."""

MMR_LIMIT = ("--limit", "4")
"""The first 4 ``mmr-demo`` records: 2 positive/negative pairs."""


@dataclass(frozen=True)
class Backend:
    """One backend kind as the command line spells it.

    Attributes:
        name: the matrix's name for it (test ids).
        spec: ``--model``; ``{ckpt}`` is the tiny ``hf:`` checkpoint's folder.
        args: extra ``--model-arg`` options; ``{base_url}`` is the fake server's.
        images: the backend answers questions about a photo (MMR cells).
        exit_code: what ``eval`` exits with on the tiny data (``hf``: 1, its random
            weights reply noise, so no sample is scored; the run is stored as usual).
        fill_cluster: its ``detect`` Ray cell starts as many replicas as fit (2 on the
            2-node cluster); otherwise, and in every other Ray cell, one replica.
        tasks: the ``TASKS`` it runs (a second API wire format needs only its two media
            paths, a clip's frames and a photo: the tasks' prompts are the same code).
        api: an HTTP API client (``placement="api"``) asking the fake server at ``{base_url}``.
    """

    name: str
    spec: str
    args: tuple[str, ...] = ()
    images: bool = True
    exit_code: int = 0
    fill_cluster: bool = True
    tasks: tuple[str, ...] = TASKS
    api: bool = False

    def argv(self, *, ckpt: Path | None, base_url: str | None) -> list[str]:
        """``--model SPEC --model-arg ...`` with the placeholders filled in."""
        fill = {"ckpt": str(ckpt), "base_url": str(base_url)}
        out = ["--model", self.spec.format(**fill)]
        for arg in self.args:
            out += ["--model-arg", arg.format(**fill)]
        return out


BACKENDS = {
    b.name: b
    for b in (
        Backend("constant", "constant:A"),
        Backend("random", "random:0", ("media=frames",)),
        Backend("forensic", "forensic", images=False),
        Backend(
            "openai",
            "openai:test",
            ("base_url={base_url}", "max_retries=0", "api_key_env=MMROBUST_CROSSINGS_KEY"),
            api=True,
        ),
        Backend(
            "gemini",
            "gemini:test",
            ("base_url={base_url}", "max_retries=0", "api_key_env=MMROBUST_CROSSINGS_KEY"),
            tasks=("detect", "mmr"),
            api=True,
        ),
        # On Ray: one replica per (declared) GPU, two, each with torch on device=cpu.
        Backend("hf", "hf:{ckpt}", ("device=cpu", "max_new_tokens=4"), exit_code=1),
    )
}


RAY_TASKS_WITH = "random"
"""The backend that runs every task on Ray (frames decoded on the replicas)."""


def replicas(backend: str, task: str, variant: str) -> list[str]:
    """``--replicas`` of a Ray cell: none (as many as fit: 2) for each backend's ``detect``
    cell, ``1`` for the others (a replica is a process that imports mmrobust and loads the
    model: about 2 s of CPU each, more for ``hf``; where the work runs is what they test)."""
    if task == "detect" and variant == "frames" and BACKENDS[backend].fill_cluster:
        return []
    return ["--replicas", "1"]


def ray_cell(backend: str, task: str) -> bool:
    """Which ``(backend, task)`` also run on Ray.

    Each backend once (``detect``; ``mmr`` too for ``openai``, whose images
    take their own path), and every task once with ``random`` (frames on the
    replicas). What a task changes (the prompt, the options, the run key's
    task digest) is computed by the same code whatever the backend, and a Ray
    eval costs seconds of replica start-up on a 2-core machine, so the other
    ``(backend, task)`` pairs run locally only (serial and threads).
    """
    return task == "detect" or backend == RAY_TASKS_WITH or (backend, task) == ("openai", "mmr")


def cells() -> Iterator[Any]:
    """``pytest.param(backend, task, executor)`` for ``test_crossings.py``, with marks."""
    for backend, b in BACKENDS.items():
        for task in b.tasks:
            for executor in EXECUTORS:
                marks: list[Any] = []
                if task == "mmr" and not b.images:
                    if executor == "ray":
                        continue  # the serial and threads cells say why
                    marks.append(
                        pytest.mark.skip(
                            reason="forensic reads video files: it has no answer about a photo "
                            "(eval exits 2: 'forensic takes video only; the samples have images')"
                        )
                    )
                elif executor == "ray" and not ray_cell(backend, task):
                    continue  # see ray_cell: not meaningless, left out for the CI budget
                yield pytest.param(
                    backend, task, executor, id=f"{backend}-{task}-{executor}", marks=marks
                )


@dataclass(frozen=True)
class Refusal:
    """A model that can answer none of a cell's samples: ``eval`` says so in one line and
    exits 2 before any request, on every executor (on Ray before the cluster is contacted).

    Attributes:
        name: test id.
        model: ``--model``.
        task: a ``TASKS`` value (``mmr``: the ``mmr-demo`` data).
        line: the whole output.
    """

    name: str
    model: str
    task: str
    line: str


PICKY = "picky-video"
"""A backend the refusal tests register (not light: its model is loaded only where it runs)
whose models take video only, declared with ``register_backend(media=("video",))``."""

REFUSALS = (
    Refusal(
        "constant-Z",
        "constant:Z",
        "detect",
        "error: constant:Z answers 'Z', which is neither an option letter (A, B) nor an "
        "option text of any sample: every answer would be a parse failure",
    ),
    # the forensic x mmr cells that cells() skips: refused, as their skip reason says
    Refusal(
        "forensic-images",
        "forensic",
        "mmr",
        "error: forensic takes video only; the samples have images",
    ),
    Refusal(
        "declared-media", PICKY, "mmr", f"error: {PICKY} takes video only; the samples have images"
    ),
)
"""``Model.cannot_answer`` (``constant:Z`` on Yes/No), ``Model.cannot_take`` of a light
backend (``forensic`` on photos) and of a backend known only by its spec on the driver."""


def refusal_cells() -> Iterator[Any]:
    """``pytest.param(refusal, executor)`` for every ``REFUSALS`` entry on every executor."""
    for r in REFUSALS:
        for executor in EXECUTORS:
            yield pytest.param(r, executor, id=f"{r.name}-{executor}")


SECRET = "Zq9+xK7pL2wS3cr"
"""The credential the secret cells spell (a ``+``: its URL-encoded form differs)."""


def secret_forms(secret: str = SECRET, user: str = "u") -> tuple[bytes, ...]:
    """The bytes a leak of ``secret`` could take: as is, URL-encoded, base64, and the base64
    of ``user:secret`` (an HTTP ``Basic`` header)."""
    import base64
    from urllib.parse import quote

    return (
        secret.encode(),
        quote(secret, safe="").encode(),
        base64.b64encode(secret.encode()),
        base64.b64encode(f"{user}:{secret}".encode()),
    )


def http_backends() -> list[str]:
    """Every backend shipped with mmrobust whose models are answered over HTTP
    (``placement="api"``): the secret cells run on each, so a backend added to the package
    later joins them. Backends that other test modules register in-process (``echo`` in
    test_backend_seam, answered without a server) are left out: which of them are registered
    depends on which files a test worker collected first."""
    from mmrobust.models.spec import MODELS

    return sorted(
        name
        for name in MODELS.names()
        if MODELS.get(name).placement == "api" and MODELS.origin(name) == "built-in"
    )


@dataclass(frozen=True)
class Spelling:
    """One way a user may write a credential on the command line.

    Attributes:
        name: test id.
        argv: options; ``{backend}``, ``{secret}``, ``{base_url}`` (the fake server's,
            ``http://127.0.0.1:PORT/v1``) and ``{host}`` (``127.0.0.1:PORT``) are filled in.
        command: ``run`` or ``eval`` (the judge's settings are ``eval``'s).
        accepted: the run goes on, the credential held in memory (``base_url``'s user and
            password); every other spelling is refused in one line naming ``api_key_env``.
    """

    name: str
    argv: tuple[str, ...]
    command: str = "run"
    accepted: bool = False

    def fill(self, backend: str, base_url: str, secret: str = SECRET) -> list[str]:
        """``argv`` with the placeholders filled in."""
        host = base_url.split("://", 1)[1].split("/", 1)[0]
        fill = {"backend": backend, "secret": secret, "base_url": base_url, "host": host}
        return [a.format(**fill) for a in self.argv]


SECRET_SPELLINGS = (
    Spelling("spec-query", ("--model", "{backend}:m?api_key={secret}")),
    Spelling("spec-query-case", ("--model", "{backend}:m?x=1&Access_Token={secret}")),
    Spelling("spec-userinfo", ("--model", "{backend}:http://u:{secret}@{host}/m")),
    Spelling("model-arg", ("--model", "{backend}:m", "--model-arg", "api_key={secret}")),
    Spelling(
        "model-args",
        ("--model", "{backend}:m", "--model-args", "base_url={base_url},API_KEY={secret}"),
    ),
    Spelling(
        "header",
        ("--model", "{backend}:m", "--model-arg", "headers=Authorization: Bearer {secret}"),
    ),
    Spelling(
        "extra-body",
        ("--model", "{backend}:m", "--model-arg", 'extra_body={{"api_key": "{secret}"}}'),
    ),
    Spelling(
        "base-url-query",
        ("--model", "{backend}:m", "--model-arg", "base_url={base_url}?key={secret}"),
    ),
    Spelling(
        "judge-spec", ("--model", "constant:A", "--judge", "{backend}:j?token={secret}"), "eval"
    ),
    Spelling(
        "judge-arg",
        ("--model", "constant:A", "--judge", "{backend}:j", "--judge-arg", "api_key={secret}"),
        "eval",
    ),
    Spelling(
        "base-url-userinfo",
        ("--model", "{backend}:m", "--model-arg", "base_url=http://u:{secret}@{host}/v1"),
        accepted=True,
    ),
)
"""Every spelling of a credential the secret cells try (``tests/test_secrets.py``)."""


def secret_cells(accepted: bool) -> Iterator[Any]:
    """``pytest.param(backend, spelling)``: every HTTP backend x every refused (or accepted)
    spelling."""
    for backend in http_backends():
        for spelling in SECRET_SPELLINGS:
            if spelling.accepted == accepted:
                yield pytest.param(backend, spelling, id=f"{backend}-{spelling.name}")


def responder(request: RecordedRequest) -> Reply:
    """The fake server's reply: ``A`` or ``B`` from a checksum of the prompt and the images.

    Deterministic in what was sent, so two runs that send the same frames get
    the same answers, and runs that send other frames (another encoding, other
    indices) very likely do not.
    """
    blob = "\n".join([request.text, *request.image_urls]).encode()
    return Reply.ok("AB"[zlib.crc32(blob) % 2])


def build_tiny_set(out: Path) -> Path:
    """Write the tiny set (see module docstring) to ``out``; return ``out``."""
    from tests.synth import make_synthetic_video

    sources = out.parent / f"{out.name}-sources"
    sources.mkdir(parents=True)
    clips = [
        make_synthetic_video(sources / f"clip{i}.mp4", 40, 25, (96, 64), seed=i) for i in range(2)
    ]
    args = ["tamper", *map(str, clips), "--out", str(out), "--effects", "dropping,masking"]
    args += ["--position", "middle", "--duration", "0.4", "--codec-control", "--seed", "0"]
    result = CliRunner().invoke(app, [*args, "--preset", "ultrafast"])
    assert result.exit_code == 0, result.output
    return out


VOLATILE = frozenset({"created_at", "started_at", "finished_at", "timestamp", "executor"})
"""Keys that may differ between runs of the same cell (times, where it ran)."""


def comparable(value: Any) -> Any:
    """``value`` (parsed JSON) without ``VOLATILE`` keys, at any depth."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


ROW_FIELDS = ("status", "letter", "raw_text", "rule", "error", "frame_indices", "extra")
"""Stored columns that must be equal, row for row, across executors."""


def rows(run: Path) -> dict[str, tuple[Any, ...]]:
    """``{sample_id: ROW_FIELDS values}`` of a run folder's store."""
    with sqlite3.connect(run / "results.sqlite") as db:
        db.row_factory = sqlite3.Row
        got = db.execute("SELECT * FROM results").fetchall()
    return {r["sample_id"]: tuple(r[f] for f in ROW_FIELDS) for r in got}


def metrics(run: Path) -> Any:
    """``metrics.json`` less ``VOLATILE`` keys."""
    return comparable(json.loads((run / "metrics.json").read_text()))


def run_info(run: Path) -> dict[str, Any]:
    """``run.json``."""
    return dict(json.loads((run / "run.json").read_text()))


__all__ = [
    "BACKENDS",
    "EXECUTORS",
    "FRAMES",
    "MMR_LIMIT",
    "PICKY",
    "RAY_VARIANTS",
    "REFUSALS",
    "ROW_FIELDS",
    "SECRET",
    "SECRET_SPELLINGS",
    "TASKS",
    "VARIANTS",
    "VOLATILE",
    "Backend",
    "Refusal",
    "Spelling",
    "build_tiny_set",
    "cells",
    "comparable",
    "http_backends",
    "metrics",
    "ray_cell",
    "refusal_cells",
    "replicas",
    "responder",
    "rows",
    "run_info",
    "secret_cells",
    "secret_forms",
]
