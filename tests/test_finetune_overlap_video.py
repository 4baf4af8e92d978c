"""``finetune --eval-data`` with a copy of a training clip is refused; another clip is not.

Clips as ``mmrobust tamper-data`` writes them (its own frame writer: 8 segment-centre frames,
JPEG, ``video_metadata``) from the bundled sample clips. Evaluation clips that are a padded
copy (64 zero bytes appended) or a remux (.mkv) of the training clip ``bikes`` give frames of
the same bytes; a dark copy of a dark training clip, re-encoded (CRF 18 -> 34), gives frames
of other bytes that are all flat at 8 x 8, so neither bytes nor thumbnails see it: only the
clips' content fingerprint does (before: 0 of 1 evaluation samples flagged, an "eval loss
(held out)" of a trained-on clip). ``carphone_pristine`` is another clip and passes. The
refusal is one line naming both clips, before torch; ``--allow-overlap`` lets it through.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.finetune.data import load_training_data
from mmrobust.finetune.overlap import MediaKeys, find_overlap, thumbnail
from mmrobust.finetune.tamper_data import TamperDataConfig, _frames
from mmrobust.media import iter_frames, sample_clips
from mmrobust.media.writer import VideoWriter
from tests.test_finetune_guards import _finetune, _no_torch, _one_error
from tests.test_same_video import _padded, _remuxed

QUESTION = "Is this video tampered? Answer with the option's letter.\nA. Yes\nB. No"


def _dark(src: Path, dst: Path, crf: int) -> Path:
    """The first 100 frames of ``src`` at 320 x 136 and 6% brightness, encoded at ``crf``."""
    with VideoWriter(dst, 25, 320, 136, crf=crf) as writer:
        for frame in itertools.islice(iter_frames(src, size=(320, 136)), 100):
            writer.write((frame.astype(np.float32) * 0.06).astype(np.uint8))
    return dst


def _clip_record(side: Path, name: str, video: Path) -> dict[str, Any]:
    """One detect question about ``video``'s frames, as tamper-data writes it."""
    paths, timing = _frames(video, side / "frames" / name, TamperDataConfig())
    return {
        "id": f"detect/{side.name}/{name}",
        "image": [str(p.relative_to(side)) for p in paths],
        "video_metadata": timing,
        "conversations": [
            {"from": "human", "value": "<image>\n" * len(paths) + QUESTION},
            {"from": "gpt", "value": "B"},
        ],
    }


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``train/llava.json`` (bikes, a dark bikes) and one file per evaluation clip."""
    root = tmp_path_factory.mktemp("overlap-video")
    clips = sample_clips()
    train, held = root / "train", root / "eval"
    videos = root / "videos"
    for folder in (train, held, videos):
        folder.mkdir()
    records = [
        _clip_record(train, "bikes", clips["bikes"]),
        _clip_record(train, "dark", _dark(clips["bikes"], videos / "dark18.mp4", 18)),
    ]
    (train / "llava.json").write_text(json.dumps(records), encoding="utf-8")
    copies = {
        "padded": _padded(clips["bikes"], videos / "padded.mp4"),
        "remuxed": _remuxed(clips["bikes"], videos / "remuxed.mkv"),
        "dark": _dark(clips["bikes"], videos / "dark34.mp4", 34),
        "other": clips["carphone_pristine"],
    }
    for name, video in copies.items():
        record = _clip_record(held, name, video)
        (held / f"{name}.json").write_text(json.dumps([record]), encoding="utf-8")
    return train, held


def test_copies_of_a_training_clip_are_refused_and_another_clip_is_not(
    sides: tuple[Path, Path],
) -> None:
    train_dir, held = sides
    train, _ = load_training_data([train_dir / "llava.json"])
    assert [c.id for c in train] == ["llava:detect/train/bikes", "llava:detect/train/dark"]
    assert all(c.video is not None and len(c.images) == 8 for c in train)
    for name in ("padded", "remuxed"):  # the same decoded frames: the same JPEG bytes
        evaluation, _ = load_training_data([held / f"{name}.json"])
        found = find_overlap(train, evaluation)
        assert (found.samples, found.same_id, found.same_media) == (1, 0, 1), name
        assert found.why == (
            f"{held / 'frames' / name / '000.jpg'} is the same picture as "
            f"{train_dir / 'frames' / 'bikes' / '000.jpg'} of training 'llava:detect/train/bikes'"
        )

    # the dark re-encode: every frame flat at 8 x 8 and of other bytes; the clip's fingerprint
    evaluation, _ = load_training_data([held / "dark.json"])
    frames = [*evaluation[0].images, *train[1].images]
    assert all(thumbnail(p.read_bytes()) is None for p in frames)
    media = MediaKeys()
    assert not {media.of(p)[0] for p in evaluation[0].images} & {
        media.of(p)[0] for p in train[1].images
    }
    found = find_overlap(train, evaluation)
    assert (found.samples, found.same_media, found.same_content) == (1, 1, 0)
    assert found.why == (
        f"the clip {held / 'frames' / 'dark'} is the same video as {train_dir / 'frames' / 'dark'} "
        "of training 'llava:detect/train/dark' (content fingerprint)"
    )
    assert str(media.clip(evaluation[0])).startswith("dhash1:")

    other, _ = load_training_data([held / "other.json"])
    assert find_overlap(train, other).line() is None


def test_the_refusal_is_one_line_before_torch_and_allow_overlap_passes(
    sides: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    train_dir, held = sides
    out = tmp_path / "out"
    _no_torch(monkeypatch)
    data = ["--model", "hf:org/m", "--data", str(train_dir / "llava.json"), "--out", str(out)]
    line = _one_error(_finetune(*data, "--eval-data", str(held / "dark.json")))
    assert line == (
        "error: --eval-data overlaps the training data: 1 of 1 evaluation samples are also "
        "trained on (same media 1; e.g. 'dark:detect/eval/dark': the clip "
        f"{held / 'frames' / 'dark'} is the same video as {train_dir / 'frames' / 'dark'} of "
        "training 'llava:detect/train/dark' (content fingerprint)), so its loss would not be "
        "held out; evaluate on other samples, or pass --allow-overlap"
    )
    assert not out.exists()

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data[1] = "hf:mmrobust-test/not-cached-anywhere"
    # another clip passes the check, and so does the copy with --allow-overlap: both go on
    # to the model, which is not there
    for flags in (
        ["--eval-data", str(held / "other.json")],
        ["--eval-data", str(held / "dark.json"), "--allow-overlap"],
    ):
        result = CliRunner().invoke(app, ["finetune", *data, *flags, "--device", "cpu", "-q"])
        assert result.exit_code == 2 and "overlaps" not in result.output, result.output
        assert "HF_HUB_OFFLINE is set" in result.output
        assert not out.exists()
