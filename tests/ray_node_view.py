"""A Ray node with its own view of the filesystem: some folders are empty on it alone.

What a cluster node with a missing or empty data mount sees, on one machine:
the node's raylet (and so every worker process it starts) runs in its own
mount namespace (``unshare -m``; ``unshare -rm`` where the user is not root),
where an empty ``tmpfs`` is mounted over each folder of ``hide``. The driver
and the other nodes still see the files. The node joins a
``tests/ray_cluster.LoopbackCluster`` with the same settings as its other
nodes (``ray._private.node.Node``, as ``Cluster.add_node`` starts one) plus
the resources given.

    with HidingNode(cluster, hide=[data / "videos" / "clip1"]) as node:
        ...  # node.node_id, node.pids

Run as ``python -m tests.ray_node_view ARGS_JSON`` inside the namespace (by
``HidingNode``): it mounts, starts the node, prints ``{"node_id", "pids"}``
and keeps the node up until its stdin closes or it gets SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_UNSHARE: list[str] | None = None


def unshare_prefix() -> list[str] | None:
    """``unshare`` arguments that give a new mount namespace here, or ``None`` (cannot)."""
    global _UNSHARE
    if _UNSHARE is None:
        _UNSHARE = []
        exe = shutil.which("unshare")
        with tempfile.TemporaryDirectory() as folder:
            for prefix in ([exe, "-m"], [exe, "-rm"]) if exe else ():
                probe = [*prefix, "mount", "-t", "tmpfs", "-o", "size=1m", "none", folder]
                try:
                    ok = subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
                except (OSError, subprocess.TimeoutExpired):
                    ok = False
                if ok:
                    _UNSHARE = prefix
                    break
    return _UNSHARE or None


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


class HidingNode:
    """One extra node of ``cluster`` on which the folders of ``hide`` are empty (see module).

    Args:
        cluster: a started ``LoopbackCluster``.
        hide: folders (they must exist) to show empty on this node.
        resources: custom resources of the node (on top of the cluster's node settings).
    """

    def __init__(
        self, cluster: Any, hide: list[Path], resources: dict[str, float] | None = None
    ) -> None:
        self.cluster = cluster
        self.hide = [str(Path(h).resolve()) for h in hide]
        self.resources = {**cluster.node.get("resources", {}), **(resources or {})}
        self.proc: subprocess.Popen[str] | None = None
        self.node_id = ""
        self.pids: list[int] = []

    def __enter__(self) -> HidingNode:
        prefix = unshare_prefix()
        if prefix is None:
            raise RuntimeError("no mount namespace here (unshare -m / -rm refused)")
        node = {k: v for k, v in self.cluster.node.items() if k != "resources"}
        args = {
            "node": {**node, "resources": self.resources},
            "gcs_address": self.cluster.cluster.gcs_address,
            "temp_dir": self.cluster._temp,
            "hide": self.hide,
        }
        root = str(Path(__file__).resolve().parents[1])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
        }
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "tests.ray_node_view", json.dumps(args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=root,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=30)
            raise RuntimeError(f"the hiding node did not start (exit {self.proc.returncode})")
        started = json.loads(line)
        self.node_id, self.pids = started["node_id"], started["pids"]
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while any(_alive(p) for p in self.pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in self.pids:  # whatever did not stop with the node
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _serve(args: dict[str, Any]) -> None:
    """Inside the namespace: mount, start the node, report, wait."""
    for folder in args["hide"]:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "none", folder], check=True)
    import ray._private.ray_constants as ray_constants
    from ray._private.node import Node
    from ray._private.parameter import RayParams
    from ray._private.services import wait_for_node

    from tests.ray_cluster import START_TIMEOUT_S, patient_start

    ray_constants.ENABLE_RAY_CLUSTER = False  # keep every address on 127.0.0.1, as the cluster
    os.environ["RAY_TMPDIR"] = args["temp_dir"]
    params = RayParams(
        **args["node"],
        temp_dir=args["temp_dir"],
        gcs_address=args["gcs_address"],
        include_log_monitor=False,
        node_manager_port=0,
        min_worker_port=0,
        max_worker_port=0,
    )
    params.dashboard_agent_listen_port = None
    with patient_start():  # Ray's 30 s waits, raised as for the cluster's own nodes
        node = Node(params, head=False, shutdown_at_exit=True, spawn_reaper=True)
        wait_for_node(node.gcs_address, node.plasma_store_socket_name, START_TIMEOUT_S)
    pids = [p.process.pid for procs in node.all_processes.values() for p in procs]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # atexit stops the node's processes
    print(json.dumps({"node_id": node.unique_id, "pids": pids}), flush=True)
    sys.stdin.read()  # until the test closes it (or dies)


if __name__ == "__main__":
    _serve(json.loads(sys.argv[1]))


__all__ = ["HidingNode", "unshare_prefix"]
