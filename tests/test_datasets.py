"""Loaders: tamper manifest, MVTamperBench layout, VLMEvalKit TSV, JSONL; format detection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmrobust.datasets import DatasetError, detect_format, load_dataset
from mmrobust.prompts import STRUCTURED_QUESTION
from mmrobust.registry import UnknownNameError
from tests.shared_data import MMR_JSON, needs_shared

MMR_RECORD = {
    "id": "character/character/01",
    "image": "character/character/01.jpg",
    "question": "Is there 'E SWEETWAETR' in the green sign?\nA. It is 'E SWEETWAETR' in the green "
    "sign.\nB. It is 'E SWEETWAETR' in the red sign.\nC. It is 'DO NOT ENTER' in the green "
    "sign.\nD. It is 'E SWEETWATER' in the green sign.",
    "ground_truth": "D",
    "question_type": "NEG",
}
"""The first record of the released MMR-benchmark.json, verbatim."""


def manifest_line(**kw: object) -> str:
    rec: dict[str, object] = {
        "id": "s1_original", "source": "s1.mp4", "source_sha256": "aa", "video": "s1.mp4",
        "video_sha256": "bb", "tamper_type": "original", "params": {}, "position": None,
        "duration_s": None, "window_source": None, "window_output": None, "fps": "30000/1001",
        "frames_source": 120, "frames_output": 120, "width": 176, "height": 144, "padded": False,
        "encoder": "libx264", "seed": 0, "donor": None, "task": None, "mmrobust_version": "0.1.0",
    }  # fmt: skip
    rec.update(kw)
    return json.dumps(rec)


def test_manifest_loader(tmp_path: Path) -> None:
    (tmp_path / "s1.mp4").write_bytes(b"x")
    (tmp_path / "s1_masking.mp4").write_bytes(b"x")
    win = {"start_frame": 45, "end_frame": 75, "start_s": 1.5, "end_s": 2.5}
    lines = [
        manifest_line(),
        manifest_line(
            id="s1_masking",
            video="s1_masking.mp4",
            tamper_type="masking",
            position="middle",
            duration_s=1.0,
            window_output=win,
            task="t",
        ),
        manifest_line(id="s1_rotation", video="gone.mp4", tamper_type="rotation"),
        "{not json",
        manifest_line(),  # duplicate id
    ]
    (tmp_path / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "errors.jsonl").write_text(
        json.dumps({"source": "bad.avi", "reason": "no frames"}) + "\n"
    )
    assert detect_format(tmp_path) == "manifest"
    ds = load_dataset(tmp_path)
    assert ds.benchmark == "tamper" and len(ds) == 3
    orig, masked, missing = ds.samples
    assert (orig.answer, masked.answer) == ("B", "A")
    assert orig.options == {"A": "Yes", "B": "No"} and orig.question == STRUCTURED_QUESTION
    assert masked.window is not None and masked.window.start_frame == 45
    assert masked.group == orig.group == "aa" and masked.task == "t"
    assert masked.meta["position"] == "middle" and masked.video == tmp_path / "s1_masking.mp4"
    assert missing.error and "missing" in missing.error
    assert any(":4: skipped" in d for d in ds.defects)
    assert any("duplicate sample id" in d for d in ds.defects)
    assert any("bad.avi" in d for d in ds.defects)
    assert len(ds.data_hash) == 64


def test_mvtamperbench_own_task_resolves_by_unique_name(tmp_path: Path) -> None:
    (tmp_path / "json").mkdir()
    (tmp_path / "clevrer" / "video_validation").mkdir(parents=True)
    (tmp_path / "clevrer" / "video_validation" / "v1.mp4").write_bytes(b"x")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "dup.mp4").write_bytes(b"x")
    (tmp_path / "b" / "dup.mp4").write_bytes(b"x")
    (tmp_path / "tam").mkdir()
    (tmp_path / "tam" / "v1_middle_tampered_rotate_1sec.mp4").write_bytes(b"x")
    rows = [
        {"video": "v1.mp4", "question": "q?", "candidates": ["Yes", "No"], "answer": "No", "tamper_type": "original"},
        {"video": "v1_middle_tampered_rotate_1sec.mp4", "question": "q?", "candidates": ["Yes", "No"], "answer": "Yes", "tamper_type": "rotate"},
        {"video": "dup.mp4", "question": "q?", "candidates": ["Yes", "No"], "answer": "No", "tamper_type": "original"},
        {"video": "nowhere.mp4", "question": "q?", "candidates": ["Yes", "No"], "answer": "No", "tamper_type": "original"},
        {"video": "x.mp4", "question": "q?", "candidates": ["Yes", "No"], "answer": "Maybe"},
    ]  # fmt: skip
    # A task of your own (no known source folder): videos are found by unique file name,
    # and that is reported (the released tasks: tests/test_released_layout.py).
    (tmp_path / "json" / "my_task.json").write_text(json.dumps(rows))
    assert detect_format(tmp_path) == "mvtamperbench"
    ds = load_dataset(tmp_path)
    assert len(ds) == 4
    orig, rot, dup, nowhere = ds.samples
    assert orig.video is not None and orig.video.name == "v1.mp4" and orig.answer == "B"
    assert rot.tamper_type == "rotation" and rot.answer == "A" and rot.group == "v1" == orig.group
    assert rot.meta["position"] == "middle" and rot.meta["duration_s"] == 1.0
    assert rot.task == "my_task" and rot.meta["original_video"] == str(orig.video)
    assert dup.error and "ambiguous" in dup.error
    assert any("2 video(s) found by file name" in d for d in ds.defects)
    assert ds.info["media"]["found_by_name"] == 2 and ds.info["media"]["missing"] == 1
    assert nowhere.error and "not found" in nowhere.error
    assert any("[4]: skipped" in d for d in ds.defects)


def test_vlmevalkit_tsv(tmp_path: Path) -> None:
    (tmp_path / "v2.mp4").write_bytes(b"x")
    tsv = tmp_path / "MVTamperBench.tsv"
    tsv.write_text(
        "index\tvideo\tquestion\tcandidates\tanswer\ttamper_type\ttask\n"
        "0\tv2\tq?\t['Yes', 'No']\tYes\tmasking\tmoving_count\n"
        "1\tv3\tq?\t['Yes', 'No']\tNo\toriginal\tmoving_count\n"
    )
    ds = load_dataset(tsv)
    assert [s.id for s in ds.samples] == ["0", "1"]
    assert ds.samples[0].video == tmp_path / "v2.mp4" and ds.samples[0].answer == "A"
    assert ds.samples[1].error is not None and ds.samples[0].task == "moving_count"


def test_jsonl_generic(tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text(
        json.dumps({"id": "a", "question": "2+2?", "options": ["3", "4"], "answer": "4", "note": 1})
        + "\n"
        + json.dumps({"question": "q", "options": {"A": "x"}, "answer": "Z"})
        + "\n\n"
        + json.dumps(
            {
                "id": "c",
                "question": "q",
                "options": {"A": "x", "B": "y"},
                "answer": "A",
                "image": "nope.png",
            }
        )
        + "\n"
    )
    ds = load_dataset(f)
    assert ds.benchmark == "generic" and [s.id for s in ds.samples] == ["a", "c"]
    assert ds.samples[0].answer == "B" and ds.samples[0].meta == {"note": 1}
    assert ds.samples[1].error and "missing" in ds.samples[1].error
    assert any(":2: skipped" in d for d in ds.defects)


@needs_shared(MMR_JSON)
def test_detects_the_released_mmr_file() -> None:
    assert detect_format(MMR_JSON) == "mmr"


def test_detects_mmr_array_and_fails_clearly(tmp_path: Path) -> None:
    # the released file's shape: a JSON array of records with question/answer/category
    array = tmp_path / "mmr.json"
    array.write_text(json.dumps([MMR_RECORD]))
    assert detect_format(array) == "mmr"
    assert detect_format("mmr-demo") == "mmr"
    with pytest.raises(FileNotFoundError):
        load_dataset(tmp_path / "absent.jsonl")
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(DatasetError, match="--format"):
        load_dataset(tmp_path / "x.csv")
    with pytest.raises(UnknownNameError, match="Did you mean: manifest"):
        load_dataset(tmp_path, format="manifst")
