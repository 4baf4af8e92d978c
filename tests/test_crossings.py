"""Where features meet (issue 27): one tiny set through every backend x executor x task.

Each cell is ``mmrobust eval`` through the CLI (typer's ``CliRunner``, as a
user runs it) of one backend kind (``constant:A``; ``random:0`` with frames;
``forensic``; ``openai:`` and ``gemini:`` against the loopback fake server
``tests/fake_openai_server.py``; a tiny random ``hf:`` Idefics3 checkpoint,
``tests/hf_tiny.py``) on one executor (serial ``--workers 1``, threads
``--workers 3``, ``--executor ray`` on a 2-node loopback cluster,
``tests/ray_cluster.py``) for one task (``--task detect|type|when|leading`` on
a 6-clip built set, and MMR on the first 4 ``mmr-demo`` records for the
backends that take images). ``tests/crossings.py`` lists the cells and why some
are left out.

Checked: every cell stores one row per sample, written once; its
``metrics.json`` (less timestamps and the executor block) and its rows
(status, letter, reply, rule, error, frame indices, extras) equal the serial
cell's; on Ray also with ``--fps/--max-frames``, ``--text-only``, ``--official``, with a
relative ``--data``; a finished run resumed from another working directory with a
relative ``--data`` asks nothing (zero requests at the fake server, ``0 new
rows``), and so does a serial run resumed on Ray. One Ray cluster, one fake server, one tiny checkpoint and one frame
cache serve the module; the tiny set is built once.

A node that lacks part of the data (a raylet in its own mount namespace) is
``tests/test_crossings_nodes.py``: a file of its own, so that under pytest-xdist it runs on
its own worker and cluster beside this one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.crossings import (
    BACKENDS,
    MMR_LIMIT,
    RAY_VARIANTS,
    VARIANTS,
    build_tiny_set,
    cells,
    metrics,
    replicas,
    responder,
    rows,
    run_info,
    secret_forms,
)
from tests.fake_openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.ray]

SAMPLES = {"detect": 6, "type": 6, "when": 6, "leading": 12, "mmr": 4}
"""Rows each task stores: one per clip, two per clip for ``leading`` (its pair), 4 MMR records."""

EXECUTOR_ARGS = {"serial": ["--workers", "1"], "threads": ["--workers", "3"]}


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny built set (``tests/crossings.py``), built once."""
    return build_tiny_set(tmp_path_factory.mktemp("crossings") / "set")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    """The fake server every API cell asks, in its wire format (answers from what was sent)."""
    with FakeOpenAIServer(responder=responder) as s:
        yield s


class Matrix:
    """Runs cells on first use and keeps their run folders (one eval per cell per module)."""

    def __init__(self, request: pytest.FixtureRequest, root: Path, tiny_set: Path) -> None:
        self.request = request
        self.root = root
        self.tiny_set = tiny_set
        self.cache = root / "frame-cache"
        self.done: dict[tuple[str, ...], Path] = {}

    def fixture(self, name: str) -> Any:
        return self.request.getfixturevalue(name)

    def argv(
        self,
        backend: str,
        task: str,
        executor: str,
        out: Path,
        data: str,
        *,
        cache: bool = True,
        variant: str = "frames",
    ) -> list[str]:
        """The ``eval`` command of a cell (``cache=False``: no frame cache, every file is read;
        ``variant``: frame options, ``VARIANTS``)."""
        b = BACKENDS[backend]
        ckpt = self.fixture("checkpoint") if backend == "hf" else None
        url = self.fixture("server").base_url if b.api else None
        args = ["eval", "--data", data, *b.argv(ckpt=ckpt, base_url=url), "--out", str(out)]
        args += [
            *VARIANTS[variant],
            "--bootstrap",
            "0",
            "--cache-dir",
            str(self.cache) if cache else "none",
        ]
        args += ["-q"]
        args += [*MMR_LIMIT] if task == "mmr" else ["--task", task]
        if executor == "ray":
            args += ["--executor", "ray", "--ray-address", self.fixture("cluster").address]
            args += replicas(backend, task, variant)
        else:
            args += EXECUTOR_ARGS[executor]
        return args

    def data(self, task: str) -> str:
        return "mmr-demo" if task == "mmr" else str(self.tiny_set)

    def run(self, backend: str, task: str, executor: str, variant: str = "frames") -> Path:
        """The run folder of a cell (evaluated on first use; asserts its exit code)."""
        cell = (backend, task, executor, variant)
        if cell not in self.done:
            out = self.root / "-".join(cell)
            args = self.argv(backend, task, executor, out, self.data(task), variant=variant)
            invoke(args, BACKENDS[backend].exit_code)
            self.done[cell] = out
        return self.done[cell]


