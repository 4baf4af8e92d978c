"""Where features meet (issue 27 item 8): a node that lacks part of the data.

One more node joins the loopback cluster whose raylet runs in its own mount namespace, with
empty folders mounted over the tamper sources and over one sub-folder of the built set
(``tests/ray_node_view.py``): ``tamper`` and ``eval`` stop before any work, naming the node
and the file; a file the node loses after the check is a ``model_error`` (retried), and a
local re-run repairs the run to the serial rows and metrics. The tiny set, the cells and their
run folders are ``tests/test_crossings.py``'s (its module fixtures, built again here: this
file runs on its own pytest-xdist worker and cluster).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.crossings import metrics, rows
from tests.test_crossings import (  # the module fixtures of the matrix (pytest finds them here)
    Matrix,
    _key_env,
    cluster,
    invoke,
    matrix,
    tiny_set,
)

pytestmark = [pytest.mark.slow, pytest.mark.ray]

__all__ = ["_key_env", "cluster", "matrix", "tiny_set"]


ITEM_8 = "item8"
"""The custom resource of the node that lacks part of the data (pins a replica to it)."""


@pytest.fixture(scope="class")
def hiding_node(matrix: Matrix) -> Iterator[Any]:
    """One more node on the cluster on which the tamper sources' folder is an empty mount and
    the built set's ``videos/clip1`` sub-folder is empty (``tests/ray_node_view.py``)."""
    from tests.ray_node_view import HidingNode, unshare_prefix

    if unshare_prefix() is None:
        pytest.skip("needs a mount namespace (unshare -m as root, or unshare -rm)")
    hide = [matrix.tiny_set.parent / "set-sources", matrix.tiny_set / "videos" / "clip1"]
    cluster = matrix.fixture("cluster").get()
    with HidingNode(cluster, hide=hide, resources={ITEM_8: 1}) as node:
        yield node


@pytest.mark.usefixtures("hiding_node")
class TestANodeThatLacksPartOfTheData:
    """Issue 27 item 8: what each node will read is checked, and a node-local failure is retried."""

    def test_tamper_stops_before_building_when_a_node_sees_an_empty_data_folder(
        self, matrix: Matrix, tmp_path: Path
    ) -> None:
        sources = matrix.tiny_set.parent / "set-sources"
        out = tmp_path / "set"
        args = ["tamper", str(sources), "--out", str(out), "--effects", "dropping"]
        args += ["--executor", "ray", "--ray-address", matrix.fixture("cluster").address]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        line = result.output.strip().splitlines()[-1]
        assert line.startswith(f"error: Ray worker on 127.0.0.1 cannot see {sources}/clip0.mp4")
        assert "(and 1 more); workers read and write the driver's paths" in line
        assert not out.exists()  # nothing built, no folder left

    def test_a_source_a_node_loses_mid_build_names_the_node_and_a_rerun_builds_it(
        self, matrix: Matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The mount goes away after the check: the check sees nothing to complain about.
        monkeypatch.setattr("mmrobust.distributed.tamper.planned_files", lambda *a: [])
        sources = matrix.tiny_set.parent / "set-sources"
        out = tmp_path / "set"
        args = ["tamper", str(sources), "--out", str(out), "--effects", "dropping"]
        ray = ["--executor", "ray", "--ray-address", matrix.fixture("cluster").address]
        invoke([*args, *ray, "--ray-resource", f"{ITEM_8}=1"], 1)  # no clip built
        errors = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
        assert [e["reason"] for e in errors] == [
            f"Ray node 127.0.0.1 cannot see {sources}/clip{i}.mp4 (the driver does; node-local)"
            for i in range(2)
        ]
        again = invoke([*args, "--preset", "ultrafast"])
        assert "4 clips (4 built, 0 already done), 0 errors" in again.output

    def test_eval_stops_before_asking_when_a_node_lacks_a_sub_folder(
        self, matrix: Matrix, tmp_path: Path
    ) -> None:
        out = tmp_path / "run"
        args = matrix.argv("random", "detect", "ray", out, str(matrix.tiny_set), cache=False)
        result = CliRunner().invoke(app, [*args, "--ray-resource", f"{ITEM_8}=1"])
        assert result.exit_code == 2, result.output
        line = result.output.strip().splitlines()[-1]
        hidden = matrix.tiny_set / "videos" / "clip1"
        assert line.startswith(f"error: Ray worker on 127.0.0.1 cannot see {hidden}/"), line
        assert "(and 2 more)" in line  # clip1's 3 clips; clip0's are seen
        assert not (out / "results.sqlite").exists() or rows(out) == {}

    def test_a_file_a_node_loses_mid_run_is_retried_and_a_local_rerun_repairs_it(
        self, matrix: Matrix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The mount goes away after the check: the check sees nothing to complain about.
        monkeypatch.setattr("mmrobust.distributed.eval.media_paths", lambda items: [])
        out = tmp_path / "run"
        args = matrix.argv("random", "detect", "ray", out, str(matrix.tiny_set), cache=False)
        invoke([*args, "--ray-resource", f"{ITEM_8}=1"])
        lost = {sid: r for sid, r in rows(out).items() if r[0] != "ok"}
        assert sorted(lost) == ["clip1__dropping", "clip1__masking", "clip1__original"]
        for status, _letter, _raw, rule, error, *_ in lost.values():
            assert (status, rule) == ("model_error", "model_error")
            assert error.startswith(f"ray: the node 127.0.0.1 cannot see {matrix.tiny_set}/")
            assert error.endswith("(the driver does; node-local: a re-run asks again)")
        again = invoke(
            matrix.argv("random", "detect", "serial", out, str(matrix.tiny_set), cache=False)
        )
        assert "3 new rows, 3 resumed" in again.output
        serial = matrix.run("random", "detect", "serial")
        assert rows(out) == rows(serial)
        assert metrics(out) == metrics(serial)
