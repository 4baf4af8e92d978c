"""``--ray-address 127.0.0.1:PORT`` where Ray rewrites the address (no cluster is started).

Unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, ``ray.init`` replaces a loopback host by this
machine's outward address; a cluster bound to loopback only does not answer there, and
``ray.init`` retried for minutes without a word. Now the driver checks the address Ray will
really try, within the deadline, and stops in one line naming it and the fix.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")


@pytest.fixture
def rewriting(monkeypatch: pytest.MonkeyPatch) -> str:
    """Ray's default on Linux (multi-node mode): the outward address Ray puts for 127.0.0.1."""
    from ray._private import ray_constants

    from mmrobust.distributed import session

    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    tried = session.ray_target("127.0.0.1:6379")
    if tried is None:
        pytest.skip("this machine has no outward address: Ray keeps 127.0.0.1")
    return tried.rpartition(":")[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _eval(address: str, out: str) -> list[str]:
    return ["eval", "--data", "mmr-demo", "--model", "constant:A", "--out", out,
            "--executor", "ray", "--ray-address", address]  # fmt: skip


def test_nothing_listening_names_the_address_ray_tries_and_the_fix(
    rewriting: str, tmp_path: object
) -> None:
    port = _free_port()
    result = CliRunner().invoke(app, _eval(f"127.0.0.1:{port}", f"{tmp_path}/run"))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: cannot connect to Ray at 127.0.0.1:{port}: ")
    assert f"Ray itself connects to {rewriting}:{port}" in lines[0]
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" in lines[0] and "--node-ip-address" in lines[0]


@pytest.fixture
def loopback_gcs() -> Iterator[int]:
    """A gRPC-looking server on 127.0.0.1 only (it answers the HTTP/2 preface with SETTINGS),
    as a Ray head started with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 is."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.recv(64)
                conn.sendall(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))  # an empty SETTINGS frame

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    server.close()


def test_a_loopback_only_cluster_fails_within_the_deadline_naming_the_rewrite(
    rewriting: str, loopback_gcs: int, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """Before: the check passed (127.0.0.1 answers) and ray.init then retried for minutes."""
    from mmrobust.distributed import session

    monkeypatch.setattr(session, "CONNECT_TIMEOUT_S", 0.5)
    address = f"127.0.0.1:{loopback_gcs}"
    session.check_reachable(address)  # the address given answers as a Ray GCS would
    result = CliRunner().invoke(app, _eval(address, f"{tmp_path}/run"))
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"error: cannot connect to Ray at {address}: Ray replaces a loopback address by this "
        f"machine's and tries {rewriting}:{loopback_gcs}, where no Ray answers within 0.5 s; "
        f"{session.LOOPBACK_FIX}"
    )


def test_no_rewrite_in_single_machine_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    from ray._private import ray_constants

    from mmrobust.distributed import session

    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
    assert session.ray_target("127.0.0.1:6379") is None
    assert session.ray_target("ray://127.0.0.1:10001") is None
    assert session.ray_target("auto") is None
