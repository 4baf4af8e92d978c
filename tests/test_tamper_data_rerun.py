"""``mmrobust tamper-data`` re-run into the same ``--out`` with another setting.

Two bundled clips (``bikes``, ``carphone_pristine``; one held out), one effect, the detect
question, no audit. Built once with the defaults, then again with one setting changed:
codec control, ``--frames``, the effect set, ``--seed`` (which swaps the two sources between
the sides of the split) and ``--durations``. After each re-run the folder holds exactly what
the new settings make: every build's manifest has one original and one clip per selected
effect of that side's sources only, and no other clip file; every record's frames are the
JPEGs ``sample_clip`` gives for the clip now in the build under the new frame policy; and
the command says which settings changed. Before, codec control and ``--frames`` kept the
frames of the earlier clips, a left-out effect stayed in the training and held-out sets, and
a new seed stopped with "2 source(s) on both sides of the split" after building.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import sample_clips

pytestmark = pytest.mark.slow

BASE = ("--effects", "rotation", "--eval-fraction", "0.5", "--tasks", "detect", "--no-audit")


def _tamper_data(out: Path, *extra: str) -> Any:
    clips = sample_clips()
    args = ["tamper-data", str(clips["bikes"]), str(clips["carphone_pristine"]), "--out", str(out)]
    result = CliRunner().invoke(app, [*args, *BASE, *extra])
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The defaults' build (codec control on, 8 frames, seed 0, middle 1 s), made once."""
    out = tmp_path_factory.mktemp("tamper-data-rerun") / "td"
    _tamper_data(out)
    return out


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*.*")}


def _holds_what_the_settings_make(out: Path, effects: set[str], n_frames: int) -> None:
    from mmrobust.media.frames import sample_clip
    from mmrobust.media.jpeg import FrameEncoding
    from mmrobust.media.sampling import FramePolicy
    from mmrobust.tamper.manifest import read_manifest

    manifest = json.loads((out / "tamper_data.json").read_text(encoding="utf-8"))
    assert manifest["split_disjoint"]
    videos: dict[tuple[str, str, str], Path] = {}
    for build in manifest["builds"]:
        side, folder = build["side"], Path(build["folder"])
        entries = read_manifest(folder)
        sources = {s["sha256"] for s in manifest["sources"][side]}
        assert {e.tamper_type for e in entries} == {"original", *effects}, build
        assert {e.source_sha256 for e in entries} == sources, build
        assert len(entries) == len(sources) * (1 + len(effects))
        on_disk = {str(p.relative_to(folder)) for p in (folder / "videos").rglob("*.mp4")}
        assert on_disk == {e.video for e in entries}, build  # no clip of an earlier build
        videos.update(((side, build["tag"], e.id), folder / e.video) for e in entries)
    policy = FramePolicy(n_frames=n_frames)
    for side in ("train", "eval"):
        records = json.loads((out / side / "llava.json").read_text(encoding="utf-8"))
        assert {r["meta"]["effect"] for r in records} == {"original", *effects}
        for record in records:
            _task, tag, sample_id = record["id"].split("/")
            video = videos[(side, tag, sample_id)]
            shown = [(out / side / p).read_bytes() for p in record["image"]]
            assert shown == list(sample_clip(video, policy, FrameEncoding()).jpegs), record["id"]


@pytest.mark.parametrize(
    ("first", "again", "change", "effects", "n_frames"),
    [
        pytest.param(("--no-codec-control",), (), "codec_control: False -> True", {"rotation"}, 8,
                     id="codec-control"),
        pytest.param((), ("--frames", "4"), "policy.n_frames: 8 -> 4", {"rotation"}, 4,
                     id="frames"),
        pytest.param((), ("--effects", "masking"), "effects: ['rotation'] -> ['masking']",
                     {"masking"}, 8, id="effects"),
        pytest.param((), ("--seed", "1"), "seed: 0 -> 1", {"rotation"}, 8, id="seed-swaps-split"),
        pytest.param((), ("--durations", "0.5"), "durations: [1.0] -> [0.5]", {"rotation"}, 8,
                     id="durations"),
    ],
)  # fmt: skip
def test_a_rerun_with_another_setting_rebuilds_what_it_changes(
    built: Path,
    tmp_path: Path,
    first: tuple[str, ...],
    again: tuple[str, ...],
    change: str,
    effects: set[str],
    n_frames: int,
) -> None:
    out = tmp_path / "td"
    if first:
        _tamper_data(out, *first)
    else:
        shutil.copytree(built, out)
    result = _tamper_data(out, *again)
    _holds_what_the_settings_make(out, effects, n_frames)
    assert f"{out} was built with other settings ({change}): rebuilding" in result.output


def test_the_same_command_again_keeps_every_clip_and_frame(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "td"
    shutil.copytree(built, out)
    before = _files(out)
    result = _tamper_data(out)
    assert "other settings" not in result.output
    after = _files(out)
    unchanged = {k for k in before if before[k] == after.get(k)}
    written = {"tamper_data.json", "train/llava.json", "eval/llava.json"}  # always rewritten
    assert sorted(set(before) - unchanged) == sorted(  # every clip and frame kept as it was
        k for k in before if k in written or k.endswith(("manifest.jsonl", "errors.jsonl"))
    )
    _holds_what_the_settings_make(out, {"rotation"}, 8)


def test_changed_settings_names_each_setting_that_changes_clips_or_frames() -> None:
    from mmrobust.finetune.tamper_data import TamperDataConfig, changed_settings, settings_of
    from mmrobust.media.sampling import FramePolicy

    old = TamperDataConfig(effects=("rotation",), tasks=("detect",))
    previous = {
        "settings": settings_of(old),
        "sources": {"train": [{"sha256": "a"}], "eval": [{"sha256": "b"}]},
    }
    assert changed_settings(previous, old, ["b", "a"]) == []
    same_clips = TamperDataConfig(effects=("rotation",), tasks=("detect", "when"), jobs=2)
    assert changed_settings(previous, same_clips, ["a", "b"]) == []  # questions, workers only
    new = TamperDataConfig(
        effects=("masking",), codec_control=False, policy=FramePolicy(n_frames=4), seed=3
    )
    assert changed_settings(previous, new, ["a", "c"]) == [
        "effects: ['rotation'] -> ['masking']",
        "seed: 0 -> 3",
        "codec_control: True -> False",
        "policy.n_frames: 8 -> 4",
        "sources: 1 left out, 1 new",
    ]
