"""Data inputs the loaders trusted too much (issue 27 items 7, 11, 12; issue 28 item 3;
issue 33 items 6, 7; issue 30's mistyped local path). Each test failed on the code before it.

Zips are built in the test (``zipfile``); the released-layout snapshot mimics the hub
cache: ``video/<source>.zip`` is a symlink to ``blobs/<sha256>``, so a new revision is
another blob.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

from mmrobust.datasets import DatasetError, detect_format, load_dataset
from mmrobust.datasets.hub import prepare_released
from mmrobust.datasets.mmr import load_mmr

# --- hub unzip (issue 27 item 7) ------------------------------------------------------


def _zip(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a repeated name is written twice (zipfile warns)
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def _snapshot(root: Path, zips: dict[str, bytes]) -> Path:
    """A snapshot folder ``root/snap`` whose ``video/*.zip`` link to ``root/blobs/<sha>``."""
    snap = root / "snap"
    (snap / "json").mkdir(parents=True, exist_ok=True)
    (snap / "json" / "object_shuffle.json").write_text("[]")
    blobs = root / "blobs"
    blobs.mkdir(exist_ok=True)
    for rel, data in zips.items():
        blob = blobs / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snap / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(blob)
    return snap


def test_unzip_refuses_a_member_outside_its_own_folder(tmp_path: Path) -> None:
    snap = _snapshot(
        tmp_path,
        {
            "video/clevrer.zip": _zip([("clevrer/video_validation/video_0001.mp4", b"CLEVRER")]),
            "video/perception.zip": _zip(
                [
                    ("perception/videos/video_0001.mp4", b"PERCEPTION"),
                    ("clevrer/video_validation/video_0001.mp4", b"WRONG"),
                ]
            ),
        },
    )
    dest = tmp_path / "unzipped"
    with pytest.raises(DatasetError, match=r"perception\.zip.*outside the zip's own folder"):
        prepare_released(snap, dest)
    clevrer = dest / "video/clevrer/video_validation/video_0001.mp4"
    assert clevrer.read_bytes() == b"CLEVRER"  # never overwritten by another source's zip
    assert not (dest / "video/perception").exists()


def test_unzip_refuses_a_forged_marker(tmp_path: Path) -> None:
    marker = {"blob": "x", "size": 1, "members": 1}
    snap = _snapshot(
        tmp_path,
        {
            "extra.zip": _zip(
                [(".mmrobust-unzipped/video__clevrer.zip.json", json.dumps(marker).encode())]
            )
        },
    )
    with pytest.raises(DatasetError, match="outside the zip's own folder"):
        prepare_released(snap, tmp_path / "unzipped")
    assert not (tmp_path / "unzipped/.mmrobust-unzipped/video__clevrer.zip.json").exists()


def test_unzip_refuses_duplicate_member_names(tmp_path: Path) -> None:
    dup = _zip([("perception/videos/a.mp4", b"first"), ("perception/videos/a.mp4", b"second")])
    snap = _snapshot(tmp_path, {"video/perception.zip": dup})
    with pytest.raises(DatasetError, match=r"more than once.*perception/videos/a\.mp4"):
        prepare_released(snap, tmp_path / "unzipped")


def test_a_new_revision_replaces_the_tree(tmp_path: Path) -> None:
    dest = tmp_path / "unzipped"
    old = _zip([("perception/videos/a.mp4", b"old a"), ("perception/videos/b.mp4", b"old b")])
    assert (
        prepare_released(_snapshot(tmp_path, {"video/perception.zip": old}), dest)["unzipped_now"]
        == 1
    )
    new = _zip([("perception/videos/a.mp4", b"new a")])
    assert (
        prepare_released(_snapshot(tmp_path, {"video/perception.zip": new}), dest)["unzipped_now"]
        == 1
    )
    assert (dest / "video/perception/videos/a.mp4").read_bytes() == b"new a"
    assert not (dest / "video/perception/videos/b.mp4").exists()  # no stale file of the old zip


def test_deleted_files_under_a_marker_are_unzipped_again(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path, {"video/perception.zip": _zip([("perception/videos/a.mp4", b"A")])})
    dest = tmp_path / "unzipped"
    assert prepare_released(snap, dest)["unzipped_now"] == 1
    clip = dest / "video/perception/videos/a.mp4"
    clip.unlink()
    assert prepare_released(snap, dest)["unzipped_now"] == 1
    assert clip.read_bytes() == b"A"
    clip.write_bytes(b"AA")  # another size: not the zip's file
    assert prepare_released(snap, dest)["unzipped_now"] == 1
    assert clip.read_bytes() == b"A"
    assert prepare_released(snap, dest)["unzipped_now"] == 0


def _broken_deflate() -> bytes:
    payload = os.urandom(1 << 14) + b"x" * (1 << 14)
    data = bytearray(_zip([("perception/videos/a.mp4", payload)], zipfile.ZIP_DEFLATED))
    start = 30 + len("perception/videos/a.mp4")  # local header, then the deflate stream
    data[start : start + 64] = b"\xff" * 64
    return bytes(data)


def test_a_broken_deflate_stream_is_one_line(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path, {"video/perception.zip": _broken_deflate()})
    dest = tmp_path / "unzipped"
    with pytest.raises(DatasetError, match=r"perception\.zip: the zip is damaged") as err:
        prepare_released(snap, dest)
    assert "\n" not in str(err.value)
    assert not (dest / "video/perception").exists()
    assert not any((dest / ".mmrobust-staging").glob("*"))


def test_mmr_image_zip_follows_the_same_rules(tmp_path: Path) -> None:
    folder = tmp_path / "hf"
    folder.mkdir()
    record = {"id": "x/y/01", "image": "x/y/01.jpg", "question_type": "POS", "ground_truth": "A",
              "question": "What?\nA. a\nB. b\nC. c\nD. d"}  # fmt: skip
    (folder / "MMR-benchmark.json").write_text(json.dumps([record]))
    (folder / "images.zip").write_bytes(_zip([("x/y/01.jpg", b"1"), ("x/y/01.jpg", b"2")]))
    with pytest.raises(DatasetError, match="more than once"):
        load_mmr(folder, cache_dir=tmp_path / "cache")


# --- non-regular files (issue 27 item 11) --------------------------------------------


def test_a_fifo_as_data_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "data.jsonl"
    os.mkfifo(fifo)
    code = (
        "import sys\nfrom mmrobust.datasets import DatasetError, load_dataset\n"
        "try:\n    load_dataset(sys.argv[1])\nexcept DatasetError as e:\n    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:  # the old code opened the pipe and waited for a writer for ever
        proc = subprocess.run(
            [sys.executable, "-c", code, str(fifo)],
            capture_output=True, text=True, timeout=60, env=env, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("load_dataset blocked on a FIFO")
    assert "is a named pipe (FIFO), not a dataset file" in proc.stdout, proc.stderr


def test_a_device_as_data_has_its_own_reason() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero on this system")
    with pytest.raises(DatasetError, match="/dev/zero is a character device"):
        load_dataset("/dev/zero")
    with pytest.raises(DatasetError, match="character device"):
        load_dataset("/dev/zero", format="jsonl")  # never read (it would never end)


def test_a_folder_named_like_a_video(tmp_path: Path) -> None:
    folder = tmp_path / "clip.mp4"
    folder.mkdir()
    with pytest.raises(DatasetError, match="folder named like a video file"):
        detect_format(folder)
    rec = {"id": "c", "video": "clip.mp4", "video_sha256": "0" * 64, "tamper_type": "original"}
    (tmp_path / "manifest.jsonl").write_text(json.dumps(rec) + "\n")
    (sample,) = load_dataset(tmp_path).samples
    assert sample.error == f"video path is a folder, not a file: {folder}"


# --- JSONL records (issue 27 item 12) ------------------------------------------------


def _jsonl(tmp_path: Path, records: list[dict[str, object]], *, bom: bool = False) -> Path:
    path = tmp_path / "q.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in records)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def test_jsonl_more_than_26_options_is_a_record_defect(tmp_path: Path) -> None:
    many = {
        "id": "many",
        "question": "Pick",
        "options": [f"o{i}" for i in range(30)],
        "answer": "o29",
    }
    ok = {"id": "ok", "question": "Pick", "options": ["x", "y"], "answer": "y"}
    ds = load_dataset(_jsonl(tmp_path, [many, ok]))
    assert [s.id for s in ds.samples] == ["ok"] and ds.samples[0].answer == "B"
    assert any("q.jsonl:1: skipped" in d and "30 options" in d for d in ds.defects), ds.defects
    assert not any(set(s.options) & set("[\\]^") for s in ds.samples)


def test_jsonl_answer_text_of_two_options_is_a_record_defect(tmp_path: Path) -> None:
    twice = {"id": "t", "question": "Which?", "options": ["cat", "dog", "cat"], "answer": "cat"}
    by_letter = {"id": "l", "question": "Which?", "options": ["cat", "dog", "cat"], "answer": "C"}
    fine = {"id": "f", "question": "Which?", "options": ["cat", "dog", "cat"], "answer": "dog"}
    ds = load_dataset(_jsonl(tmp_path, [twice, by_letter, fine]))
    assert [(s.id, s.answer) for s in ds.samples] == [("f", "B")]
    assert sum("same text" in d for d in ds.defects) == 2, ds.defects


def test_jsonl_with_a_byte_order_mark_keeps_its_first_record(tmp_path: Path) -> None:
    recs = [{"id": str(i), "question": "Q", "options": ["a", "b"], "answer": "a"} for i in range(3)]
    ds = load_dataset(_jsonl(tmp_path, recs, bom=True))
    assert [s.id for s in ds.samples] == ["0", "1", "2"] and ds.defects == []


# --- released layouts (issue 28 item 3) ----------------------------------------------


def _released(root: Path, task: str, videos: list[str]) -> None:
    (root / "json").mkdir(parents=True)
    rows = [{"video": v, "question": "q?", "candidates": ["Yes", "No"], "answer": "No",
             "tamper_type": "original"} for v in videos]  # fmt: skip
    (root / "json" / f"{task}.json").write_text(json.dumps(rows))


def test_a_symlinked_video_folder_is_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "disk2" / "video"
    nested = elsewhere / "clevrer" / "video_validation" / "part1"
    nested.mkdir(parents=True)
    (nested / "video_0007.mp4").write_bytes(b"x")
    (elsewhere / "loop").symlink_to(elsewhere)  # a link loop is indexed once
    root = tmp_path / "data"
    _released(root, "object_existence", ["video_0007.mp4"])
    (root / "video").symlink_to(elsewhere, target_is_directory=True)
    ds = load_dataset(root)
    (sample,) = ds.samples
    assert sample.error is None and sample.video is not None
    assert sample.video.resolve() == (nested / "video_0007.mp4").resolve()
    assert ds.info["media"]["found_by_name"] == 0


def test_own_task_names_in_their_own_folder_give_no_misplaced_warning(tmp_path: Path) -> None:
    _released(tmp_path, "my_task", ["a.mp4"])
    (tmp_path / "video" / "my_task").mkdir(parents=True)
    (tmp_path / "video" / "my_task" / "a.mp4").write_bytes(b"x")
    ds = load_dataset(tmp_path)
    assert ds.samples[0].video == tmp_path / "video" / "my_task" / "a.mp4"
    assert not any("outside their task folder" in d for d in ds.defects), ds.defects
    assert ds.info["media"]["found_by_name"] == 0


def test_own_task_found_by_name_says_it_has_no_known_folder(tmp_path: Path) -> None:
    _released(tmp_path, "my_task", ["a.mp4"])
    (tmp_path / "misc").mkdir()
    (tmp_path / "misc" / "a.mp4").write_bytes(b"x")
    ds = load_dataset(tmp_path)
    assert not any("outside their task folder" in d for d in ds.defects), ds.defects
    assert any("no known source folder (my_task)" in d for d in ds.defects), ds.defects


# --- paths a newcomer mistypes (issue 33 item 6, issue 30) ----------------------------


def test_data_at_a_tamper_sets_videos_folder_names_the_manifest(tmp_path: Path) -> None:
    tset = tmp_path / "tamper-set"
    (tset / "videos" / "clip1").mkdir(parents=True)
    (tset / "videos" / "clip1" / "original.mp4").write_bytes(b"x")
    (tset / "manifest.jsonl").write_text("")
    for folder in (tset / "videos", tset / "videos" / "clip1"):
        with pytest.raises(DatasetError, match=f"the manifest is in {tset}"):
            detect_format(folder)


def test_a_mistyped_local_path_is_not_a_hub_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mmrobust-demo" / "tamper-set").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        FileNotFoundError,
        match=r"tamper-sett: no such folder.*did you mean mmrobust-demo/tamper-set\?",
    ):
        detect_format("mmrobust-demo/tamper-sett")
    with pytest.raises(FileNotFoundError, match="no such folder"):
        load_dataset("mmrobust-demo/tamper-sett", format="mmr")


# --- the media hint once (issue 33 item 7) --------------------------------------------


def test_the_media_hint_is_printed_once(tmp_path: Path) -> None:
    from mmrobust.run.checks import check_usable
    from mmrobust.run.config import EvalConfig

    record = {"id": "x/y/01", "image": "page.jpg", "question_type": "POS", "ground_truth": "A",
              "question": "What?\nA. a\nB. b\nC. c\nD. d"}  # fmt: skip
    (tmp_path / "MMR-benchmark.json").write_text(json.dumps([record]))
    ds = load_dataset(tmp_path / "MMR-benchmark.json")
    config = EvalConfig(data=str(tmp_path), model="constant:A", out=str(tmp_path / "run"))
    with pytest.raises(DatasetError) as err:
        check_usable(ds.samples, config)
    assert "image not found: page.jpg" in str(err.value)
    assert str(err.value).count("--text-only") == 1, str(err.value)


def test_a_bare_mistyped_name_gets_the_nearest_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tamper-set").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"did you mean tamper-set\?"):
        detect_format("tamper-sett")


def test_unzip_replaces_a_linked_tree_without_touching_its_target(tmp_path: Path) -> None:
    """A user's link in place of a zip's tree is dropped; the folder it names is kept."""
    mine = tmp_path / "my-videos"
    mine.mkdir()
    (mine / "keep.mp4").write_bytes(b"mine")
    dest = tmp_path / "unzipped"
    (dest / "video").mkdir(parents=True)
    (dest / "video" / "perception").symlink_to(mine, target_is_directory=True)
    snap = _snapshot(tmp_path, {"video/perception.zip": _zip([("perception/videos/a.mp4", b"A")])})
    assert prepare_released(snap, dest)["unzipped_now"] == 1
    assert (dest / "video/perception/videos/a.mp4").read_bytes() == b"A"
    assert not (dest / "video/perception").is_symlink()
    assert (mine / "keep.mp4").read_bytes() == b"mine"


def test_unzip_reads_a_backslash_in_a_member_name_as_a_separator(tmp_path: Path) -> None:
    snap = _snapshot(
        tmp_path, {"video/perception.zip": _zip([("perception\\videos\\a.mp4", b"A")])}
    )
    dest = tmp_path / "unzipped"
    assert prepare_released(snap, dest)["unzipped_now"] == 1
    assert (dest / "video/perception/videos/a.mp4").read_bytes() == b"A"
    assert prepare_released(snap, dest)["unzipped_now"] == 0


def test_an_mmr_hub_snapshot_unzips_its_images_by_the_same_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hf:<owner>/<name>`` holding an MMR file and an image zip, offline from a hub cache."""
    import huggingface_hub.constants as hub_constants

    from tests.test_hub import populate_hub_cache

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("MMROBUST_CACHE", str(tmp_path / "mm"))
    records = [
        {"id": "x/y/01", "image": "x/y/01.jpg", "question_type": t, "ground_truth": gt,
         "question": "What?\nA. a\nB. b\nC. c\nD. d"}
        for t, gt in (("POS", "A"), ("NEG", "B"))
    ]  # fmt: skip
    files = {
        "MMR-benchmark.json": json.dumps(records).encode(),
        "images.zip": _zip([("images/x/y/01.jpg", b"jpg")]),
    }
    repo = "BAAI/Multimodal-Robustness-Benchmark"
    populate_hub_cache(tmp_path / "hf", repo, files, "c" * 40)
    ds = load_dataset(f"hf:{repo}", hub_cache=tmp_path / "hf")
    assert ds.benchmark == "mmr" and [s.error for s in ds.samples] == [None, None]
    image = ds.samples[0].image
    assert image is not None and image.read_bytes() == b"jpg"
    unzipped = tmp_path / "mm" / "unzipped"
    assert image.is_relative_to(unzipped)
    (marker,) = unzipped.glob("mmr-images-*/.mmrobust-unzipped/images.zip.json")
    assert json.loads(marker.read_text())["files"] == {"images/x/y/01.jpg": 3}
