"""``--executor ray`` on a real two-node Ray cluster started on 127.0.0.1 inside the test.

The cluster comes from Ray's own test utilities (``ray.cluster_utils.Cluster``):
a head node and a worker node, one CPU each, each with one GPU declared (a
GPU-less machine simulating GPUs: Ray schedules on the declared ``GPU``
resource; the tiny ``hf:`` model runs on ``device=cpu``) and a custom
resource ``accel``. Every check compares with the local (serial) path:
the tamper build byte for byte, ``metrics.json`` for the forensic detector
and a tiny random Idefics3 checkpoint, each row written once. Fault and
interrupt tests remove a node, kill a replica or the driver, or press Ctrl-C
mid-run; they evaluate ``SLOW``: ``random:7`` decoding 2 frames of each of the
24 real clips and sleeping ``delay_s`` per request, so every run lasts a few
seconds after its first rows whatever the machine's speed (the fault lands
mid-run) while costing next to no CPU. The cluster is the session's
(``conftest.ray_cluster``), put back to its two nodes after each test; at the
end of the session every Ray process it started is stopped and its ports are
checked closed.
"""

from __future__ import annotations

import _thread
import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.hf_tiny import build_tiny_idefics3
from tests.plugin_package import install_site, mmrobust, write_pope_data
from tests.ray_cluster import LoopbackCluster, SharedCluster
from tests.runs import stored_rows
from tests.synth import make_synthetic_video

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")

pytestmark = [pytest.mark.slow, pytest.mark.ray]


TAMPER_ARGS = [
    *("--effects", "dropping,masking,rotation,substitution,repetition"),
    *("--position", "middle", "--duration", "1", "--codec-control", "--seed", "0"),
    *("--preset", "ultrafast"),
]
"""The options of ``conftest.real_tamper_set`` (the serial build compared with)."""

SLOW = ("random:7", "--model-arg", "media=frames", "--model-arg", "delay_s=0.2")
SLOW += ("--frames", "2", "--workers", "1", "--bootstrap", "200")
"""The fault tests' model and options (their serial reference, ``serial_slow``, too): 24
samples in 8 blocks of 3 (one request at a time per replica), each request 0.2 s (``delay_s``
changes no answer and no fingerprint)."""


@pytest.fixture()
def cluster(ray_cluster: SharedCluster) -> Iterator[LoopbackCluster]:
    """The session's two nodes on 127.0.0.1 (``tests/ray_cluster.py``), started on first use;
    put back to two live nodes after the test (the fault tests add and remove nodes)."""
    yield ray_cluster.get()
    ray_cluster.reset()


def _ray_args(c: LoopbackCluster, *extra: str) -> list[str]:
    return ["--executor", "ray", "--ray-address", c.address, *extra]


def _invoke(args: list[str], code: int = 0) -> Any:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == code, f"{result.output}\n{result.exception!r}"
    return result


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _eval(data: Path, out: Path, model: str, *extra: str) -> Any:
    return ["eval", "--data", str(data), "--model", model, "--out", str(out), "-q", *extra]


def _metrics(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "metrics.json").read_text()))


def _run_info(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "run.json").read_text()))


def _watch_replicas(monkeypatch: pytest.MonkeyPatch) -> set[int]:
    """The pids of the replica processes that return blocks from now on (filled as they do)."""
    from mmrobust.distributed import pipeline

    pids: set[int] = set()
    real = pipeline.PipelineStats.saw

    def saw(self: Any, ip: str, node_id: str, actor: str, pid: int) -> None:
        pids.add(int(pid))
        real(self, ip, node_id, actor, pid)

    monkeypatch.setattr(pipeline.PipelineStats, "saw", saw)
    return pids


def _assert_replicas_gone(pids: set[int], timeout: float = 60.0) -> None:
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
def _when_rows(run: Path, n: int, action: Callable[[], None]) -> Iterator[list[bool]]:
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


