"""Commands that did nothing say so; a failed start does not block the retry (issue 30).

``mmrobust mmr-data`` exited 0 when it generated no training sample (every image
failed); ``mmrobust finetune`` wrote ``run_config.json`` before loading the model,
so a start that failed (a model that did not load, no chat template) left a file
that refused the corrected command ("holds a run with other settings").
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
from typer.testing import CliRunner

from mmrobust.cli import app
from tests.fake_openai_server import FakeOpenAIServer, Reply
from tests.finetune_data import generate_pairs


def _images(folder: Path) -> Path:
    folder.mkdir()
    for i, bgr in enumerate(((0, 0, 255), (0, 255, 0))):
        cv2.imwrite(str(folder / f"{i}.png"), np.full((32, 48, 3), bgr, np.uint8))
    return folder


def test_mmr_data_that_generated_nothing_exits_1_with_the_reason(tmp_path: Path) -> None:
    images = _images(tmp_path / "imgs")
    with FakeOpenAIServer(responder=lambda _r: Reply.error(500)) as server:
        result = CliRunner().invoke(
            app,
            ["mmr-data", str(images), "--model", "openai:fake", "--model-arg",
             f"base_url={server.base_url}", "--model-arg", "max_retries=0",
             "--out", str(tmp_path / "out"), "--pairs", "1"],
        )  # fmt: skip
    assert result.exit_code == 1, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("error: generated no training sample from 2 images (")
    assert "0.png: extraction: " in line or "1.png: extraction: " in line
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["statuses"] == {"api_error": 2} and summary["turns_kept"] == 0


def test_mmr_data_that_generated_samples_still_exits_0(tmp_path: Path) -> None:
    """The generation of ``tests/finetune_data.py`` (8 pairs) runs through the CLI with exit 0."""
    out = generate_pairs(tmp_path)  # asserts exit 0 itself
    assert json.loads((out / "summary.json").read_text())["turns_kept"] == 16


def test_a_failed_finetune_start_does_not_block_the_corrected_retry(tmp_path: Path) -> None:
    data = generate_pairs(tmp_path / "data")
    out = tmp_path / "ft"

    def start(model: Path) -> str:
        result = CliRunner().invoke(
            app,
            ["finetune", "--model", f"hf:{model}", "--data", str(data), "--out", str(out),
             "--device", "cpu", "-q"],
        )  # fmt: skip
        assert result.exit_code == 2, result.output
        return result.output

    first = start(tmp_path / "no-such-model")
    assert "cannot load" in first
    retry = start(tmp_path / "the-corrected-model")  # still absent: the error must be its own
    assert "holds a run with other settings" not in retry
    assert "cannot load" in retry and "the-corrected-model" in retry
