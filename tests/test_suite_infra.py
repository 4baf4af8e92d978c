"""The test suite's own machinery: the shared-data folder, the Ray cluster's start, xdist.

``tests/shared_data.py`` is the one place that finds ``../shared`` (or ``$MMROBUST_SHARED``);
``tests/ray_cluster.SharedCluster`` reports a cluster that cannot start once (a skip, or with
``strict`` one failure) instead of once per test; ``patient_start`` raises Ray's fixed 30 s
start-up waits; ``conftest.pytest_xdist_auto_num_workers`` runs a few files in this process.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

import tests.shared_data as shared_data
from tests import conftest
from tests.ray_cluster import ClusterStartError, LoopbackCluster, SharedCluster

TESTS = Path(__file__).resolve().parent


def test_only_shared_data_builds_the_shared_folders_path() -> None:
    """Every test reaches ``../shared`` through ``tests/shared_data.py`` (which honours
    ``MMROBUST_SHARED``), none by a path of its own."""
    own_path = re.compile(r"""/\s*["']shared["']|["']\.\./shared""")
    offenders = [
        f"{path.name}:{n}"
        for path in sorted(TESTS.glob("*.py"))
        if path.name != "shared_data.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if own_path.search(line) and "own_path" not in line
    ]
    assert offenders == []


def test_mmrobust_shared_points_the_tests_at_another_copy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MMROBUST_SHARED", str(tmp_path))
    try:
        moved = importlib.reload(shared_data)
        assert tmp_path == moved.SHARED_DIR
        assert tmp_path / "data" / "mmr" / "MMR-benchmark.json" == moved.MMR_JSON
        with pytest.raises(pytest.skip.Exception, match=f"shared data not found at {tmp_path}"):
            moved.shared_file(moved.MMR_JSON)
    finally:
        monkeypatch.undo()
        importlib.reload(shared_data)
    assert tmp_path != shared_data.SHARED_DIR


def _failing_start(self: LoopbackCluster) -> LoopbackCluster:
    raise ClusterStartError("a 2-node Ray cluster on 127.0.0.1 did not start within 300 s")


@pytest.mark.parametrize("strict", [False, True])
def test_a_cluster_that_cannot_start_is_reported_once(
    strict: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts: list[int] = []

    def start(self: LoopbackCluster) -> LoopbackCluster:
        starts.append(1)
        return _failing_start(self)

    monkeypatch.setattr(LoopbackCluster, "__enter__", start)
    shared = SharedCluster(nodes=2, strict=strict)
    first = pytest.fail.Exception if strict else pytest.skip.Exception
    with pytest.raises(first) as err:
        shared.get()
    assert "did not start within 300 s: the machine is too busy or cannot run Ray" in str(err.value)
    for _ in range(3):  # every later test that asks skips, with the same reason
        with pytest.raises(pytest.skip.Exception, match="did not start within 300 s"):
            _ = shared.address
    assert starts == [1]  # one start tried, not one per test
    assert not shared.started
    shared.stop()  # nothing to stop


def test_patient_start_retries_the_node_lookup_and_puts_it_back() -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
    import ray._private.services as services

    from tests.ray_cluster import patient_start

    original = services.get_node
    calls: list[str] = []

    def not_yet(gcs_address: str, node_id: str) -> Any:
        calls.append(node_id)
        if len(calls) < 3:
            raise RuntimeError("node not registered yet")
        return {"node_id": node_id}

    services.get_node = not_yet
    try:
        with patient_start(timeout_s=30):
            assert services.get_node("127.0.0.1:1", "n1") == {"node_id": "n1"}
        assert calls == ["n1"] * 3  # Ray's loop would have retried for 30 s only
        assert services.get_node is not_yet  # what was there before is back
        calls.clear()
        with patient_start(timeout_s=0), pytest.raises(RuntimeError, match="not registered"):
            services.get_node("127.0.0.1:1", "n2")
    finally:
        services.get_node = original


class _Config:
    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.invocation_params = type("P", (), {"dir": TESTS.parent})()


def test_a_few_files_run_in_this_process_and_the_suite_on_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    workers = conftest.pytest_xdist_auto_num_workers
    assert workers(_Config(["tests/test_suite_infra.py"])) == 0  # type: ignore[arg-type]
    assert workers(_Config(["tests/test_ray.py::test_x", "tests/test_card.py"])) == 0  # type: ignore[arg-type]
    assert workers(_Config(["tests"])) >= 2  # type: ignore[arg-type]
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "5")
    assert workers(_Config(["tests/test_suite_infra.py"])) == 5  # type: ignore[arg-type]


class _Item:
    def __init__(self, nodeid: str, ray: bool) -> None:
        self.nodeid = nodeid
        self.marks = [pytest.mark.ray.mark] if ray else []

    def get_closest_marker(self, name: str) -> Any:
        return next((m for m in self.marks if m.name == name), None)


def test_ray_tests_run_together_and_each_file_on_one_worker() -> None:
    items = [
        _Item("tests/test_a.py::t1", False),
        _Item("tests/test_crossings.py::c1", True),
        _Item("tests/test_b.py::t2", False),
        _Item("tests/test_b.py::t3", False),
        _Item("tests/test_ray.py::r1", True),
        _Item("tests/test_ray.py::r2", True),
    ]
    conftest.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    order = [i.nodeid.split("::")[1] for i in items]
    assert order == ["t1", "c1", "r1", "r2", "t2", "t3"]  # one cluster start serves the ray run
    root = TESTS.parent
    scopes = {
        nodeid: conftest.xdist_scope(nodeid, root)
        for nodeid in (
            "tests/test_crossings.py::test_a_cell_equals_the_serial_run[random-detect-ray]",
            "tests/test_ray.py::test_ctrl_c_keeps_rows_and_the_same_command_resumes",
            "tests/test_card.py::test_card_values_chance_and_links",
            "tests/test_suite_infra.py::test_ray_tests_run_together_on_one_worker_and_each_file_on_one",
        )
    }
    assert list(scopes.values()) == [
        "ray:tests/test_crossings.py",
        "ray:tests/test_ray.py",
        "tests/test_card.py",
        "tests/test_suite_infra.py",
    ]
    assert conftest.pytest_xdist_make_scheduler.pytest_impl["tryfirst"] is True  # type: ignore[attr-defined]


def test_the_ray_files_are_handed_out_first_each_to_its_own_worker() -> None:
    """The scheduler's work queue gives the ``ray:`` scopes before the larger files (xdist
    orders scopes by test count) and leaves the rest in xdist's order."""
    queue = conftest.RayFirst()
    for scope, n in (("tests/test_big.py", 50), ("ray:tests/test_ray.py", 9),
                     ("tests/test_mid.py", 20), ("ray:tests/test_ray_faults.py", 4)):  # fmt: skip
        queue[scope] = dict.fromkeys(range(n), False)
    order = [queue.popitem(last=False)[0] for _ in range(4)]
    assert order == [
        "ray:tests/test_ray.py",
        "ray:tests/test_ray_faults.py",
        "tests/test_big.py",
        "tests/test_mid.py",
    ]
    ray_files = sorted(p.name for p in TESTS.glob("test_*.py") if conftest.ray_file(str(p)))
    assert ray_files == [
        "test_crossings.py",
        "test_crossings_nodes.py",
        "test_ray.py",
        "test_ray_faults.py",
    ]
    assert len(ray_files) == conftest._RAY_WORKERS


def test_no_test_file_starts_a_ray_cluster_of_its_own() -> None:
    """Ray tests share the session's cluster (``conftest.ray_cluster``, marker ``ray``): a second
    cluster doubles the start-up a busy machine may miss and the processes left to stop."""
    starts = re.compile(r"LoopbackCluster\(|cluster_utils import Cluster|ray\.init\(")
    offenders = [
        f"{path.name}:{n}"
        for path in sorted(TESTS.glob("test_*.py"))
        if path.name != "test_suite_infra.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if starts.search(line)
    ]
    assert offenders == []