def invoke(args: list[str], code: int = 0) -> Any:
    """``mmrobust ARGS`` in this process; asserts the exit code."""
    result = CliRunner().invoke(app, args)
    assert result.exit_code == code, f"{result.output}\n{result.exception!r}"
    return result


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny random Idefics3 checkpoint (``tests/hf_tiny.py``), built once."""
    pytest.importorskip("transformers")
    from tests.hf_tiny import build_tiny_idefics3

    return build_tiny_idefics3(tmp_path_factory.mktemp("crossings-hf") / "tiny", seed=1)


@pytest.fixture(scope="module")
def cluster(ray_cluster: Any) -> Any:
    """The session's two Ray nodes on 127.0.0.1 (``conftest.ray_cluster``), started on first
    use by a Ray cell (its attributes start it: a cluster that cannot start skips the cell)."""
    return ray_cluster


@pytest.fixture(scope="module")
def matrix(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tiny_set: Path
) -> Matrix:
    return Matrix(request, tmp_path_factory.mktemp("crossings-runs"), tiny_set)


@pytest.fixture(autouse=True)
def _key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMROBUST_CROSSINGS_KEY", "sk-crossings")


@pytest.mark.parametrize(("backend", "task", "executor"), list(cells()))
def test_a_cell_equals_the_serial_run(
    matrix: Matrix, backend: str, task: str, executor: str
) -> None:
    """Same rows and ``metrics.json`` (less timestamps, executor) on every executor."""
    run = matrix.run(backend, task, executor)
    info = run_info(run)
    n = SAMPLES[task]
    assert (info["n_rows"], info["n_new"]) == (n, n)  # one row per sample, each written once
    assert len(rows(run)) == n
    assert info["executor"]["name"] == executor
    if executor == "ray":  # each backend's detect cell on both nodes (an API client: 1)
        two = not replicas(backend, task, "frames") and not BACKENDS[backend].api
        ex = info["executor"]
        assert (ex["replicas"], ex["n_nodes"]) == ((2, 2) if two else (1, 1))
        assert ex["dispatch"] == "ray actors (one per replica, blocks of items)"
        if two:  # hf: one replica per (declared) GPU by default; the others one per CPU
            assert ex["nodes"] == {"127.0.0.1": 2}
            gpu = {"GPU": 1.0} if backend == "hf" else {}
            assert ex["resources_per_replica"] == {"CPU": 1.0, **gpu}
    if executor == "serial":
        return
    serial = matrix.run(backend, task, "serial")
    assert rows(run) == rows(serial)
    assert metrics(run) == metrics(serial)


def test_the_key_reaches_the_server_from_the_replicas_and_no_file_of_the_ray_run(
    matrix: Matrix, request: pytest.FixtureRequest
) -> None:
    """The secret cell of the Ray path with a key (``api_key_env``, read by the replicas from
    their own environment): sent as ``Bearer``, in no file of the run in any form."""
    run = matrix.run("openai", "detect", "ray")
    sent = {r.headers.get("authorization") for r in request.getfixturevalue("server").requests}
    assert "Bearer sk-crossings" in sent
    forms = secret_forms("sk-crossings")
    leaks = [p for p in run.rglob("*") if p.is_file() and any(f in p.read_bytes() for f in forms)]
    assert leaks == []


@pytest.mark.parametrize(("backend", "variant"), RAY_VARIANTS)
def test_other_frame_options_on_ray_equal_serial(
    matrix: Matrix, backend: str, variant: str
) -> None:
    """``--fps/--max-frames``, ``--text-only``, ``--official`` on Ray: the serial run's key,
    rows and metrics."""
    ray, serial = (matrix.run(backend, "detect", ex, variant) for ex in ("ray", "serial"))
    assert run_info(ray)["key"] == run_info(serial)["key"]
    assert run_info(ray)["n_new"] == 6
    assert rows(ray) == rows(serial)
    assert metrics(ray) == metrics(serial)
    assert run_info(ray)["key"] != run_info(matrix.run(backend, "detect", "serial"))["key"]


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_resume_from_another_directory_with_a_relative_data_asks_nothing(
    matrix: Matrix,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    done = matrix.run(backend, "detect", "serial")
    out = tmp_path / "run"
    shutil.copytree(done, out)
    elsewhere = tmp_path / "elsewhere" / "deeper"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    data = os.path.relpath(matrix.tiny_set, elsewhere)
    assert not Path(data).is_absolute() and Path(data).is_dir()
    api = BACKENDS[backend].api
    asked = len(request.getfixturevalue("server").chat_requests) if api else 0
    result = invoke(
        matrix.argv(backend, "detect", "serial", out, data), BACKENDS[backend].exit_code
    )
    info = run_info(out)
    assert (info["n_new"], info["n_rows"]) == (0, SAMPLES["detect"]), result.output
    if api:
        assert len(request.getfixturevalue("server").chat_requests) == asked
    assert rows(out) == rows(done)
    assert metrics(out) == metrics(done)


EXPORT_VOLATILE = ("latency_s", "created_at")
"""Exported fields that differ between two runs of the same cell (timing)."""


@pytest.mark.parametrize("executor", ["serial", "threads", "ray"])
def test_export_of_a_cell_equals_serial_and_guards_the_run(
    matrix: Matrix, executor: str, tmp_path: Path
) -> None:
    """The export cells: ``random`` on ``detect`` from each executor exports the serial run's
    records (JSON Lines; less timing); a link planted at ``RUN/samples.csv`` is replaced and
    its target never written; ``--out`` on each file the run owns is refused, ``--force`` too,
    and the run's files are unchanged."""
    run = matrix.run("random", "detect", executor)
    owned = ("run.json", "metrics.json", "results.sqlite")
    before = {n: (run / n).read_bytes() for n in owned}
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    link = run / "samples.csv"
    link.symlink_to(victim)
    try:
        invoke(["export", str(run), "--format", "csv"])
        assert victim.read_text() == "keep\n" and not link.is_symlink()
    finally:
        link.unlink()
    for name in owned:
        out = invoke(["export", str(run), "--out", str(run / name), "--force"], 2)
        assert "mmrobust owns it" in out.stderr
    assert {n: (run / n).read_bytes() for n in owned} == before

    def exported(folder: Path, name: str) -> list[dict[str, Any]]:
        invoke(["export", str(folder), "--out", str(tmp_path / name)])
        lines = (tmp_path / name).read_text(encoding="utf-8").splitlines()
        records = [{k: v for k, v in json.loads(line).items() if k not in EXPORT_VOLATILE}
                   for line in lines]  # fmt: skip
        return sorted(records, key=lambda r: str(r["id"]))  # threads store in finishing order

    mine = exported(run, "cell.jsonl")
    assert len(mine) == SAMPLES["detect"]
    assert mine == exported(matrix.run("random", "detect", "serial"), "serial.jsonl")


