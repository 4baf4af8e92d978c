"""``mmrobust eval --model hf:<folder>`` end to end on a tiny random VLM built offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import VideoWriter, read_frames, sample_clips
from tests.hf_tiny import build_tiny_idefics3
from tests.runs import stored_rows

pytest.importorskip("transformers")


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_idefics3(tmp_path_factory.mktemp("tiny-idefics3-e2e"), seed=1)


@pytest.fixture(scope="session")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real 20-frame clips (from ``bikes`` and ``carphone_pristine``) and one image."""
    root = tmp_path_factory.mktemp("hf-e2e-data")
    clips = sample_clips()
    records = []
    for name, size in (("bikes", (160, 68)), ("carphone_pristine", (88, 72))):
        frames = read_frames(clips[name], list(range(0, 100, 5)))
        with VideoWriter(root / f"{name}.mp4", 25, *size) as writer:
            for frame in frames:
                writer.write(cv2.resize(frame, size, interpolation=cv2.INTER_AREA))
        records.append(
            {
                "id": name,
                "benchmark": "tamper",
                "video": f"{name}.mp4",
                "question": "Does this video exhibit any signs of tampering?",
                "options": ["Yes", "No"],
                "answer": "No",
                "tamper_type": "original",
                "group": name,
            }
        )
    (root / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root


def _eval(checkpoint: Path, data: Path, out: Path, *extra: str) -> Any:
    args = [
        "eval",
        "--data",
        str(data / "set.jsonl"),
        "--model",
        f"hf:{checkpoint}",
        "--model-arg",
        "device=cpu",
        "--model-arg",
        "max_new_tokens=5",
        "--out",
        str(out),
        "--bootstrap",
        "0",
        "-q",
        *extra,
    ]
    return CliRunner().invoke(app, args)


def test_hf_eval_end_to_end_is_deterministic(
    tiny_checkpoint: Path, small_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        result = _eval(tiny_checkpoint, small_set, out, "--model-arg", "batch_size=2")
        # A random tiny checkpoint answers noise: when no reply parses, eval exits 1 with the reason.
        assert result.exit_code == 0 or (
            result.exit_code == 1 and "no sample could be scored" in result.output
        ), result.output
        runs.append(stored_rows(out))
    first, second = runs
    assert set(first) == {"bikes", "carphone_pristine"}
    for sid, row in first.items():
        assert row["status"] in ("ok", "parse_fail"), row["error"]  # noise text, but answered
        assert 1 <= row["completion_tokens"] <= 5
        assert row["prompt_tokens"] > 8 * 6  # 8 frames x (4 image tokens + 2 wrappers)
        assert len(json.loads(row["frame_indices"])) == 8
        assert json.loads(row["extra"])["n_images"] == 8
        assert (row["raw_text"], row["model_fp"]) == (
            second[sid]["raw_text"],
            second[sid]["model_fp"],
        )
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["config"]["model"] == f"hf:{tiny_checkpoint}"

    # Re-running into the same folder resumes: nothing new is generated.
    again = _eval(tiny_checkpoint, small_set, tmp_path / "a", "--model-arg", "batch_size=2")
    assert again.exit_code == result.exit_code, again.output
    assert "0 new rows" in again.output


def test_hf_missing_checkpoint_is_a_one_line_cli_error(
    small_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = _eval(tmp_path / "nothing-here", small_set, tmp_path / "out")
    assert result.exit_code != 0
    assert "hf: no checkpoint folder at" in result.output
