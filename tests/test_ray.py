"""``--executor ray`` on a real two-node Ray cluster started on 127.0.0.1 inside the test.

The cluster comes from Ray's own test utilities (``ray.cluster_utils.Cluster``):
a head node and a worker node, one CPU each, each with one GPU declared (a
GPU-less machine simulating GPUs: Ray schedules on the declared ``GPU``
resource; the tiny ``hf:`` model runs on ``device=cpu``) and a custom
resource ``accel``. Every check compares with the local (serial) path:
the tamper build byte for byte, each row written once. Every backend kind on Ray
against serial (the forensic detector and a tiny random Idefics3 checkpoint on two replicas
among them) is a cell of ``tests/test_crossings.py``. The fault and
interrupt tests (a node removed, a replica or the driver killed, Ctrl-C) are in
``tests/test_ray_faults.py``, which runs on its own worker and cluster under
pytest-xdist; the helpers both files use are ``tests/ray_runs.py``. The cluster is the session's
(``conftest.ray_cluster``), put back to its two nodes after each test; at the
end of the session every Ray process it started is stopped and its ports are
checked closed.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.plugin_package import install_site, mmrobust, write_pope_data
from tests.ray_cluster import LoopbackCluster
from tests.ray_runs import (
    assert_replicas_gone,
    eval_argv,
    invoke,
    metrics_of,
    on_ray,
    run_info_of,
    same_run,
    tree_bytes,
    watch_replicas,
)
from tests.synth import make_synthetic_video

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")

pytestmark = [pytest.mark.slow, pytest.mark.ray]


TAMPER_ARGS = [
    *("--effects", "dropping,masking,rotation,substitution,repetition"),
    *("--position", "middle", "--duration", "1", "--codec-control", "--seed", "0"),
    *("--preset", "ultrafast"),
]
"""The options of ``conftest.real_tamper_set`` (the serial build compared with)."""


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs CPU affinity control and 2 CPUs",
)
def test_tamper_bytes_do_not_depend_on_the_cpus_of_the_driver_or_the_workers(
    cluster: LoopbackCluster, real_clips: dict[str, Path], tmp_path: Path
) -> None:
    """Encoder threads are pinned (``BuildConfig.threads``): a build with 2 CPUs, one with 1 and
    one on Ray from a 1-CPU driver (its workers have 2; one source per node, each task asking
    for the custom resource ``accel``) give the same files, byte for byte. Before resume key
    v7 encoders took FFmpeg's automatic thread count, the 1-CPU build differed, and Ray tasks
    were restricted to the driver's CPU count to match it."""
    pair = [str(real_clips[n]) for n in ("carphone_pristine", "carphone_distorted")]
    builds = {name: tmp_path / name for name in ("all-cpus", "one-cpu", "ray-one-cpu")}
    invoke(["tamper", *pair, *TAMPER_ARGS, "--out", str(builds["all-cpus"])])
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})  # the driver now has 1 CPU; the Ray workers have 2
    try:
        invoke(["tamper", *pair, *TAMPER_ARGS, "--out", str(builds["one-cpu"])])
        args = ["tamper", *pair, *TAMPER_ARGS, "--out", str(builds["ray-one-cpu"])]
        result = invoke([*args, *on_ray(cluster, "--ray-resource", "accel=1")])
        assert "built on 2 node(s) (127.0.0.1: 2)" in result.output
    finally:
        os.sched_setaffinity(0, cpus)
    one, ray_one = tree_bytes(builds["one-cpu"]), tree_bytes(builds["ray-one-cpu"])
    assert len(one) == 12 + 2 and one == ray_one == tree_bytes(builds["all-cpus"])


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
    pids = watch_replicas(monkeypatch)
    runs = {}
    for name, extra in (("serial", []), ("ray", on_ray(cluster))):
        runs[name] = tmp_path / name
        args = eval_argv(real_tamper_set, runs[name], "constant:none", "--task", "type")
        invoke([*args, "--bootstrap", "0", *extra])
    assert_replicas_gone(pids)  # no replica outlives a run that ended normally
    assert metrics_of(runs["ray"]) == metrics_of(runs["serial"])
    assert metrics_of(runs["ray"])["benchmark"] == "tamper-type"
    assert run_info_of(runs["ray"])["key"] == run_info_of(runs["serial"])["key"]


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
            app, ["tamper", path, "--out", str(tmp_path / "set"), *on_ray(cluster)]
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
        for name, extra in (("local", []), ("ray", [*on_ray(cluster), "--replicas", "2"])):
            outs[name] = tmp_path / name
            args = ["mmr-data", str(folder), "--model", "openai:fake", "--pairs", "2"]
            args += ["--model-arg", f"base_url={server.base_url}", "--model-arg", "max_retries=0"]
            invoke([*args, "--out", str(outs[name]), *extra])
    local, remote = tree_bytes(outs["local"]), tree_bytes(outs["ray"])
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
    args = eval_argv(Path("mmr-demo"), tmp_path / "run", "constant:A")
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
    args = eval_argv(real_tamper_set, tmp_path / "run", "forensic")
    result = CliRunner().invoke(app, [*args, *on_ray(cluster, "--replicas", "9")])
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
        for name, extra in (("local", []), ("ray", on_ray(cluster))):
            runs[name] = tmp_path / name
            args = eval_argv(
                real_tamper_set, runs[name], "openai:fake", "--frames", "4", "--limit", "6"
            )
            invoke([*args, *model_args, "--bootstrap", "50", *extra])
        n_requests = len(server.chat_requests)
        local, remote = run_info_of(runs["local"]), run_info_of(runs["ray"])
        a, b = metrics_of(runs["local"]), metrics_of(runs["ray"])
        # the ray run resumes locally: same key, nothing asked again
        again = invoke([*eval_argv(real_tamper_set, runs["ray"], "openai:fake", "--frames", "4"),
                         "--limit", "6", *model_args, "--bootstrap", "50"])  # fmt: skip
        assert "0 new rows, 6 resumed" in again.output
        assert len(server.chat_requests) == n_requests == 12
    assert remote["key"] == local["key"]
    assert remote["executor"]["name"] == "ray"
    assert remote["run"]["frame_encoding"] == "JPEG q90, longer side <= 1024 px"
    assert a == b


