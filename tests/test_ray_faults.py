"""``--executor ray`` when something fails mid-run, on the session's two-node loopback cluster
(``conftest.ray_cluster``; ``tests/ray_cluster.py``): a node removed, a replica process
killed, the driver killed, Ctrl-C; and a Ray that ``eval`` starts itself, which leaves no
process behind after a killed replica and Ctrl-C. Each evaluates ``tests.ray_runs.SLOW`` (``random:7``
decoding 2 frames of each of the 24 real clips, sleeping ``delay_s`` per request, so the
fault lands mid-run whatever the machine's speed while costing next to no CPU) and ends equal
to the serial run of the same command, every row written once, no replica left running.

A file of its own (not part of ``tests/test_ray.py``) so that under pytest-xdist it runs on
its own worker with its own cluster, beside the other Ray files (``conftest.xdist_scope``).
"""

from __future__ import annotations

import _thread
import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.ray_cluster import LoopbackCluster
from tests.ray_runs import (
    SLOW,
    assert_replicas_gone,
    eval_argv,
    invoke,
    live_replicas,
    metrics_of,
    on_ray,
    run_info_of,
    same_run,
    watch_replicas,
    when_rows,
)
from tests.runs import stored_rows

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")

pytestmark = [pytest.mark.slow, pytest.mark.ray]


