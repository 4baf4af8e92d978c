"""The released MVTamperBench layout: videos by task folder, checked by decoded content.

The release reuses file names across sources (``video_0001.mp4`` is a CLEVRER
clip and a Perception Test clip); the reference toolkit looks a row up as
``<root>/<prefix>/<video>`` with one prefix per task (VLMEvalKit
``vlmeval/dataset/tamperbench.py`` at e8e78f05, ``type_data_list``). Each clip
here is a synthetic video of its own seed, and a recording model reports what
it was shown, so the right clip is checked by its pixels, not its path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.datasets import DatasetError, detect_format, load_dataset
from mmrobust.models.base import Model, Request, Response
from mmrobust.runner import EvalConfig, nothing_scored, run_eval
from mmrobust.status import Status
from mmrobust.store import ResultStore
from tests.synth import make_synthetic_video, synthetic_frame

SIZE = (48, 32)
SEEDS = {  # path under the root -> seed of its content
    "video/clevrer/video_validation/video_0001.mp4": 11,
    "video/perception/videos/video_0001.mp4": 22,
    "video/clevrer/video_validation/video_0002.mp4": 33,
    "video/data0613/star/Charades_v1_480/ABC12.mp4": 44,
    "video/perception/videos/part_a/dup.mp4": 55,
    "video/perception/videos/part_b/dup.mp4": 66,
}


def row(video: str, tamper_type: str = "original") -> dict[str, object]:
    return {
        "video": video,
        "question": "Does this video exhibit any signs of tampering?",
        "candidates": ["Yes", "No"],
        "answer": "No" if tamper_type == "original" else "Yes",
        "tamper_type": tamper_type,
    }


@pytest.fixture(scope="module")
def released_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("released")
    for rel, seed in SEEDS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        make_synthetic_video(root / rel, 12, 25, SIZE, seed=seed)
    tasks = {
        "object_existence": [row("video_0001.mp4"), row("video_0002.mp4")],  # CLEVRER
        # Perception Test: its own video_0001, and a video_0002 it does not have (CLEVRER has one).
        "object_shuffle": [row("video_0001.mp4"), row("video_0002.mp4"), row("dup.mp4")],
        "action_sequence": [row("ABC12.mp4")],  # the reference's data0613 supplementary folder
    }
    (root / "json").mkdir()
    for task, rows in tasks.items():
        (root / "json" / f"{task}.json").write_text(json.dumps(rows))
    return root


def _seed_of(frame: np.ndarray, index: int) -> int:
    """The seed whose synthetic frame ``index`` is nearest to ``frame`` (decoded content)."""
    h, w = frame.shape[:2]
    errs = {
        s: float(np.abs(frame.astype(int) - synthetic_frame(index, w, h, seed=s)).mean())
        for s in SEEDS.values()
    }
    best = min(errs, key=lambda s: errs[s])
    assert errs[best] < 8 < min(e for s, e in errs.items() if s != best)
    return best


class Recorder(Model):
    """Answers "B" and remembers the frames it was shown, by sample id."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: dict[str, tuple[np.ndarray, ...]] = {}
        self.indices: dict[str, tuple[int, ...]] = {}

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        for r in requests:
            self.seen[r.sample_id] = r.frames
            self.indices[r.sample_id] = r.frame_indices
        return [Response(text="B") for _ in requests]


def test_videos_resolve_by_task_folder(released_root: Path) -> None:
    ds = load_dataset(released_root)
    by_id = {s.id: s for s in ds.samples}
    assert by_id["object_existence/video_0001.mp4"].video == (
        released_root / "video/clevrer/video_validation/video_0001.mp4"
    )
    assert by_id["object_shuffle/video_0001.mp4"].video == (
        released_root / "video/perception/videos/video_0001.mp4"
    )
    assert by_id["action_sequence/ABC12.mp4"].video == (
        released_root / "video/data0613/star/Charades_v1_480/ABC12.mp4"
    )
    missing = by_id["object_shuffle/video_0002.mp4"]
    assert missing.video is None and missing.error is not None
    assert "not found in its task folder video/perception/videos/" in missing.error
    assert "another source's folder, video/clevrer/video_validation/: not used" in missing.error
    dup = by_id["object_shuffle/dup.mp4"]
    assert (
        dup.video is None and dup.error and "ambiguous video name 'dup.mp4': 2 files" in dup.error
    )
    # Groups are per source: the two video_0001 clips are different source videos.
    assert by_id["object_shuffle/video_0001.mp4"].group == "perception/videos/video_0001"
    assert by_id["object_existence/video_0001.mp4"].group == "clevrer/video_validation/video_0001"
    assert ds.info["media"] == {
        "root": str(released_root), "found": 4, "missing": 1, "ambiguous": 1, "found_by_name": 0,
    }  # fmt: skip
    assert not any("found by file name" in d for d in ds.defects)


