"""Where refusals meet executors: a model that can answer none of the samples, on every executor.

The cells are ``tests/crossings.py``'s ``REFUSALS`` x ``EXECUTORS``: ``constant:Z`` on the
tiny Yes/No tamper set (``Model.cannot_answer``), ``forensic`` on ``mmr-demo``'s photos
(``Model.cannot_take`` of a light backend, built on the driver) and a backend the driver
knows by its spec only (``register_backend(media=("video",))``, never loaded). Each is
``mmrobust eval`` through the CLI, serial (``--workers 1``), threads (``--workers 3``) and
``--executor ray``: the same one line and exit 2 everywhere, no run folder left, and on Ray
the Ray path is never entered (``RAY_RUNNERS`` is asked for nothing), so no cluster is
contacted and no task runs: these cells need no cluster.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.distributed import RAY_RUNNERS
from mmrobust.models.base import MediaKind, Model, Request, Response
from mmrobust.models.spec import MODELS, register_backend
from mmrobust.registry import UnknownNameError
from tests.crossings import FRAMES, MMR_LIMIT, PICKY, Refusal, build_tiny_set, refusal_cells

EXECUTOR_ARGS = {"serial": ["--workers", "1"], "threads": ["--workers", "3"]}

LOADS: list[str] = []
"""Every ``PICKY`` model built (the driver must never build it: it is not light)."""


class PickyModel(Model):
    """Takes video only (declared for the backend too); answers ``A``."""

    media_input = "path"
    media_kinds: ClassVar[tuple[MediaKind, ...]] = ("video",)
    name = PICKY

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response(text="A") for _ in requests]


def make_picky(arg: str | None, args: Mapping[str, str]) -> Model:
    LOADS.append(PICKY)
    return PickyModel()


@pytest.fixture
def picky() -> Iterator[None]:
    """``PICKY`` registered for one test (video only, not light), then removed."""
    register_backend(PICKY, make_picky, media=("video",))
    LOADS.clear()
    try:
        yield
    finally:
        MODELS.unregister(PICKY)


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The crossing matrix's tiny built set (6 Yes/No clips), built once."""
    return build_tiny_set(tmp_path_factory.mktemp("refusals") / "set")


def _free_address() -> str:
    with socket.socket() as sock:  # a port nothing listens on: the cluster must not be needed
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.usefixtures("picky")
@pytest.mark.parametrize(("refusal", "executor"), list(refusal_cells()))
def test_a_model_that_can_answer_nothing_is_refused_before_any_work(
    refusal: Refusal,
    executor: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered: list[str] = []

    def ray_runner(name: str) -> Any:
        entered.append(name)
        raise AssertionError(f"the Ray {name} path was entered")

    monkeypatch.setattr(RAY_RUNNERS, "get", ray_runner)
    out = tmp_path / "run"
    data = "mmr-demo" if refusal.task == "mmr" else str(request.getfixturevalue("tiny_set"))
    args = ["eval", "--data", data, "--model", refusal.model, "--out", str(out), *FRAMES]
    args += ["--bootstrap", "0", "-q"]
    args += [*MMR_LIMIT] if refusal.task == "mmr" else ["--task", refusal.task]
    if executor == "ray":
        args += ["--executor", "ray", "--ray-address", _free_address()]
    else:
        args += EXECUTOR_ARGS[executor]
    result = CliRunner().invoke(app, args)
    assert (result.exit_code, result.output.strip()) == (2, refusal.line), repr(result.exception)
    assert entered == []  # on Ray: no session, no probe, no task
    assert LOADS == []  # a backend known by its spec only is refused from the spec
    assert not out.exists()


def test_the_driver_builds_light_backends_only() -> None:
    from mmrobust.models.spec import UnloadedModel, driver_model

    constant = driver_model("constant:Z")
    assert type(constant).__name__ == "ConstantModel"
    assert constant.cannot_answer([{"A": "Yes", "B": "No"}]) is not None
    remote = driver_model("openai:gpt-test", {"api_key_env": "MMROBUST_NOT_SET_ANYWHERE"})
    assert isinstance(remote, UnloadedModel)  # no client built: the missing key is not read
    assert remote.cannot_answer([{"A": "Yes"}]) is None and remote.cannot_take({"image"}) is None
    with pytest.raises(UnknownNameError, match=r"unknown model 'opnai'\. Did you mean: openai"):
        driver_model("opnai:gpt-test")