@pytest.fixture(scope="module")
def serial_slow(real_tamper_set: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``SLOW`` on the real tamper set, serial: the reference of the fault tests."""
    out = tmp_path_factory.mktemp("serial-slow") / "run"
    invoke(eval_argv(real_tamper_set, out, *SLOW))
    return out


T = TypeVar("T")

REPLICA_WAIT_S = 120.0
"""How long a fault waits for its target replica to be alive (a replica whose process is still
starting on a loaded machine holds its queued blocks: the run cannot end before it is up)."""


def _first(find: Callable[[], T | None], what: str) -> T:
    """``find()`` once it is not None, asked every 0.1 s for ``REPLICA_WAIT_S`` seconds."""
    deadline = time.monotonic() + REPLICA_WAIT_S
    while (found := find()) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} after {REPLICA_WAIT_S:g} s")
        time.sleep(0.1)
    return found


def _remove_a_replica_node(c: LoopbackCluster) -> None:
    """Kill (no graceful stop) a worker node that hosts a live replica of this run."""

    def worker_node() -> Any:
        for actor in live_replicas():
            node_id = actor.get("Address", {}).get("NodeID")
            node = next((n for n in c.cluster.worker_nodes if n.node_id == node_id), None)
            if node is not None:
                return node
        return None

    c.cluster.remove_node(
        _first(worker_node, "no live replica on a worker node"), allow_graceful=False
    )


def test_eval_survives_losing_a_node_mid_run(
    cluster: LoopbackCluster, real_tamper_set: Path, serial_slow: Path, tmp_path: Path
) -> None:
    cluster.add_node()  # 3 nodes for 2 replicas: one on a worker node, one slot spare
    out = tmp_path / "run"
    args = [*eval_argv(real_tamper_set, out, *SLOW), *on_ray(cluster)]
    with when_rows(out, 3, lambda: _remove_a_replica_node(cluster)) as fired:
        invoke([*args, "--replicas", "2"])
    assert fired[0]
    info = run_info_of(out)
    ex = info["executor"]
    assert ex["replica_failures"] >= 1, ex  # Ray restarted it and re-ran its block
    assert (info["n_new"], info["n_rows"]) == (24, 24)  # nothing lost, nothing written twice
    assert metrics_of(out) == metrics_of(serial_slow)


def test_ctrl_c_keeps_rows_and_the_same_command_resumes(
    cluster: LoopbackCluster,
    real_tamper_set: Path,
    serial_slow: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "run"
    pids = watch_replicas(monkeypatch)
    args = [*eval_argv(real_tamper_set, out, *SLOW), *on_ray(cluster)]
    args += ["--replicas", "2"]  # a node removed by the fault test may still count as alive
    with when_rows(out, 4, _thread.interrupt_main) as fired:
        first = CliRunner().invoke(app, args)
    assert fired[0]
    assert first.exit_code == 130, first.output
    assert "interrupted" in first.output
    assert_replicas_gone(pids)  # nor one stopped by Ctrl-C
    done = run_info_of(out)
    assert done["interrupted"] and 4 <= done["n_new"] < 24
    assert metrics_of(out)["complete"] is False
    invoke(args)
    again = run_info_of(out)
    assert again["n_new"] == 24 - done["n_new"]  # only the rest was asked
    assert metrics_of(out) == metrics_of(serial_slow)


def _kill_a_replica_process() -> None:
    """SIGKILL the process of one live replica of this run (Ray restarts it: a new process)."""
    import signal

    def pid() -> int | None:
        return next((int(a["Pid"]) for a in live_replicas() if a.get("Pid")), None)

    os.kill(_first(pid, "no live replica"), signal.SIGKILL)


def test_eval_survives_a_killed_replica_process(
    cluster: LoopbackCluster,
    real_tamper_set: Path,
    serial_slow: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 29: a replica killed mid-run is restarted by Ray and its block re-run: every row
    written once, equal to serial; neither the restarted replica nor the others outlive it."""
    out = tmp_path / "run"
    args = [*eval_argv(real_tamper_set, out, *SLOW), *on_ray(cluster)]
    pids = watch_replicas(monkeypatch)
    with when_rows(out, 2, _kill_a_replica_process) as fired:
        invoke([*args, "--replicas", "2"])
    assert fired[0]
    assert_replicas_gone(pids)
    info = run_info_of(out)
    assert (info["n_new"], info["n_rows"]) == (24, 24)
    assert info["executor"]["replica_failures"] >= 1, info["executor"]
    same_run(out, serial_slow)


def test_a_killed_driver_resumes_and_equals_serial(
    cluster: LoopbackCluster, real_tamper_set: Path, serial_slow: Path, tmp_path: Path
) -> None:
    """Issue 29: the driver SIGKILLed mid-run keeps every committed block; the same command
    then asks only for the rest, and the run equals serial."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    args = [*eval_argv(real_tamper_set, out, *SLOW), *on_ray(cluster)]
    args += ["--replicas", "2"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-c", "from mmrobust.cli import app; app()", *args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with when_rows(out, 1, lambda: proc.send_signal(signal.SIGKILL)) as fired:
            deadline = time.monotonic() + 600
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert fired[0] and proc.returncode == -signal.SIGKILL
    kept = len(stored_rows(out))
    assert 1 <= kept < 24
    invoke(args)
    assert run_info_of(out)["n_new"] == 24 - kept  # only the rest was asked
    same_run(out, serial_slow)


def _marked(mark: str) -> list[Any]:
    """The live (not zombie) processes whose environment holds ``MMROBUST_TEST_MARK=mark``: a
    process inherits it from the one that started it, so every process of a Ray that the
    marked ``mmrobust`` started (GCS, raylet, agents, workers and replicas) has it."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            marked = proc.environ().get("MMROBUST_TEST_MARK") == mark
            if marked and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


def test_no_process_of_a_ray_mmrobust_started_outlives_the_run(tmp_path: Path) -> None:
    """Issue 42: ``eval --executor ray`` without ``--ray-address`` starts its own Ray. One run
    whose replica is SIGKILLed mid-run (Ray restarts it: a new process) and which is then
    interrupted by Ctrl-C as a terminal sends it (SIGINT to the whole process group, Ray's
    processes included): exit 130, the rows kept, and within a minute no process of that
    Ray (every one carries the run's mark in its environment) is left, replicas included."""
    import shutil
    import signal
    import subprocess
    import sys
    import tempfile
    import time
    import uuid

    import psutil

    data = tmp_path / "text.jsonl"
    sample = {"benchmark": "generic", "options": {"A": "yes", "B": "no"}, "answer": "A"}
    lines = [json.dumps({"id": f"s{i:02d}", "question": f"q{i}", **sample}) for i in range(24)]
    data.write_text("\n".join(lines) + "\n")
    out, mark = tmp_path / "run", uuid.uuid4().hex
    args = ["eval", "--data", str(data), "--model", "random:7", "--model-arg", "delay_s=0.3"]
    args += ["--out", str(out), "-q", "--workers", "1", "--bootstrap", "0"]
    args += ["--executor", "ray", "--replicas", "1", "--ray-cpus-per-worker", "0.5"]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(MMROBUST_TEST_MARK=mark, PYTHONPATH=os.pathsep.join(sys.path))
    temp = tempfile.mkdtemp(prefix="mmr-ray-")  # short: Ray's socket paths have a length limit
    env["RAY_TMPDIR"] = temp  # this Ray's session folder
    cmd = [sys.executable, "-c", "from mmrobust.cli import app; app()", *args]
    proc = subprocess.Popen(
        cmd, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    killed: list[int] = []

    def kill_the_replica() -> None:
        for p in _marked(mark):
            with contextlib.suppress(psutil.Error):
                if "ReplicaStage" in " ".join(p.cmdline()):
                    killed.append(p.pid)
                    p.kill()

    try:
        with (
            when_rows(out, 6, kill_the_replica) as first,
            when_rows(out, 12, lambda: os.killpg(proc.pid, signal.SIGINT)) as second,
        ):
            output = proc.communicate(timeout=600)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(temp, ignore_errors=True)
    assert first[0] and second[0] and killed, output
    assert proc.returncode == 130, output
    info = run_info_of(out)
    assert info["interrupted"] and 12 <= info["n_new"] < 24, info
    assert info["executor"]["replica_failures"] >= 1, info["executor"]
    deadline = time.monotonic() + 60  # a condition, not a pause
    while (left := _marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.2)
    described = []
    for p in left:
        with contextlib.suppress(psutil.Error):
            described.append(f"{p.pid} ppid={p.ppid()} {' '.join(p.cmdline())[:80]}")
    for p in left:  # leave nothing behind on the test machine either
        with contextlib.suppress(psutil.Error):
            p.kill()
    assert described == [], f"processes of the run's Ray outlived it: {described}"
