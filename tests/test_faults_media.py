"""Broken videos scored as if they were whole (issue 27 item 12): every reader (probe, the
frames a model is shown, the forensic detector's frames, the tamper builder) now refuses or
accepts a file the same way, through the shared open/decode code; an unreadable source given by
name is an ``errors.jsonl`` line, not the end of the build."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import MediaError, iter_frames, probe
from mmrobust.media.frames import sample_clip
from mmrobust.media.jpeg import FrameEncoding
from mmrobust.media.sampling import FramePolicy
from mmrobust.models.base import Model, Request, Response
from mmrobust.run import EvalConfig, run_eval
from tests.media_faults import (
    image_as_video,
    raw_h264,
    truncate_after,
    write_mp4,
    zero_mdhd_timescale,
    zero_stts_deltas,
)
from tests.runs import stored_rows
from tests.synth import make_synthetic_video, read_frame_code

REASONS = {
    "truncated": "truncated file: the container lists 90 frames, only 35 decode",
    "stts0": "frame timestamps do not advance (the container's sample durations are 0)",
    "mdhd0": "broken timeline: the container lists 90 frames, only 1 presented",
    "photo": "is a still image (png_pipe), not a video",
}


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("broken")
    full = write_mp4(d / "full.mp4")  # 90 frames, 30 fps, moov first
    return {
        "full": full,
        "truncated": truncate_after(full, d / "truncated.mp4", 35),
        "stts0": zero_stts_deltas(full, d / "stts0.mp4"),
        "mdhd0": zero_mdhd_timescale(full, d / "mdhd0.mp4"),
        "photo": image_as_video(d / "photo.mp4"),
        "raw": raw_h264(d / "raw.h264", n_frames=50),
    }


@pytest.mark.parametrize("name", sorted(REASONS))
def test_every_reader_refuses_a_broken_file_with_the_same_reason(
    broken: dict[str, Path], name: str
) -> None:
    path = broken[name]
    readers = {
        "probe": lambda: probe(path),
        "probe demux": lambda: probe(path, count_frames="demux"),
        "frames for a model": lambda: sample_clip(path, FramePolicy(), FrameEncoding()),
        "frames for the detector": lambda: sum(1 for _ in iter_frames(path, gray=True)),
    }
    for reader, read in readers.items():
        with pytest.raises(MediaError) as err:
            read()
        assert err.value.reason.startswith(REASONS[name]), (reader, err.value.reason)


def test_a_whole_file_and_a_raw_h264_stream_read_in_full(broken: dict[str, Path]) -> None:
    assert probe(broken["full"]).frame_count == 90
    raw = sample_clip(broken["raw"], FramePolicy(mode="segments", n_frames=8), FrameEncoding())
    assert raw.n_frames == 50 and raw.indices == (3, 9, 15, 21, 27, 34, 40, 46)
    assert [read_frame_code(f) for f in raw.arrays()] == list(raw.indices)
    assert probe(broken["raw"], count_frames="demux").frame_count == 50


class _Frames(Model):
    """Answers "A"; records how many frames it was shown per sample."""

    name = "frames"

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        for r in requests:
            self.seen[r.sample_id] = len(r.frames)
        return [Response(text="A") for _ in requests]


def _dataset(tmp_path: Path, clips: dict[str, Path]) -> Path:
    lines = [
        json.dumps({"id": n, "question": "q?", "options": ["Yes", "No"], "answer": "No",
                    "video": str(p), "benchmark": "tamper", "tamper_type": "original"})
        for n, p in clips.items()
    ]  # fmt: skip
    data = tmp_path / "set.jsonl"
    data.write_text("\n".join(lines) + "\n")
    return data


def test_forensic_and_frame_models_agree_on_broken_files(
    broken: dict[str, Path], tmp_path: Path
) -> None:
    data = _dataset(tmp_path, broken)
    model = _Frames()
    cache = str(tmp_path / "cache")  # its own frame cache: nothing an earlier run wrote
    run_eval(EvalConfig(data=str(data), model="frames", out=str(tmp_path / "f"), n_resamples=0,
                        cache_dir=cache), progress=False, model=model)  # fmt: skip
    run_eval(EvalConfig(data=str(data), model="forensic", out=str(tmp_path / "d"), n_resamples=0,
                        cache_dir=cache), progress=False)  # fmt: skip
    framed, forensic = stored_rows(tmp_path / "f"), stored_rows(tmp_path / "d")
    for name, reason in REASONS.items():
        for rows in (framed, forensic):
            assert rows[name]["status"] == "media_error", (name, rows[name])
            assert reason in rows[name]["error"]
    assert model.seen == {"full": 8, "raw": 8}  # the raw stream is evaluated again
    assert framed["raw"]["status"] == "ok" and forensic["raw"]["status"] == "ok"
    assert forensic["full"]["status"] == "ok"


def test_tamper_records_broken_sources_and_builds_the_rest(
    broken: dict[str, Path], tmp_path: Path
) -> None:
    names = ["full", "truncated", "stts0", "mdhd0", "photo"]
    args = ["tamper", *(str(broken[n]) for n in names), "--out", str(tmp_path / "o")]
    res = CliRunner().invoke(app, [*args, "--effects", "masking"])
    assert res.exit_code == 0, res.output
    errors = [json.loads(x) for x in (tmp_path / "o" / "errors.jsonl").read_text().splitlines()]
    reasons = {Path(e["source"]).stem: e["reason"] for e in errors}
    assert set(reasons) == {"truncated", "stts0", "mdhd0", "photo"}
    for name, reason in reasons.items():
        assert reason.startswith(REASONS[name]), (name, reason)
    manifest = (tmp_path / "o" / "manifest.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["tamper_type"] for x in manifest) == ["masking", "original"]


def _unreadable_runner() -> list[str] | None:
    """A command prefix under which a mode-000 file cannot be read (root ignores mode bits:
    drop CAP_DAC_OVERRIDE with ``setpriv``), or ``None`` when neither works here."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    drop = "-dac_override,-dac_read_search"
    prefix = [setpriv, "--bounding-set", drop, "--inh-caps", drop]
    probe_run = subprocess.run([*prefix, "true"], capture_output=True)
    return prefix if probe_run.returncode == 0 else None


def test_an_unreadable_source_given_by_name_is_an_error_line_not_the_end(tmp_path: Path) -> None:
    prefix = _unreadable_runner()
    if prefix is None:
        pytest.skip("cannot make a file unreadable here (root without setpriv)")
    good = make_synthetic_video(tmp_path / "good.mp4", 40, 25, (64, 48), seed=1)
    bad = make_synthetic_video(tmp_path / "bad.mp4", 40, 25, (64, 48), seed=2)
    bad.chmod(0)
    out = tmp_path / "o"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [*prefix, sys.executable, "-m", "mmrobust.cli", "tamper", str(good), str(bad)]
    res = subprocess.run(
        [*cmd, "--out", str(out), "--effects", "masking", "-q"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    errors = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert [Path(e["source"]).name for e in errors] == ["bad.mp4"]
    assert errors[0]["reason"] == "permission denied"
    manifest = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    assert {Path(e["source"]).name for e in manifest} == {"good.mp4"} and len(manifest) == 2
