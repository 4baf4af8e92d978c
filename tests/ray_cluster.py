"""A small multi-node Ray cluster on 127.0.0.1, for ``tests/test_ray.py`` and ``benchmarks/ray_scaling.py``.

Built with Ray's own test utilities (``ray.cluster_utils.Cluster``): every
node is a real raylet with its own worker processes, one CPU each by
default, a small object store, and one GPU *declared* (GPUs simulated on a
GPU-less machine: Ray schedules on the resource; code asks for
``device=cpu``) plus a custom resource ``accel``. The head runs no
dashboard, autoscaler monitor or log monitor. Ray normally swaps 127.0.0.1
for the host's network address; the environment below keeps every address
on loopback. The GCS health-checks each raylet every 0.5 s and declares a
node dead after 3 failed checks in a row (``SYSTEM_CONFIG``; Ray's defaults, 3 s
and 5, left a killed node "alive" for about 15 s, which the node-loss test
waited out); each check still has Ray's 10 s timeout, so a busy but live
raylet is not declared dead. Ray's usage statistics are off
(``RAY_USAGE_STATS_ENABLED=0``: nothing to report from a test machine, and Ray Data starts
no usage-collection actor). On exit every Ray process started is stopped, and
the exit fails if one is still alive or the GCS port still answers.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

NODE: dict[str, Any] = {
    "num_cpus": 1,
    "num_gpus": 1,
    "object_store_memory": 80 * 2**20,
    "node_ip_address": "127.0.0.1",
    "resources": {"accel": 1},
}

SYSTEM_CONFIG: dict[str, Any] = {
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
}
"""The head's ``_system_config`` (every node of the cluster reads it from the GCS)."""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _port_open(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, int(port))) == 0


START_ATTEMPTS = 3
"""Starts of a cluster tried before a test fails (only on Ray's node-startup timeout)."""


def _kill_processes_naming(folder: str) -> None:
    """Kill the Ray processes of a failed start: those whose command line names ``folder``
    (each node's session folder lies under the cluster's own temporary folder)."""
    import psutil

    mine = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(folder in part for part in proc.info["cmdline"] or ()):
                proc.kill()
                mine.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    psutil.wait_procs(mine, timeout=10)


class LoopbackCluster:
    """``with LoopbackCluster(nodes=2) as c:`` ... ``c.address``, ``c.add_node()``, ``c.cluster``."""

    def __init__(self, nodes: int = 2, **node: Any) -> None:
        self.n_nodes = nodes
        self.node = {**NODE, **node}
        self.cluster: Any = None
        self._env: dict[str, str | None] = {}
        self._temp = ""

    @property
    def address(self) -> str:
        """``127.0.0.1:<GCS port>``: what ``--ray-address`` takes."""
        return str(self.cluster.address)

    def add_node(self, **overrides: Any) -> Any:
        """Start one more worker node (``NODE`` settings, ``overrides`` on top)."""
        return self.cluster.add_node(**{**self.node, "temp_dir": self._temp, **overrides})

    def __enter__(self) -> LoopbackCluster:
        import ray._private.ray_constants as ray_constants
        from ray.cluster_utils import Cluster

        for key, value in (
            ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0"),
            ("RAY_ADDRESS", None),
            ("RAY_USAGE_STATS_ENABLED", "0"),  # no usage reports, no Ray Data usage actor
        ):
            self._env[key] = os.environ.get(key)
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._constant = ray_constants.ENABLE_RAY_CLUSTER
        ray_constants.ENABLE_RAY_CLUSTER = False  # read at call time by the driver in this process
        self._temp = tempfile.mkdtemp(prefix="mmr-ray-")  # short: socket paths have a length limit
        # Ray writes the cluster's address to <RAY_TMPDIR>/ray/ray_current_cluster whatever the
        # nodes' temp_dir; keep it in our folder (a fresh machine has no /tmp/ray).
        self._env["RAY_TMPDIR"] = os.environ.get("RAY_TMPDIR")
        os.environ["RAY_TMPDIR"] = self._temp
        Path(self._temp, "ray").mkdir()
        head = {**self.node, "temp_dir": self._temp, "include_dashboard": False}
        head.update(no_monitor=True, include_log_monitor=False, _system_config=SYSTEM_CONFIG)
        for attempt in range(1, START_ATTEMPTS + 1):
            cluster = None
            try:
                cluster = self.cluster = Cluster(initialize_head=True, head_node_args=head)
                for _ in range(self.n_nodes - 1):
                    self.add_node()
                return self
            except Exception as error:
                # Ray waits a fixed 30 s for a new raylet to register with the GCS
                # (ray/_private/node.py); on a loaded 2-core machine it can miss that: start
                # the cluster again, after ending what this attempt started.
                if "timed out during startup" not in str(error) or attempt == START_ATTEMPTS:
                    raise
                if cluster is not None:
                    cluster.shutdown()
                _kill_processes_naming(self._temp)
                print(f"ray_cluster: start attempt {attempt} timed out; starting again")
        raise AssertionError("unreachable")

    def __exit__(self, *exc: object) -> None:
        import ray._private.ray_constants as ray_constants

        c = self.cluster
        pids = [
            p.process.pid
            for n in [c.head_node, *c.worker_nodes]
            for procs in n.all_processes.values()
            for p in procs
        ]
        address = c.address
        c.shutdown()
        ray_constants.ENABLE_RAY_CLUSTER = self._constant
        for key, value in self._env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(self._temp, ignore_errors=True)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [p for p in pids if _alive(p)]
        if left:
            raise AssertionError(f"Ray processes left running: {left}")
        if _port_open(address):
            raise AssertionError(f"Ray's GCS port {address} still open")


__all__ = ["NODE", "SYSTEM_CONFIG", "LoopbackCluster"]