@pytest.fixture(scope="module")
def serial_slow(real_tamper_set: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``SLOW`` on the real tamper set, serial: the reference of the fault tests."""
    out = tmp_path_factory.mktemp("serial-slow") / "run"
    _invoke(_eval(real_tamper_set, out, *SLOW))
    return out


@pytest.fixture(scope="module")
def serial_forensic(real_tamper_set: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The forensic detector on the real tamper set, serial (the reference of the Ray runs)."""
    out = tmp_path_factory.mktemp("serial-forensic") / "run"
    _invoke(_eval(real_tamper_set, out, "forensic", "--bootstrap", "200"))
    return out


def test_tamper_on_ray_is_byte_identical_to_the_serial_build(
    cluster: LoopbackCluster, real_clips: dict[str, Path], real_tamper_set: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ray-set"
    args = ["tamper", *map(str, real_clips.values()), "--out", str(out), *TAMPER_ARGS]
    result = _invoke([*args, *_ray_args(cluster, "--ray-resource", "accel=1")])
    assert "built on 2 node(s) (127.0.0.1: 4)" in result.output
    ours, theirs = _files(out), _files(real_tamper_set)
    assert sorted(ours) == sorted(theirs)
    assert len([f for f in ours if f.endswith(".mp4")]) == 24
    assert [f for f in ours if ours[f] != theirs[f]] == []


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs CPU affinity control and 2 CPUs",
)
def test_tamper_bytes_do_not_depend_on_the_cpus_of_the_driver_or_the_workers(
    cluster: LoopbackCluster, real_clips: dict[str, Path], tmp_path: Path
) -> None:
    """Encoder threads are pinned (``BuildConfig.threads``): a build with 2 CPUs, one with 1 and
    one on Ray from a 1-CPU driver (its workers have 2) give the same files. Before resume key
    v7 encoders took FFmpeg's automatic thread count, the 1-CPU build differed, and Ray tasks
    were restricted to the driver's CPU count to match it."""
    pair = [str(real_clips[n]) for n in ("carphone_pristine", "carphone_distorted")]
    builds = {name: tmp_path / name for name in ("all-cpus", "one-cpu", "ray-one-cpu")}
    _invoke(["tamper", *pair, *TAMPER_ARGS, "--out", str(builds["all-cpus"])])
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})  # the driver now has 1 CPU; the Ray workers have 2
    try:
        _invoke(["tamper", *pair, *TAMPER_ARGS, "--out", str(builds["one-cpu"])])
        args = ["tamper", *pair, *TAMPER_ARGS, "--out", str(builds["ray-one-cpu"])]
        _invoke([*args, *_ray_args(cluster)])
    finally:
        os.sched_setaffinity(0, cpus)
    one, ray_one = _files(builds["one-cpu"]), _files(builds["ray-one-cpu"])
    assert len(one) == 12 + 2 and one == ray_one == _files(builds["all-cpus"])


