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

Start-up is patient: Ray waits a fixed 30 s for a new node to register with the
GCS (``ray/_private/node.py``, ``Cluster._wait_for_node``) and for the GCS port,
which a loaded machine misses; here every one of those waits is
``START_TIMEOUT_S``, and a worker process has as long to register. A start that
still does not finish raises :class:`ClusterStartError` (the machine's, not the
code's). ``SharedCluster`` is the one cluster of a test session
(``conftest.ray_cluster``): started on first use, reset to its two nodes after
each test, reported once when it cannot start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

NODE: dict[str, Any] = {
    "num_cpus": 1,
    "num_gpus": 1,
    "object_store_memory": 80 * 2**20,
    "node_ip_address": "127.0.0.1",
    "resources": {"accel": 1},
}

START_TIMEOUT_S = 300.0
"""Seconds a node may take to start and register with the GCS (Ray's own waits are 30 s)."""

SYSTEM_CONFIG: dict[str, Any] = {
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
    # a busy but live raylet answers late, not never: a dead one refuses at once
    "health_check_timeout_ms": 30_000,
    "worker_register_timeout_seconds": int(START_TIMEOUT_S),
}
"""The head's ``_system_config`` (every node of the cluster reads it from the GCS)."""


class ClusterStartError(RuntimeError):
    """The loopback cluster did not start within ``START_TIMEOUT_S``: the machine is too busy
    (or cannot run Ray), which says nothing about mmrobust."""


@contextlib.contextmanager
def patient_start(timeout_s: float = START_TIMEOUT_S) -> Iterator[None]:
    """Within the block, Ray's node start-up waits up to ``timeout_s`` (not 30 s) for the
    GCS port and for the new raylet to register (``ray._private.services.get_node`` is retried
    until then; ``node.py`` gives up 30 s after its first failure)."""
    import ray._private.services as services

    get_node = services.get_node

    def patient_get_node(gcs_address: str, node_id: str) -> Any:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return get_node(gcs_address, node_id)
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    key = "RAY_gcs_server_port_wait_time_s"
    before = os.environ.get(key)
    os.environ[key] = str(int(timeout_s))
    services.get_node = patient_get_node
    try:
        yield
    finally:
        services.get_node = get_node
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before


def _timed_out(error: BaseException) -> bool:
    text = str(error).lower()
    return isinstance(error, TimeoutError) or "timed out" in text or "timeout" in text


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
        with patient_start():
            return self.cluster.add_node(**{**self.node, "temp_dir": self._temp, **overrides})

    def __enter__(self) -> LoopbackCluster:
        import ray._private.ray_constants as ray_constants
        from ray.cluster_utils import Cluster

        class PatientCluster(Cluster):  # type: ignore[misc]
            def _wait_for_node(self, node: Any, timeout: float = START_TIMEOUT_S) -> None:
                super()._wait_for_node(node, max(timeout, START_TIMEOUT_S))

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
        try:
            with patient_start():
                self.cluster = PatientCluster(initialize_head=True, head_node_args=head)
                for _ in range(self.n_nodes - 1):
                    self.cluster.add_node(**{**self.node, "temp_dir": self._temp})
        except Exception as error:
            self._abandon()
            if _timed_out(error):
                raise ClusterStartError(
                    f"a {self.n_nodes}-node Ray cluster on 127.0.0.1 did not start within "
                    f"{START_TIMEOUT_S:g} s ({type(error).__name__}: {error})"
                ) from error
            raise
        return self

    def _abandon(self) -> None:
        """After a failed start: stop what it started, put the environment back."""
        import ray._private.ray_constants as ray_constants

        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.shutdown()
        _kill_processes_naming(self._temp)
        ray_constants.ENABLE_RAY_CLUSTER = self._constant
        self._restore_env()
        shutil.rmtree(self._temp, ignore_errors=True)
        self.cluster = None

    def _restore_env(self) -> None:
        for key, value in self._env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def reset(self) -> None:
        """Back to ``nodes`` live nodes after a test added or removed some: extra worker nodes
        stopped, missing ones started, and the GCS seen to agree (a killed node marked dead)."""
        c = self.cluster
        while len(c.worker_nodes) + 1 > self.n_nodes:
            c.remove_node(sorted(c.worker_nodes, key=lambda n: n.unique_id)[-1])
        while len(c.worker_nodes) + 1 < self.n_nodes:
            self.add_node()
        c.wait_for_nodes(timeout=START_TIMEOUT_S)

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
        self._restore_env()
        shutil.rmtree(self._temp, ignore_errors=True)
        deadline = time.monotonic() + 60  # a condition, not a pause: a busy machine is slower
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [p for p in pids if _alive(p)]
        if left:
            raise AssertionError(f"Ray processes left running: {left}")
        if _port_open(address):
            raise AssertionError(f"Ray's GCS port {address} still open")


class SharedCluster:
    """The one loopback cluster of a test session, started on first use (``get``).

    Attribute access is passed to the started ``LoopbackCluster`` (``shared.address``), so a
    test or fixture can hold this object before the cluster exists. When the cluster cannot
    start (``ClusterStartError``), the first test that asks fails with the reason if
    ``strict`` (``MMROBUST_TEST_RAY=required``), else skips with it; every later one skips with
    the same reason, so the machine's failure is reported once, not once per test.
    """

    def __init__(self, nodes: int = 2, *, strict: bool = False) -> None:
        self.nodes = nodes
        self.strict = strict
        self._cluster: LoopbackCluster | None = None
        self._failure = ""
        self._reported = False

    @property
    def started(self) -> bool:
        return self._cluster is not None

    def get(self) -> LoopbackCluster:
        """The started cluster (started now on first use); skips or fails as said above."""
        import pytest

        if self._cluster is None and not self._failure:
            cluster = LoopbackCluster(nodes=self.nodes)
            try:
                with pytest.MonkeyPatch.context() as patch:
                    patch.setenv("HF_HUB_OFFLINE", "1")  # inherited by the nodes' workers
                    self._cluster = cluster.__enter__()
            except ClusterStartError as error:
                self._failure = f"{error}: the machine is too busy or cannot run Ray"
        if self._cluster is not None:
            return self._cluster
        first, self._reported = not self._reported, True
        if first and self.strict:
            pytest.fail(self._failure, pytrace=False)
        pytest.skip(self._failure if first or not self.strict else f"{self._failure} (above)")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.get(), name)

    def reset(self) -> None:
        """Back to ``nodes`` live nodes (``LoopbackCluster.reset``), if started."""
        if self._cluster is not None:
            self._cluster.reset()

    def stop(self) -> None:
        """Stop every process of the cluster (and check that none is left), if started."""
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.__exit__(None, None, None)


__all__ = [
    "NODE",
    "START_TIMEOUT_S",
    "SYSTEM_CONFIG",
    "ClusterStartError",
    "LoopbackCluster",
    "SharedCluster",
    "patient_start",
]
