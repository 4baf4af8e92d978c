"""The command line's surface: help at 80 columns, flag metavars, option aliases (issues 30, 33)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.test_docs_commands import parse_command

COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def _help(args: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TERMINAL_WIDTH", "80")
    result = CliRunner().invoke(app, args, terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_at_80_columns_shows_every_flag_whole(
    command: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No flag name cut with an ellipsis, no ``<bool>`` type on a flag (issues 30, 33.11)."""
    args = ["--help"] if command is None else [command, "--help"]
    out = _help(args, monkeypatch)
    assert "…" not in out
    assert "<bool>" not in out
    group = typer.main.get_command(app)
    params = (
        group.params if command is None else group.commands[command].params  # type: ignore[attr-defined]
    )
    for param in params:
        for flag in [*param.opts, *param.secondary_opts]:
            if flag.startswith("-"):
                assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", out), (command, flag)
    assert max(len(line) for line in out.splitlines()) <= 80


def test_the_command_list_is_not_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """``mmrobust --help`` lists each command with a whole sentence, not ``write...``."""
    out = _help(["--help"], monkeypatch)
    commands = out.split("Commands:")[1]
    assert "..." not in commands
    # the column width follows the longest command name; the sentence must be whole
    assert re.search(r"\n  eval +Run a model over a dataset \(re-running resumes\)\.\n", commands)
    assert all(len(line) <= 80 for line in commands.splitlines())


@pytest.mark.parametrize("flag", ["--media", "--images"])
@pytest.mark.parametrize(
    ("command", "required"),
    [
        ("eval", ["--data", "d.json", "--model", "constant:A", "--out", "runs/x"]),
        ("audit", ["build/"]),
        ("finetune", ["--model", "hf:x", "--data", "mmr-data/", "--out", "ft/x"]),
    ],
)
def test_media_is_the_general_name_of_images(command: str, required: list[str], flag: str) -> None:
    """``--media DIR`` (images or videos) and its alias ``--images DIR`` fill the same setting."""
    ctx = parse_command((command, *required, flag, "media-dir"))
    assert str(ctx.params["images"]) == "media-dir"


def test_version_prints_the_version() -> None:
    """``--version`` still works as a flag (no value) after the help settings changed."""
    from mmrobust import __version__

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"mmrobust {__version__}"


def test_a_missing_image_hint_is_given_once_and_names_media(tmp_path: Path) -> None:
    """Issue 33.7: "(pass --images DIR, or --text-only) (pass --images DIR, ...)" was printed."""
    from tests.test_datasets import MMR_RECORD

    data = tmp_path / "MMR-benchmark.json"
    data.write_text(json.dumps([MMR_RECORD, {**MMR_RECORD, "question_type": "POS"}]))
    result = CliRunner().invoke(
        app, ["eval", "--data", str(data), "--model", "constant:A", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("error: none of the 2 samples can be evaluated: image not found: ")
    assert line.count("pass --media DIR, or --text-only") == 1
    assert "--images" not in line


@pytest.mark.parametrize("flag", ["--model-args", "--model_args"])
@pytest.mark.parametrize(
    ("command", "required"),
    [
        ("eval", ["--data", "d.json", "--model", "openai:m", "--out", "runs/x"]),
        ("mmr-data", ["photos/", "--model", "openai:m", "--out", "mmr-data/"]),
        ("demo", ["--model", "openai:m"]),
    ],
)
def test_model_args_comma_form_on_every_command_with_model_arg(
    command: str, required: list[str], flag: str
) -> None:
    """lm-eval's ``--model_args k=v,k=v`` parses wherever ``--model-arg`` does (issue 30)."""
    ctx = parse_command((command, *required, flag, "base_url=http://h:8000/v1,concurrency=4"))
    assert ctx.params["model_args"] == ["base_url=http://h:8000/v1,concurrency=4"]


def test_demo_passes_the_comma_form_to_its_extra_models(monkeypatch: pytest.MonkeyPatch) -> None:
    import mmrobust.demo

    seen: dict[str, object] = {}

    def fake_run_demo(config: object, log: object) -> object:
        seen["args"] = config.model_args  # type: ignore[attr-defined]
        raise ValueError("stop here")

    monkeypatch.setattr(mmrobust.demo, "run_demo", fake_run_demo)
    result = CliRunner().invoke(
        app,
        ["demo", "--model", "openai:m", "--model-args", "base_url=http://h/v1,concurrency=4",
         "--model-arg", "max_retries=0"],
    )  # fmt: skip
    assert result.exit_code == 2 and "stop here" in result.output
    assert seen["args"] == {"base_url": "http://h/v1", "concurrency": "4", "max_retries": "0"}


def test_mmr_data_takes_the_comma_form(tmp_path: Path) -> None:
    import cv2
    import numpy as np

    from tests.fake_openai_server import FakeOpenAIServer
    from tests.finetune_data import responder
    from tests.test_mmr_pipeline import COLOURS

    images = tmp_path / "images"
    images.mkdir()
    for name, rgb in COLOURS.items():
        cv2.imwrite(str(images / f"{name}.png"), np.full((32, 32, 3), rgb[::-1], np.uint8))
    with FakeOpenAIServer(responder=responder) as server:
        result = CliRunner().invoke(
            app,
            ["mmr-data", str(images), "--model", "openai:fake", "--model-args",
             f"base_url={server.base_url},max_retries=0", "--out", str(tmp_path / "o"),
             "--pairs", "2"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "pairs kept 8 of 8" in result.output
    swallowed = CliRunner().invoke(
        app,
        ["mmr-data", str(images), "--model", "openai:fake", "--model-arg",
         "base_url=http://127.0.0.1:9/v1,max_retries=0", "--out", str(tmp_path / "o2")],
    )  # fmt: skip
    assert swallowed.exit_code == 2 and "looks like several settings" in swallowed.output
    assert len(swallowed.output.strip().splitlines()) == 1  # one line (rich wrapped it at 80)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["tamper", "{missing}/", "--out", "{tmp}/built"], "no such video or folder: {missing}"),
        (["tamper-data", "{missing}/", "--out", "{tmp}/td"], "no such video or folder: {missing}"),
        (["eval", "--model", "constant:A", "--data", "{missing}", "--out", "{tmp}/run"],
         "dataset not found: {missing}"),
        (["audit", "{missing}/"], "dataset not found: {missing}"),
        (["report", "{missing}/", "--out", "{tmp}/report"], "no such folder: {missing}"),
    ],
)  # fmt: skip
def test_a_missing_input_path_exits_2_with_one_line(
    args: list[str], says: str, tmp_path: Path
) -> None:
    """A mistyped path is a usage error on every command: exit 2 (typer's), one ``error:``
    line on stderr, no traceback, nothing created (before: ``tamper nosuch/`` exited 1 with a
    build summary, ``tamper-data nosuch/`` said "no video found in nosuch")."""
    fill = {"missing": str(tmp_path / "nosuch"), "tmp": str(tmp_path)}
    result = CliRunner().invoke(app, [a.format(**fill) for a in args])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert says.format(**fill) in lines[0]
    assert "Traceback" not in result.output and result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == []
