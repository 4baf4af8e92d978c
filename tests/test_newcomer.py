"""A newcomer's first commands: progress labels, clear refusals, hub ids, text-only marks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.datasets import detect_format
from mmrobust.demo import _input
from mmrobust.report import RunData, run_labels
from tests.test_datasets import MMR_RECORD

runner = CliRunner()


def _jsonl(path: Path) -> Path:
    rows = [
        {"id": f"q{i}", "question": "Is it red?", "options": ["Yes", "No"], "answer": "Yes"}
        for i in range(3)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_progress_bar_names_the_model_and_the_dataset(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "colours.jsonl")
    res = runner.invoke(
        app, ["eval", "--data", str(data), "--model", "constant:A", "--out", str(tmp_path / "r")]
    )
    assert res.exit_code == 0, res.output
    assert "constant:A on colours" in res.output  # not a bare "eval" bar
    assert "3/3" in res.output


def test_a_video_is_not_a_dataset(tmp_path: Path) -> None:
    clip = tmp_path / "holiday.mp4"
    clip.write_bytes(b"\x00" * 64)
    res = runner.invoke(
        app, ["eval", "--data", str(clip), "--model", "constant:A", "--out", str(tmp_path / "r")]
    )
    assert res.exit_code == 2
    assert "is a video, not a dataset" in res.output
    assert f"mmrobust tamper {clip} --out my-set" in res.output
    assert not (tmp_path / "r").exists()


def test_a_folder_of_videos_is_not_a_dataset(tmp_path: Path) -> None:
    videos = tmp_path / "my_videos"
    videos.mkdir()
    (videos / "a.mp4").write_bytes(b"\x00" * 64)
    res = runner.invoke(
        app, ["eval", "--data", str(videos), "--model", "constant:A", "--out", str(tmp_path / "r")]
    )
    assert res.exit_code == 2
    assert "holds videos but no dataset file" in res.output
    assert f"mmrobust tamper {videos} --out my-set" in res.output
    assert not (tmp_path / "r").exists()


def test_a_missing_hf_checkpoint_folder_is_one_line_before_any_import(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-checkpoint"
    res = runner.invoke(
        app,
        ["eval", "--data", "mmr-demo", "--model", f"hf:{missing}", "--out", str(tmp_path / "r")],
    )
    assert res.exit_code == 2
    assert f"hf: no checkpoint folder at {missing}" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "r").exists()


def test_hub_id_is_read_as_mmr_without_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hub cache laid out as huggingface_hub lays it out; offline, its real code path resolves
    # the snapshot (datasets--owner--name/refs/main -> snapshots/<commit>/).
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("MMROBUST_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "cache" / "hub" / "datasets--someone--MMR-copy"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    positive = {**MMR_RECORD, "question_type": "POS", "ground_truth": "D"}
    (snapshot / "MMR-benchmark.json").write_text(json.dumps([positive, MMR_RECORD]))

    assert detect_format("someone/MMR-copy") == "mmr"
    assert detect_format.__doc__ and "owner/name" in detect_format.__doc__
    res = runner.invoke(
        app,
        ["eval", "--data", "someone/MMR-copy", "--text-only", "--model", "constant:D",
         "--out", str(tmp_path / "r"), "-q"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert metrics["benchmark"] == "mmr" and metrics["pairs"] == 1
    assert "(text only: no images or frames sent)" in res.output
    # a path that merely looks like owner/name but names a file is still "not found"
    with pytest.raises(FileNotFoundError, match="dataset not found"):
        detect_format("my-set/manifest.jsonl")


def test_text_only_runs_are_marked(tmp_path: Path) -> None:
    def run(name: str, text_only: bool) -> RunData:
        info = {
            "config": {"model": "constant:A", "text_only": text_only},
            "dataset": {"name": "MMR-benchmark", "data_hash": "ab", "benchmark": "mmr"},
        }
        return RunData(tmp_path / name, info, {"benchmark": "mmr"}, [])

    assert run_labels([run("a", True), run("b", False)]) == [
        "constant:A (text only)",
        "constant:A",
    ]
    assert _input({"benchmark": "mmr", "run": {"text_only": True, "frames": "none"}}) == "text only"
    assert _input({"benchmark": "mmr", "run": {"frames": "8 segment-centre frames"}}) == "images"
    assert _input({"benchmark": "tamper", "run": {"frames": "8 segment-centre frames"}}) == (
        "8 frames"
    )
    assert _input({"benchmark": "tamper", "run": {"frames": "none (text only)"}}) == (
        "question only"
    )