def test_eval_forensic_on_ray_equals_serial_and_writes_each_row_once(
    cluster: LoopbackCluster, real_tamper_set: Path, serial_forensic: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _invoke([*_eval(real_tamper_set, out, "forensic", "--bootstrap", "200"), *_ray_args(cluster)])
    assert _metrics(out) == _metrics(serial_forensic)
    info = _run_info(out)
    ex = info["executor"]
    assert (ex["name"], ex["replicas"], ex["n_nodes"], ex["nodes"]) == (
        "ray",
        2,
        2,
        {"127.0.0.1": 2},
    )
    assert ex["resources_per_replica"] == {"CPU": 1.0}
    assert (info["n_new"], info["n_rows"]) == (24, 24)  # 24 writes for 24 samples
    assert _run_info(serial_forensic)["executor"] == {"name": "serial"}
    rows, ref = stored_rows(out), stored_rows(serial_forensic)
    assert sorted(rows) == sorted(ref)
    for sid, row in rows.items():
        assert (row["status"], row["letter"], row["extra"]) == (
            ref[sid]["status"],
            ref[sid]["letter"],
            ref[sid]["extra"],
        )


def test_a_task_on_ray_computes_the_drivers_key_and_equals_serial(
    cluster: LoopbackCluster, real_tamper_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20: the replicas fold ``--task`` into the run key as the driver does. A light
    backend's key is the spec's: no probe replica is started for it (the replicas' rows are
    checked against the driver's key as they arrive)."""
    from mmrobust.distributed.pipeline import ReplicaPool

    def no_probe(*_a: object, **_k: object) -> None:
        raise AssertionError("a probe replica was started for a light backend")

    monkeypatch.setattr(ReplicaPool, "probe", no_probe)
    pids = _watch_replicas(monkeypatch)
    runs = {}
    for name, extra in (("serial", []), ("ray", _ray_args(cluster))):
        runs[name] = tmp_path / name
        args = _eval(real_tamper_set, runs[name], "constant:none", "--task", "type")
        _invoke([*args, "--bootstrap", "0", *extra])
    _assert_replicas_gone(pids)  # no replica outlives a run that ended normally
    assert _metrics(runs["ray"]) == _metrics(runs["serial"])
    assert _metrics(runs["ray"])["benchmark"] == "tamper-type"
    assert _run_info(runs["ray"])["key"] == _run_info(runs["serial"])["key"]


def test_eval_hf_replicas_on_simulated_gpus_equal_serial(
    cluster: LoopbackCluster, real_tamper_set: Path, tmp_path: Path
) -> None:
    pytest.importorskip("transformers")
    ckpt = build_tiny_idefics3(tmp_path / "tiny-idefics3", seed=1)
    common = ["--model-arg", "device=cpu", "--model-arg", "max_new_tokens=4"]
    common += ["--frames", "2", "--limit", "6", "--bootstrap", "0"]
    local, remote = tmp_path / "local", tmp_path / "ray"
    # The random checkpoint's replies match no option: every row is parse_fail, so both runs
    # end with exit 1 ("no sample could be scored") after writing their rows.
    for result in (
        _invoke([*_eval(real_tamper_set, local, f"hf:{ckpt}", *common)], code=1),
        _invoke([*_eval(real_tamper_set, remote, f"hf:{ckpt}", *common), *_ray_args(cluster)], 1),
    ):
        assert "no sample could be scored: 6 of 6 rows" in result.output
    assert _metrics(remote) == _metrics(local)
    ex = _run_info(remote)["executor"]
    # one replica per (declared) GPU, by default for hf: models
    assert (ex["replicas"], ex["n_nodes"], ex["resources_per_replica"]) == (
        2,
        2,
        {"CPU": 1.0, "GPU": 1.0},
    )
    rows, ref = stored_rows(remote), stored_rows(local)
    assert len(rows) == 6 and _run_info(remote)["n_new"] == 6
    for sid, row in rows.items():  # frames decoded on the workers: the same frames, same replies
        assert (row["raw_text"], row["frame_indices"]) == (
            ref[sid]["raw_text"],
            ref[sid]["frame_indices"],
        )


def _remove_a_replica_node(c: LoopbackCluster) -> None:
    """Kill (no graceful stop) a worker node that hosts an eval replica."""
    from ray._private import state

    for actor in state.actors().values():
        node_id = actor.get("Address", {}).get("NodeID")
        if "ReplicaStage" not in str(actor.get("ActorClassName")) or actor.get("State") != "ALIVE":
            continue
        node = next((n for n in c.cluster.worker_nodes if n.node_id == node_id), None)
        if node is not None:
            c.cluster.remove_node(node, allow_graceful=False)
            return
    raise AssertionError("no replica on a worker node")


def test_eval_survives_losing_a_node_mid_run(
    cluster: LoopbackCluster, real_tamper_set: Path, serial_slow: Path, tmp_path: Path
) -> None:
    cluster.add_node()  # 3 nodes for 2 replicas: one on a worker node, one slot spare
    out = tmp_path / "run"
    args = [*_eval(real_tamper_set, out, *SLOW), *_ray_args(cluster)]
    with _when_rows(out, 3, lambda: _remove_a_replica_node(cluster)) as fired:
        _invoke([*args, "--replicas", "2"])
    assert fired[0]
    info = _run_info(out)
    ex = info["executor"]
    assert ex["replica_failures"] >= 1, ex  # Ray restarted it and re-ran its block
    assert (info["n_new"], info["n_rows"]) == (24, 24)  # nothing lost, nothing written twice
    assert _metrics(out) == _metrics(serial_slow)


def test_ctrl_c_keeps_rows_and_the_same_command_resumes(
    cluster: LoopbackCluster,
    real_tamper_set: Path,
    serial_slow: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "run"
    pids = _watch_replicas(monkeypatch)
    args = [*_eval(real_tamper_set, out, *SLOW), *_ray_args(cluster)]
    args += ["--replicas", "2"]  # a node removed by the fault test may still count as alive
    with _when_rows(out, 4, _thread.interrupt_main) as fired:
        first = CliRunner().invoke(app, args)
    assert fired[0]
    assert first.exit_code == 130, first.output
    assert "interrupted" in first.output
    _assert_replicas_gone(pids)  # nor one stopped by Ctrl-C
    done = _run_info(out)
    assert done["interrupted"] and 4 <= done["n_new"] < 24
    assert _metrics(out)["complete"] is False
    _invoke(args)
    again = _run_info(out)
    assert again["n_new"] == 24 - done["n_new"]  # only the rest was asked
    assert _metrics(out) == _metrics(serial_slow)


def test_a_path_a_worker_cannot_see_fails_early_in_one_line(
    cluster: LoopbackCluster, real_clips: dict[str, Path], tmp_path: Path
) -> None:
    # /proc/self/fd/N is a path only this (driver) process has: what a worker without the
    # shared filesystem sees.
    fd = os.open(real_clips["carphone_pristine"], os.O_RDONLY)
    high = os.dup2(fd, 987)
    try:
        path = f"/proc/self/fd/{high}"
        assert Path(path).is_file()
        result = CliRunner().invoke(
            app, ["tamper", path, "--out", str(tmp_path / "set"), *_ray_args(cluster)]
        )
    finally:
        os.close(high)
        os.close(fd)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith(f"error: Ray worker on 127.0.0.1 cannot see {path};")
    assert "shared" in lines[-1]
    assert not (tmp_path / "set").exists()  # stopped before anything was written


def test_mmr_data_on_ray_writes_what_a_local_run_writes(
    cluster: LoopbackCluster, tmp_path: Path
) -> None:
    import cv2
    import numpy as np

    from tests.fake_openai_server import FakeOpenAIServer
    from tests.test_mmr_pipeline import COLOURS, responder

    folder = tmp_path / "imgs"
    folder.mkdir()
    for name, rgb in COLOURS.items():
        cv2.imwrite(str(folder / f"{name}.png"), np.full((32, 48, 3), rgb[::-1], np.uint8))
    (folder / "broken.jpg").write_bytes(b"not an image")
    outs = {}
    with FakeOpenAIServer(responder=responder) as server:  # on 127.0.0.1, asked by the replicas
        for name, extra in (("local", []), ("ray", [*_ray_args(cluster), "--replicas", "2"])):
            outs[name] = tmp_path / name
            args = ["mmr-data", str(folder), "--model", "openai:fake", "--pairs", "2"]
            args += ["--model-arg", f"base_url={server.base_url}", "--model-arg", "max_retries=0"]
            _invoke([*args, "--out", str(outs[name]), *extra])
    local, remote = _files(outs["local"]), _files(outs["ray"])
    assert sorted(local) == sorted(remote) and len(local) == 5 + 4  # 5 items + 4 outputs
    for name in local:
        if name != "summary.json":  # it names its own folder
            assert local[name] == remote[name], name
    summary = json.loads(remote["summary.json"])
    assert summary["statuses"] == {
        "ok": 2,
        "extraction_refused": 1,
        "parse_fail": 1,
        "media_error": 1,
    }


def test_an_unreachable_cluster_fails_at_once_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from ray._private import ray_constants

    # single-machine mode: Ray keeps 127.0.0.1 (the rewrite: tests/test_ray_address.py)
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    # data and a model that can run: both are checked before the cluster is contacted
    args = _eval(Path("mmr-demo"), tmp_path / "run", "constant:A")
    result = CliRunner().invoke(app, [*args, "--executor", "ray", "--ray-address", address])
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: cannot connect to Ray at {address}: Connection refused; "
        "is `ray start --head` running there (and the port open)?"
    )
    assert not (tmp_path / "run").exists()


def test_a_port_that_is_not_ray_fails_within_the_deadline_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27 item 9: a port that accepts connections but never answers (ray.init retried for
    10 minutes) is refused after ``CONNECT_TIMEOUT_S`` with one line."""
    import socket

    from ray._private import ray_constants

    from mmrobust.distributed import session

    monkeypatch.setattr(session, "CONNECT_TIMEOUT_S", 0.5)
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)  # Ray keeps 127.0.0.1
    accepted: list[socket.socket] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        address = f"127.0.0.1:{server.getsockname()[1]}"
        worker = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
        worker.start()
        src = tmp_path / "src"
        src.mkdir()
        args = ["tamper", str(src), "--out", str(tmp_path / "o"), "--executor", "ray"]
        result = CliRunner().invoke(app, [*args, "--ray-address", address])
        for conn in accepted:
            conn.close()
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"error: cannot connect to Ray at {address}: the port accepts connections but no Ray "
        "answers there within 0.5 s; give the address `ray start --head` printed"
    )
    assert not (tmp_path / "o").exists()


def test_a_node_lost_during_the_path_check_is_left_out(
    cluster: LoopbackCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27 item 9: a node listed, then gone before its probe runs (TaskUnschedulableError)."""
    from mmrobust.distributed import RayOptions, session

    listed = session.RaySession.candidate_nodes
    ghost = {"NodeID": "ab" * 28, "NodeManagerAddress": "10.9.9.9", "Alive": True}

    def with_ghost(self: Any, request: Any) -> list[dict[str, Any]]:
        return [*listed(self, request), ghost]

    monkeypatch.setattr(session.RaySession, "candidate_nodes", with_ghost)
    with session.ray_session(RayOptions(address=cluster.address)) as ray_session:
        checked = session.check_paths(ray_session, {"CPU": 1.0}, [str(tmp_path)], [str(tmp_path)])
    assert checked == 2  # the two real nodes; the lost one is left out, not a traceback


def test_a_replica_imports_only_what_its_model_needs(tmp_path: Path) -> None:
    """What a replica process of a text-only ``random:0`` eval imports on top of Ray (whose
    serializers import numpy, pyarrow and pydantic in every Ray process): no Ray Data, pandas,
    torch or transformers (Ray Data's import alone was seconds of CPU per replica and in the
    driver, on every run). Runs the replica's start-up in a fresh interpreter: its module, the
    spec unpickled as the actor receives it, the model loaded."""
    import pickle
    import subprocess
    import sys

    from mmrobust.distributed.replicas import ReplicaSpec
    from mmrobust.run.config import EvalConfig

    cfg = EvalConfig(data="x", model="random:0", out=str(tmp_path / "run"), text_only=True)
    spec = ReplicaSpec(model="random:0", model_args={}, cwd=str(tmp_path), eval_config=cfg)
    (tmp_path / "spec.pkl").write_bytes(pickle.dumps(spec))
    code = (
        "import pickle, sys\n"
        "from mmrobust.distributed.pipeline import ReplicaStage\n"
        "import ray\n"
        "from mmrobust.distributed.replicas import Replica\n"
        f"spec = pickle.loads(open({str(tmp_path / 'spec.pkl')!r}, 'rb').read())\n"
        "replica = Replica(spec)\n"
        "assert replica.error is None, replica.error\n"
        "heavy = ('ray.data', 'pandas', 'torch', 'transformers', 'sklearn', 'matplotlib')\n"
        "print(sorted(m for m in sys.modules if m in heavy))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_more_replicas_than_fit_fails_before_starting_any(
    cluster: LoopbackCluster, real_tamper_set: Path, tmp_path: Path
) -> None:
    args = _eval(real_tamper_set, tmp_path / "run", "forensic")
    result = CliRunner().invoke(app, [*args, *_ray_args(cluster, "--replicas", "9")])
    assert result.exit_code == 2
    line = result.output.strip()
    assert line.startswith(
        "error: 9 replica(s) of CPU=1 each do not fit in the Ray cluster (room for "
    )
    assert line.endswith("lower --replicas or the per-worker resources")


def test_an_openai_model_on_ray_keys_the_run_like_a_local_run(
    cluster: LoopbackCluster, real_tamper_set: Path, tmp_path: Path
) -> None:
    """Issue 27 item 1: the driver keyed the run with the default frame encoding (JPEG q95,
    full size) while the replicas' OpenAI backend sends q90 at most 1024 px: every
    ``--executor ray --model openai:`` run exited 1 with "another run key"."""
    from tests.fake_openai_server import FakeOpenAIServer

    runs = {}
    with FakeOpenAIServer() as server:  # answers "A"; on 127.0.0.1, asked by the replicas
        model_args = ["--model-arg", f"base_url={server.base_url}", "--model-arg", "max_retries=0"]
        for name, extra in (("local", []), ("ray", _ray_args(cluster))):
            runs[name] = tmp_path / name
            args = _eval(
                real_tamper_set, runs[name], "openai:fake", "--frames", "4", "--limit", "6"
            )
            _invoke([*args, *model_args, "--bootstrap", "50", *extra])
        n_requests = len(server.chat_requests)
        local, remote = _run_info(runs["local"]), _run_info(runs["ray"])
        a, b = _metrics(runs["local"]), _metrics(runs["ray"])
        # the ray run resumes locally: same key, nothing asked again
        again = _invoke([*_eval(real_tamper_set, runs["ray"], "openai:fake", "--frames", "4"),
                         "--limit", "6", *model_args, "--bootstrap", "50"])  # fmt: skip
        assert "0 new rows, 6 resumed" in again.output
        assert len(server.chat_requests) == n_requests == 12
    assert remote["key"] == local["key"]
    assert remote["executor"]["name"] == "ray"
    assert remote["run"]["frame_encoding"] == "JPEG q90, longer side <= 1024 px"
    assert a == b


def _same_rows(run: Path, ref: Path) -> None:
    """The stored rows of ``run`` equal ``ref``'s, column by column, less timestamps and
    latencies."""
    rows, want = stored_rows(run), stored_rows(ref)
    assert sorted(rows) == sorted(want)
    for sid, row in rows.items():
        for column, value in row.items():
            if column not in ("created_at", "latency_s"):
                assert value == want[sid][column], (sid, column)


def _same_run(run: Path, ref: Path) -> None:
    """Equal rows, and ``metrics.json`` equal less the executor block (issue 29)."""
    _same_rows(run, ref)
    ours, theirs = _metrics(run), _metrics(ref)
    assert ours == theirs
    info = _run_info(run)
    assert info["n_rows"] == len(stored_rows(ref))


@pytest.mark.parametrize("backend", ["random-frames", "openai"])
def test_eval_on_ray_equals_serial_row_for_row(
    cluster: LoopbackCluster, real_tamper_set: Path, tmp_path: Path, backend: str
) -> None:
    """Issue 29: ``random`` with frames (decoded on the replicas) and ``openai:`` against the
    loopback fake server (the replicas send the requests), each equal to a serial run."""
    from tests.fake_openai_server import FakeOpenAIServer, Reply

    def answer(request: Any) -> Reply:  # a letter that depends on what was sent
        return Reply.ok("AB"[len(request.image_urls) % 2] + " because")

    with FakeOpenAIServer(responder=answer) as server:
        extra = ["--frames", "3", "--bootstrap", "50", "--limit", "12"]
        if backend == "openai":
            model = "openai:fake"
            extra += ["--model-arg", f"base_url={server.base_url}", "--model-arg", "max_retries=0"]
        else:
            model = "random:7"
        runs = {}
        for name, more in (("serial", []), ("ray", _ray_args(cluster, "--replicas", "2"))):
            runs[name] = tmp_path / name
            _invoke([*_eval(real_tamper_set, runs[name], model, *extra), *more])
        if backend == "openai":
            assert len(server.chat_requests) == 2 * 12
            assert {len(r.image_urls) for r in server.chat_requests} == {3}
    _same_run(runs["ray"], runs["serial"])
    ex = _run_info(runs["ray"])["executor"]
    assert (ex["name"], ex["replicas"], ex["dispatch"]) == (
        "ray",
        2,
        "ray actors (one per replica, blocks of items)",
    )


def _kill_a_replica_process() -> None:
    """SIGKILL the process of one live eval replica (Ray restarts it: a new process)."""
    import signal

    from ray._private import state

    for actor in state.actors().values():
        alive = actor.get("State") == "ALIVE" and actor.get("Pid")
        if "ReplicaStage" in str(actor.get("ActorClassName")) and alive:
            os.kill(int(actor["Pid"]), signal.SIGKILL)
            return
    raise AssertionError("no live replica")


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
    args = [*_eval(real_tamper_set, out, *SLOW), *_ray_args(cluster)]
    pids = _watch_replicas(monkeypatch)
    with _when_rows(out, 2, _kill_a_replica_process) as fired:
        _invoke([*args, "--replicas", "2"])
    assert fired[0]
    _assert_replicas_gone(pids)
    info = _run_info(out)
    assert (info["n_new"], info["n_rows"]) == (24, 24)
    assert info["executor"]["replica_failures"] >= 1, info["executor"]
    _same_run(out, serial_slow)


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
    args = [*_eval(real_tamper_set, out, *SLOW), *_ray_args(cluster)]
    args += ["--replicas", "2"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-c", "from mmrobust.cli import app; app()", *args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with _when_rows(out, 1, lambda: proc.send_signal(signal.SIGKILL)) as fired:
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
    _invoke(args)
    assert _run_info(out)["n_new"] == 24 - kept  # only the rest was asked
    _same_run(out, serial_slow)


def test_ray_workers_load_the_plugins(cluster: LoopbackCluster, tmp_path: Path) -> None:
    """The plugin package of docs/extending.md, installed in a folder that only the driver has
    on ``PYTHONPATH`` (the nodes started without it): its family, backend and effect work on
    the workers, which find it by the forwarded ``PYTHONPATH`` and load it before any work
    (``tests/plugin_package.py``; each command in a fresh interpreter)."""
    site = install_site(tmp_path / "site")
    data = write_pope_data(tmp_path / "pope")
    ray_args = ["--executor", "ray", "--ray-address", cluster.address]
    out = tmp_path / "ray-run"
    mmrobust(site, "eval", "--data", str(data), "--model", "yesno:A", "--out", str(out),
             "--bootstrap", "0", "-q", *ray_args)  # fmt: skip
    info = json.loads((out / "run.json").read_text())
    assert (info["executor"]["name"], info["n_rows"]) == ("ray", 4)
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["benchmark"], metrics["accuracy"], metrics["error_rate"]) == ("pope", 0.75, 0.0)
    assert metrics["parse_fail_rate"] == 0.0  # each question answered with its image shown

    clip = make_synthetic_video(tmp_path / "clip.mp4", 40)
    built = tmp_path / "set"
    mmrobust(site, "tamper", str(clip), "--out", str(built), "--effects", "posterize",
             "--preset", "ultrafast", "-q", *ray_args)  # fmt: skip
    kinds = [json.loads(x)["tamper_type"] for x in (built / "manifest.jsonl").open()]
    assert sorted(kinds) == ["original", "posterize"]


def test_perturb_on_ray_is_byte_identical_to_the_serial_build(
    cluster: LoopbackCluster, real_clips: dict[str, Path], tmp_path: Path
) -> None:
    from tests.test_perturb import _short_clip, _tiny_set

    data = _tiny_set(tmp_path)  # a photo, a corrupt photo, a text-only question
    (tmp_path / "clip").mkdir()
    clip_data = _short_clip(real_clips, tmp_path / "clip")  # 20 frames of carphone
    data.write_text(data.read_text() + clip_data.read_text())
    args = ["perturb", str(data), "--effects", "box_mask,gaussian_noise", "--severity", "1"]
    _invoke([*args, "--out", str(tmp_path / "local")], code=1)  # the corrupt photo
    _invoke([*args, "--out", str(tmp_path / "ray"), *_ray_args(cluster)], code=1)
    local, remote = _files(tmp_path / "local"), _files(tmp_path / "ray")
    assert sorted(local) == sorted(remote)
    for name in local:
        assert local[name] == remote[name], name
    # a + clip: clean + 2 effects each = 6 files, the corrupt photo's 3 failed
    assert sum(n.startswith("media/") for n in local) == 6
    assert len(local["errors.jsonl"].splitlines()) == 3


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
            _when_rows(out, 6, kill_the_replica) as first,
            _when_rows(out, 12, lambda: os.killpg(proc.pid, signal.SIGINT)) as second,
        ):
            output = proc.communicate(timeout=600)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(temp, ignore_errors=True)
    assert first[0] and second[0] and killed, output
    assert proc.returncode == 130, output
    info = _run_info(out)
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