def test_every_sample_sees_its_own_clip(released_root: Path, tmp_path: Path) -> None:
    model = Recorder()
    cfg = EvalConfig(
        data=str(released_root), model="recorder", out=str(tmp_path / "run"), frames=2,
        cache_dir=str(tmp_path / "cache"), n_resamples=0,
    )  # fmt: skip
    result = run_eval(cfg, progress=False, model=model)
    expected = {
        "object_existence/video_0001.mp4": 11,
        "object_existence/video_0002.mp4": 33,
        "object_shuffle/video_0001.mp4": 22,
        "action_sequence/ABC12.mp4": 44,
    }
    assert set(model.seen) == set(expected)
    for sid, seed in expected.items():
        frames, indices = model.seen[sid], model.indices[sid]
        assert len(frames) == 2 and indices == (2, 8)
        assert [_seed_of(f, i) for f, i in zip(frames, indices, strict=True)] == [seed, seed]
    with ResultStore(result.run_dir) as store:
        status = {r.sample.id: r.status for r in store.rows()}
    assert status["object_shuffle/video_0002.mp4"] is Status.DATA_ERROR
    assert status["object_shuffle/dup.mp4"] is Status.DATA_ERROR
    assert result.metrics["status_counts"] == {"ok": 4, "data_error": 2}


def test_one_task_file_or_the_json_folder(released_root: Path) -> None:
    one = released_root / "json" / "object_shuffle.json"
    assert detect_format(one) == "mvtamperbench"
    assert detect_format(released_root / "json") == "mvtamperbench"
    ds = load_dataset(one)
    assert {s.task for s in ds.samples} == {"object_shuffle"} and len(ds) == 3
    assert ds.samples[0].video == released_root / "video/perception/videos/video_0001.mp4"
    assert len(load_dataset(released_root / "json")) == 6


def test_vlmevalkit_tsv_prefix_and_task_type(released_root: Path, tmp_path: Path) -> None:
    tsv = tmp_path / "MVTamperBench.tsv"
    lines = ["index\tvideo\tquestion\tcandidates\tanswer\ttamper_type\ttask_type\tprefix"]
    lines += [
        "0\tvideo_0001.mp4\tq?\t['Yes', 'No']\tNo\toriginal\tObject Existence\tvideo/clevrer/video_validation/",
        "1\tvideo_0001.mp4\tq?\t['Yes', 'No']\tNo\toriginal\tObject Shuffle\tvideo/perception/videos/",
    ]  # fmt: skip
    tsv.write_text("\n".join(lines) + "\n")
    ds = load_dataset(tsv, images=released_root)
    a, b = ds.samples
    assert (a.task, b.task) == ("object_existence", "object_shuffle")
    assert a.video == released_root / "video/clevrer/video_validation/video_0001.mp4"
    assert b.video == released_root / "video/perception/videos/video_0001.mp4"


def test_zero_sample_runs_fail_before_any_model_call(tmp_path: Path) -> None:
    (tmp_path / "json").mkdir()
    bad = [{**row("a.mp4"), "answer": "Maybe"}, {**row("b.mp4"), "answer": "Perhaps"}]
    (tmp_path / "json" / "state_change.json").write_text(json.dumps(bad))
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app, ["eval", "--data", str(tmp_path / "json" / "state_change.json"), "--model",
              "constant:A", "--out", str(out), "-q"],
    )  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "no sample to evaluate" in res.output and "every record was skipped (2;" in res.output
    assert not out.exists()
    with pytest.raises(DatasetError, match="--limit 0 selects none of its"):
        run_eval(EvalConfig(data="mmr-demo", model="constant:A", out=str(out), limit=0))


def test_constant_answer_that_is_no_option_fails_at_once(
    released_root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        ["eval", "--data", str(released_root), "--model", "constant:Z", "--out", str(out), "-q"],
    )
    assert res.exit_code == 2, res.output
    assert "constant:Z answers 'Z', which is neither an option letter (A, B)" in res.output
    assert not (out / "results.sqlite").exists()


def test_nothing_scored_reason() -> None:
    from mmrobust.datasets import Sample
    from mmrobust.store import RunKey, StoredRow

    s = Sample(id="x", question="q", options={"A": "Yes", "B": "No"}, answer="A")
    key = RunKey("m", "p", "f")
    rows = [
        StoredRow(
            sample=s, key=key, status=Status.PARSE_FAIL, raw_text="Z", options=dict(s.options)
        ),
        StoredRow(sample=s, key=key, status=Status.MEDIA_ERROR, error="bad"),
    ]
    reason = nothing_scored(rows)
    assert reason is not None and reason.startswith("no sample could be scored: 2 of 2 rows")
    assert "first reply 'Z' matches no option (A, B)" in reason
    assert nothing_scored([*rows, StoredRow(sample=s, key=key, status=Status.OK)]) is None
    assert nothing_scored([]) is None
