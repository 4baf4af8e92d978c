"""Start-up weight (issue 32 item 3): which heavy libraries a command imports.

``mmrobust --help``, ``mmrobust eval --help`` and an ``eval`` of a built tamper
set (plus the same set as ``--task when`` and the MMR demo text-only) through an
API model (``openai:`` against :mod:`tests.fake_openai_server`) must import none
of :data:`HEAVY`: each run is a fresh ``python`` subprocess whose ``atexit``
hook writes ``sorted(sys.modules)`` to a file (:func:`imported_by`). The eval's
metrics and printed summary are computed in that process, so a scorer or summary
line that pulls in pandas / scipy / sklearn shows up here. No timing is asserted
(``benchmarks/startup.py`` measures the seconds).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_openai_server import FakeOpenAIServer, Reply

HEAVY = (
    "torch",
    "transformers",
    "sklearn",
    "scipy",
    "matplotlib",
    "ray",
    "pandas",
    "skimage",
    "skvideo",
    "openai",
)
"""Top-level packages an API-model eval and ``--help`` must not import."""

ROOT = Path(__file__).resolve().parents[1]

_RUNNER = """
import atexit, json, sys
out, args = sys.argv[1], sys.argv[2:]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
from mmrobust.cli import app
sys.argv = ["mmrobust", *args]
app()
"""


def imported_by(
    args: list[str], tmp_path: Path
) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """Run ``mmrobust ARGS`` in a fresh interpreter; the top-level modules it had at exit."""
    dump = tmp_path / "modules.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    env["OPENAI_API_KEY"] = "sk-startup-test"
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(dump), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    modules = json.loads(dump.read_text()) if dump.is_file() else []
    return {m.split(".")[0] for m in modules}, proc


@pytest.mark.parametrize("args", [["--help"], ["eval", "--help"]])
def test_help_imports_no_heavy_library(args: list[str], tmp_path: Path) -> None:
    top, proc = imported_by(args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout
    assert sorted(top & set(HEAVY)) == []
    assert "numpy" not in top and "av" not in top  # help reads no media


def _eval_args(server: FakeOpenAIServer, data: str, out: Path, *extra: str) -> list[str]:
    return [
        "eval",
        "--data",
        data,
        "--model",
        "openai:test",
        "--model-arg",
        f"base_url={server.base_url}",
        "--out",
        str(out),
        "--cache-dir",
        "none",
        "--bootstrap",
        "50",
        *extra,
    ]


@pytest.mark.parametrize(
    "extra",
    [[], ["--task", "when"]],
    ids=["tamper", "task-when"],
)
def test_api_eval_of_built_set_imports_no_heavy_library(
    family_tamper_set: Path, tmp_path: Path, extra: list[str]
) -> None:
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=lambda request: Reply.ok("A. Yes")) as server:
        top, proc = imported_by(_eval_args(server, str(family_tamper_set), out, *extra), tmp_path)
        n_requests = len(server.chat_requests)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert n_requests == 4  # every clip of the set was sent: a real eval, not an early exit
    assert (out / "metrics.json").is_file()
    assert "new rows" in proc.stdout + proc.stderr  # the summary lines were printed
    assert sorted(top & set(HEAVY)) == []
    assert {"httpx", "av", "numpy"} <= top  # the eval did read media and talk HTTP


def test_api_eval_of_mmr_text_only_imports_no_heavy_library(tmp_path: Path) -> None:
    data = ROOT / "src" / "mmrobust" / "data" / "mmr_demo" / "MMR-demo.json"
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=lambda request: Reply.ok("A")) as server:
        top, proc = imported_by(_eval_args(server, str(data), out, "--text-only"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((out / "metrics.json").read_text())["pairs"] == 24
    assert sorted(top & set(HEAVY)) == []