def test_two_openai_replicas_equal_serial_row_for_row(
    cluster: LoopbackCluster, real_tamper_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29: ``openai:`` on two replicas against the loopback fake server (the replicas send
    the requests, side by side) equals a serial run. (Every backend kind on Ray against serial,
    frames decoded on the replicas, on both nodes: ``tests/test_crossings.py``.) The replicas,
    one on each node, checked the media paths themselves: no probe task was needed."""
    from mmrobust.distributed import eval as ray_eval
    from tests.fake_openai_server import FakeOpenAIServer, Reply

    by_task: list[int] = []

    def check_paths(*args: Any, **kwargs: Any) -> int:
        by_task.append(session_check(*args, **kwargs))
        return by_task[-1]

    session_check = ray_eval.check_paths
    monkeypatch.setattr(ray_eval, "check_paths", check_paths)

    def answer(request: Any) -> Reply:  # a letter that depends on what was sent
        return Reply.ok("AB"[len(request.image_urls) % 2] + " because")

    with FakeOpenAIServer(responder=answer) as server:
        extra = ["--frames", "3", "--bootstrap", "50", "--limit", "12"]
        model = "openai:fake"
        extra += ["--model-arg", f"base_url={server.base_url}", "--model-arg", "max_retries=0"]
        runs = {}
        for name, more in (("serial", []), ("ray", on_ray(cluster, "--replicas", "2"))):
            runs[name] = tmp_path / name
            invoke([*eval_argv(real_tamper_set, runs[name], model, *extra), *more])
        assert len(server.chat_requests) == 2 * 12
        assert {len(r.image_urls) for r in server.chat_requests} == {3}
    same_run(runs["ray"], runs["serial"])
    ex = run_info_of(runs["ray"])["executor"]
    assert (ex["name"], ex["replicas"], ex["dispatch"]) == (
        "ray",
        2,
        "ray actors (one per replica, blocks of items)",
    )
    assert ex["n_nodes"] == 2 and by_task == [0]  # both nodes checked by their replica


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
    invoke([*args, "--out", str(tmp_path / "local")], code=1)  # the corrupt photo
    invoke([*args, "--out", str(tmp_path / "ray"), *on_ray(cluster)], code=1)
    local, remote = tree_bytes(tmp_path / "local"), tree_bytes(tmp_path / "ray")
    assert sorted(local) == sorted(remote)
    for name in local:
        assert local[name] == remote[name], name
    # a + clip: clean + 2 effects each = 6 files, the corrupt photo's 3 failed
    assert sum(n.startswith("media/") for n in local) == 6
    assert len(local["errors.jsonl"].splitlines()) == 3
