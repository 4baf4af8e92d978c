"""What the Ray test files share (``tests/test_ray.py``, ``tests/test_ray_faults.py``): the
``eval`` command lines, the run-folder readers, and the watchers of a run in progress (rows
stored so far, the replica processes that served it)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.ray_cluster import LoopbackCluster
from tests.runs import stored_rows

SLOW = ("random:7", "--model-arg", "media=frames", "--model-arg", "delay_s=0.2")
SLOW += ("--frames", "2", "--workers", "1", "--bootstrap", "200")
"""The fault tests' model and options (their serial reference, ``serial_slow``, too): 24
samples in 8 blocks of 3 (one request at a time per replica), each request 0.2 s (``delay_s``
changes no answer and no fingerprint)."""


def on_ray(c: LoopbackCluster, *extra: str) -> list[str]:
    return ["--executor", "ray", "--ray-address", c.address, *extra]


def invoke(args: list[str], code: int = 0) -> Any:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == code, f"{result.output}\n{result.exception!r}"
    return result


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def eval_argv(data: Path, out: Path, model: str, *extra: str) -> Any:
    return ["eval", "--data", str(data), "--model", model, "--out", str(out), "-q", *extra]


def metrics_of(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "metrics.json").read_text()))


def run_info_of(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "run.json").read_text()))


def watch_replicas(monkeypatch: pytest.MonkeyPatch) -> set[int]:
    """The pids of the replica processes that return blocks from now on (filled as they do)."""
    from mmrobust.distributed import pipeline

    pids: set[int] = set()
    real = pipeline.PipelineStats.saw

    def saw(self: Any, ip: str, node_id: str, actor: str, pid: int) -> None:
        pids.add(int(pid))
        real(self, ip, node_id, actor, pid)

    monkeypatch.setattr(pipeline.PipelineStats, "saw", saw)
    return pids


def live_replicas() -> list[dict[str, Any]]:
    """The ALIVE eval replica actors (``ReplicaStage``) of this process's Ray job, as Ray's
    actor table lists them (``ray._private.state.actors``). The job filter matters on a loaded
    machine: a replica of the previous test's run that ``ray.kill`` has not yet ended is still
    listed ALIVE, under its own job."""
    import ray
    from ray._private import state

    job = ray.get_runtime_context().get_job_id()
    return [
        actor
        for actor in state.actors().values()
        if "ReplicaStage" in str(actor.get("ActorClassName"))
        and actor.get("State") == "ALIVE"
        and actor.get("JobID") == job
    ]


def assert_replicas_gone(pids: set[int], timeout: float = 60.0) -> None:
    """Every replica process in ``pids`` (on this machine: the loopback cluster's nodes) ends
    within ``timeout`` seconds of the run (Ray ends a job's actors when its driver leaves)."""
    import psutil

    assert pids, "no replica returned a block"
    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            procs.append(psutil.Process(pid))
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    left = []
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            if proc.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{proc.pid} {' '.join(proc.cmdline())[:80]}")
    assert left == [], f"replica processes outlived their run: {left}"


@contextlib.contextmanager
def when_rows(run: Path, n: int, action: Callable[[], None]) -> Iterator[list[bool]]:
    """Call ``action`` from a thread once ``run``'s store holds ``n`` rows; yields ``[fired]``."""
    fired = [False]
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.1):
            try:
                with contextlib.closing(sqlite3.connect(run / "results.sqlite", timeout=1)) as db:
                    count = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
            except sqlite3.Error:
                continue
            if count >= n:
                fired[0] = True
                action()
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield fired
    finally:
        stop.set()
        thread.join(timeout=30)


def same_rows(run: Path, ref: Path) -> None:
    """The stored rows of ``run`` equal ``ref``'s, column by column, less timestamps and
    latencies."""
    rows, want = stored_rows(run), stored_rows(ref)
    assert sorted(rows) == sorted(want)
    for sid, row in rows.items():
        for column, value in row.items():
            if column not in ("created_at", "latency_s"):
                assert value == want[sid][column], (sid, column)


def same_run(run: Path, ref: Path) -> None:
    """Equal rows, and ``metrics.json`` equal less the executor block (issue 29)."""
    same_rows(run, ref)
    ours, theirs = metrics_of(run), metrics_of(ref)
    assert ours == theirs
    info = run_info_of(run)
    assert info["n_rows"] == len(stored_rows(ref))
