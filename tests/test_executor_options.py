"""``--executor`` / ``--ray-*`` options: parsing, validation and the one-line "no Ray" error.

These need no Ray cluster (``tests/test_ray.py`` runs the real thing).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.distributed import (
    INSTALL_HINT,
    RayOptions,
    RayUnavailableError,
    parse_resources,
    ray_options,
)
from mmrobust.runner import SerialExecutor, ThreadExecutor, describe_executor


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import ray`` fail, as on an install without the ``ray`` extra."""
    monkeypatch.setitem(sys.modules, "ray", None)


@pytest.mark.parametrize(
    "command",
    [
        ["eval", "--data", "x.jsonl", "--model", "forensic", "--out", "run"],
        ["tamper", "missing.mp4", "--out", "set"],
        ["mmr-data", "img.png", "--model", "constant:A", "--out", "gen"],
    ],
)
def test_executor_ray_without_ray_fails_in_one_line(
    no_ray: None, command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, [*command, "--executor", "ray"])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {INSTALL_HINT}"
    assert not any(tmp_path.iterdir())  # nothing was started or written


def test_ray_options_parse_and_validate(no_ray: None) -> None:
    assert ray_options("local") is None
    with pytest.raises(RayUnavailableError, match=r"pip install -e '\.\[ray\]'"):
        ray_options("ray")
    with pytest.raises(ValueError, match="--executor must be one of local, ray"):
        ray_options("dask")
    with pytest.raises(
        ValueError, match="--ray-address, --replicas only apply with --executor ray"
    ):
        ray_options("local", address="10.0.0.1:6379", replicas=2)
    assert parse_resources(["A100=1", "spot = 0.5"]) == {"A100": 1.0, "spot": 0.5}
    for bad in (["A100"], ["=1"], ["A100=many"]):
        with pytest.raises(ValueError, match="--ray-resource"):
            parse_resources(bad)
    with pytest.raises(ValueError, match="--replicas must be at least 1"):
        RayOptions(replicas=0)
    with pytest.raises(ValueError, match="--ray-gpus-per-worker instead"):
        RayOptions(resources={"GPU": 1})
    with pytest.raises(ValueError, match="must reserve something"):
        RayOptions(cpus_per_worker=0)
    assert RayOptions(cpus_per_worker=0, resources={"A100": 1}).describe() == {
        "address": None,
        "replicas": None,
        "cpus_per_worker": 0,
        "gpus_per_worker": None,
        "resources": {"A100": 1},
    }


def test_local_executors_describe_themselves_for_run_json() -> None:
    assert describe_executor(SerialExecutor()) == {"name": "serial"}
    assert describe_executor(ThreadExecutor(4)) == {"name": "threads", "workers": 4}