def test_a_relative_data_on_ray_equals_serial(
    matrix: Matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replicas resolve a relative ``--data`` (and so every media path) against the driver's
    working directory, not their own."""
    monkeypatch.chdir(matrix.tiny_set.parent)
    out = tmp_path / "run"
    invoke(matrix.argv("random", "detect", "ray", out, matrix.tiny_set.name, cache=False))
    serial = matrix.run("random", "detect", "serial")
    assert run_info(out)["n_new"] == 6
    assert rows(out) == rows(serial)
    assert metrics(out) == metrics(serial)


@pytest.mark.parametrize("backend", ["random", "openai"])
def test_a_serial_run_resumed_on_ray_asks_nothing(
    matrix: Matrix, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Ray's replicas compute the key the serial run stored: every row is found finished."""
    done = matrix.run(backend, "detect", "serial")
    out = tmp_path / "run"
    shutil.copytree(done, out)
    server = request.getfixturevalue("server")
    asked = len(server.chat_requests)
    invoke(matrix.argv(backend, "detect", "ray", out, str(matrix.tiny_set)))
    info = run_info(out)
    assert (info["n_new"], info["n_rows"], info["executor"]["name"]) == (0, 6, "ray")
    assert len(server.chat_requests) == asked
    assert rows(out) == rows(done)
    assert metrics(out) == metrics(done)
