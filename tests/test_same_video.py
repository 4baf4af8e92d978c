"""The same video in two files: content fingerprints, and ``tamper-data``'s split by source.

Three kinds of copy of a bundled clip (64 zero bytes appended: same frames, another sha256; a
re-encode at CRF 40; a remux of the same packets into .mkv) are the same video to a model.
Before, ``tamper-data`` grouped sources by sha256 only, so ``bikes.mp4`` and its padded copy
landed on opposite sides of the split for 2 of 3 seeds. Now each copy is grouped with its
source by :func:`mmrobust.media.fingerprint.same_content` and the group goes to one side,
for every seed; two different clips are never grouped.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import av
import numpy as np
import pytest

from mmrobust.media import iter_frames, probe, sample_clips
from mmrobust.media.fingerprint import (
    ContentIndex,
    content_groups,
    fingerprint_distance,
    frame_hash,
    frames_fingerprint,
    same_content,
    video_fingerprint,
)
from mmrobust.media.writer import VideoWriter
from tests.synth import make_synthetic_video


def _padded(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    with dst.open("ab") as f:
        f.write(b"\0" * 64)
    return dst


def _reencoded(src: Path, dst: Path, crf: int = 40) -> Path:
    info = probe(src)
    with VideoWriter(dst, info.fps, info.width, info.height, crf=crf) as w:
        for frame in iter_frames(src):
            w.write(frame)
    return dst


def _remuxed(src: Path, dst: Path) -> Path:
    with av.open(str(src)) as inp, av.open(str(dst), "w") as out:
        stream = inp.streams.video[0]
        copy = out.add_stream_from_template(stream)
        for packet in inp.demux(stream):
            if packet.dts is not None:
                packet.stream = copy
                out.mux(packet)
    return dst


KINDS = {"padded": _padded, "reencoded": _reencoded, "remuxed": _remuxed}
SUFFIX = {"padded": ".mp4", "reencoded": ".mp4", "remuxed": ".mkv"}


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """carphone_pristine, its three copies, and a synthetic clip (a different video)."""
    folder = tmp_path_factory.mktemp("same-video")
    src = sample_clips()["carphone_pristine"]
    made = {k: KINDS[k](src, folder / f"copy-{k}{SUFFIX[k]}") for k in KINDS}
    made["source"] = src
    made["other"] = make_synthetic_video(folder / "other.mp4", 30, size=(176, 144))
    return made


def test_copies_have_the_same_content_and_other_clips_do_not(copies: dict[str, Path]) -> None:
    prints = {k: video_fingerprint(p) for k, p in copies.items()}
    assert prints["padded"] == prints["source"]  # same frames: the same fingerprint
    assert prints["remuxed"] == prints["source"]
    assert 0 < fingerprint_distance(prints["reencoded"], prints["source"]) <= 0.1
    for kind in KINDS:
        assert same_content(prints[kind], prints["source"]), kind
        assert same_content(copies[kind], copies["source"]), kind  # paths are fingerprinted
        assert not same_content(prints[kind], prints["other"]), kind
    assert fingerprint_distance(prints["other"], prints["source"]) > 0.3
    order = ["source", "other", *KINDS]
    assert content_groups([prints[k] for k in order]) == [[0, 2, 3, 4], [1]]


def test_bundled_clips_are_different_videos() -> None:
    """Unrelated clips are far apart; the two carphone clips are one recording (one degraded)."""
    clips = sample_clips()
    prints = [video_fingerprint(clips[n]) for n in ("bikes", "carphone_pristine")]
    assert fingerprint_distance(*prints) > 0.4 and not same_content(*prints)
    assert same_content(prints[1], clips["carphone_distorted"])


def test_malformed_fingerprints_are_refused() -> None:
    for bad in ("", "dhash1:", "dhash1:zz", "dhash1:00", "abc"):
        with pytest.raises(ValueError, match="not a video fingerprint"):
            fingerprint_distance(bad, bad)
    with pytest.raises(ValueError, match="frames must be at least 1"):
        video_fingerprint(sample_clips()["carphone_pristine"], frames=0)


def test_frame_hashes_and_the_content_index() -> None:
    """Fingerprints built from decoded pictures: 16 picks of the frames, found by the index."""
    ramp = np.tile(np.arange(0, 240, 2, dtype=np.uint8), (90, 1))  # (90, 120): brighter rightwards
    bright, flipped = frame_hash(ramp), frame_hash(np.ascontiguousarray(ramp[:, ::-1]))
    # every cell brighter than its left neighbour: all 64 bits set; mirrored: none
    assert bright[:8] == b"\xff" * 8 and flipped[:8] == b"\0" * 8 and bright[8] == flipped[8]
    assert frame_hash(np.dstack([ramp] * 3)) == bright  # BGR is taken to luma
    clip = frames_fingerprint([bright, flipped])  # 16 picks of 2 frames: 8 of each
    assert clip == "dhash1:" + (bright.hex() * 8) + (flipped.hex() * 8)
    index = ContentIndex([frames_fingerprint([flipped]), clip, frames_fingerprint([bright])])
    assert index.matches(clip) == [1] and ContentIndex([]).matches(clip) == []
    with pytest.raises(ValueError, match="one 9-byte hash per frame"):
        frames_fingerprint([])
    with pytest.raises(ValueError, match="different frame counts"):
        index.matches(frames_fingerprint([bright], frames=8))


@pytest.mark.parametrize("kind", list(KINDS))
def test_tamper_data_never_splits_a_video_across(copies: dict[str, Path], kind: str) -> None:
    """The split step of ``build_tamper_data`` for seeds 0-5: source and copy on one side."""
    from mmrobust.finetune.tamper_split import group_sources, merged_note, split_sources
    from mmrobust.tamper.manifest import sha256_file

    files = [copies["source"], copies[kind], copies["other"]]
    digests = [sha256_file(f) for f in files]
    assert len(set(digests)) == 3  # three files, three sha256: the old split saw 3 sources
    groups = group_sources(files, digests)
    assert groups.merged == [sorted([str(copies["source"]), str(copies[kind])])]
    assert "same video in 2 files" in merged_note(groups.merged[0])
    for seed in range(6):
        train, held = split_sources(files, [groups.key[str(f)] for f in files], 0.5, seed)
        together = {copies["source"], copies[kind]}
        assert together <= set(train) or together <= set(held), (seed, train, held)
        assert [copies["other"]] in (train, held)


@pytest.mark.slow
def test_tamper_data_command_keeps_a_padded_copy_on_one_side(
    copies: dict[str, Path], tmp_path: Path
) -> None:
    """The command end to end, seeds 0-2 (before: opposite sides for some seeds, exit 0, no
    word): the copy is named as the same video, both files on one side, and the manifest
    records the group."""
    import json

    from typer.testing import CliRunner

    from mmrobust.cli import app

    files = [copies["source"], copies["padded"], copies["other"]]
    for seed in range(3):
        out = tmp_path / f"td{seed}"
        args = ["tamper-data", *map(str, files), "--out", str(out), "--seed", str(seed)]
        opts = [
            "--effects",
            "rotation",
            "--tasks",
            "detect",
            "--no-audit",
            "--eval-fraction",
            "0.5",
        ]
        result = CliRunner().invoke(app, [*args, *opts])
        assert result.exit_code == 0, result.output
        named = sorted([str(copies["source"]), str(copies["padded"])], key=str)
        shown = ", ".join(Path(p).name for p in named)  # in path order
        assert (
            f"same video in 2 files ({shown}: equal content fingerprint or bytes): kept on one "
            "side of the split"
        ) in " ".join(result.output.split())
        manifest = json.loads((out / "tamper_data.json").read_text(encoding="utf-8"))
        names = {
            s: {Path(x["path"]).name for x in manifest["sources"][s]} for s in ("train", "eval")
        }
        pair = {"carphone_pristine.mp4", "copy-padded.mp4"}
        side = "train" if pair <= names["train"] else "eval"
        assert names[side] == pair and names[{"train": "eval", "eval": "train"}[side]] == {
            "other.mp4"
        }
        assert manifest["content_groups"] == [
            sorted([str(copies["source"]), str(copies["padded"])])
        ]
        groups = {x["group"] for x in manifest["sources"][side]}
        assert len(groups) == 1
