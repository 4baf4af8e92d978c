"""The leak audit's fast path (issue 32 item 1) gives the results of the path before it.

``audit_dataset(..., reference=True)`` is the path before issue 32 (every packet of
every clip demuxed to count frames, one ``ScoredRecord`` per row and prediction, the
classifiers fed a pandas frame, the originals read again for derived windows); the
default path reads an mp4/mov's sample index with its header, scores with NumPy arrays
and reuses the clip facts. The two ``audit.json`` results must be equal, on a
codec-controlled build (manifest windows) and on a released-style build (originals
copied as they are: x264 mp4 and Matroska sources, windows derived by the released rule).
"""

from __future__ import annotations

import importlib
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mmrobust import audit
from mmrobust.audit import audit_dataset, benchmark_scores, clip_facts
from mmrobust.audit_scores import ArrayScorer
from mmrobust.cli import app
from mmrobust.datasets import load_dataset
from mmrobust.media import MediaError
from mmrobust.schema import Sample
from tests import media_faults
from tests.synth import make_synthetic_video

SOURCES = {  # name -> (frames, fps): x264 mp4 (B-frames, an edit list) and Matroska
    "s1.mp4": (70, Fraction(30000, 1001)),
    "s2.mkv": (80, 25),
    "s3.mp4": (64, Fraction(30000, 1001)),
    "s4.mkv": (75, 30),
}


@pytest.fixture(scope="module")
def released_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("audit-fast")
    for i, (name, (n, fps)) in enumerate(SOURCES.items()):
        make_synthetic_video(root / "src" / name, n, fps, (96, 64), seed=20 + i)
    out = root / "released"
    args = ["tamper", str(root / "src"), "--out", str(out), "--style", "released"]
    res = CliRunner().invoke(app, [*args, "--layout", "mvtamperbench", "-q"])
    assert res.exit_code == 0, res.output
    return out


def _both(data: Path, fmt: str | None = None) -> tuple[dict, dict]:
    ds = load_dataset(data, format=fmt) if fmt else load_dataset(data)
    fast = audit_dataset(ds, workers=1)
    return fast, audit_dataset(ds, workers=1, reference=True)


def test_fast_audit_equals_reference_on_a_released_style_build(released_build: Path) -> None:
    fast, ref = _both(released_build, "mvtamperbench")
    assert json.dumps(fast, sort_keys=True) == json.dumps(ref, sort_keys=True)
    assert fast["n_clips"] == 24 and fast["n_original"] == 4
    assert fast["window_coverage"]["windows_derived"] == 20  # every window by the released rule
    # the released generator's leak: originals keep their codec, tampered clips are mpeg4
    assert fast["fields"]["codec"]["f1"] == 1.0


def test_fast_audit_equals_reference_on_a_codec_controlled_build(real_tamper_set: Path) -> None:
    fast, ref = _both(real_tamper_set)
    assert json.dumps(fast, sort_keys=True) == json.dumps(ref, sort_keys=True)
    assert fast["n_clips"] == 24 and fast["window_coverage"]["windows_known"] == 20


def _outcome(path: Path, count: audit.CountMethod) -> object:
    try:
        return clip_facts(path, count=count)
    except MediaError as exc:
        return f"MediaError: {exc}"


def test_header_read_equals_packet_count_on_broken_and_odd_files(tmp_path: Path) -> None:
    good = media_faults.write_mp4(tmp_path / "good.mp4")
    files = {
        "good": good,
        "truncated": media_faults.truncate_after(good, tmp_path / "cut.mp4", 35),
        "stts": media_faults.zero_stts_deltas(good, tmp_path / "stts.mp4"),
        "mdhd": media_faults.zero_mdhd_timescale(good, tmp_path / "mdhd.mp4"),
        "image": media_faults.image_as_video(tmp_path / "still.mp4"),
        "h264": media_faults.raw_h264(tmp_path / "raw.h264"),
        "x264": make_synthetic_video(tmp_path / "x264.mp4", 40, 25),
        "mkv": make_synthetic_video(tmp_path / "v.mkv", 30, 24),
    }
    outcomes = {k: (_outcome(p, "header"), _outcome(p, "packets")) for k, p in files.items()}
    for name, (header, packets) in outcomes.items():
        assert header == packets, name
    frames = {k: h.n_frames for k, (h, _) in outcomes.items() if not isinstance(h, str)}
    # the truncated file counts the 35 frames whose data is there, not the 90 its header lists
    assert frames["good"] == 90 and frames["truncated"] == 35 and frames["x264"] == 40
    assert frames["h264"] == 50 and frames["mkv"] == 30
    assert isinstance(outcomes["stts"][0], str) and "timestamps" in outcomes["stts"][0]
    assert isinstance(outcomes["image"][0], str)


def test_header_read_demuxes_nothing_where_the_index_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = importlib.import_module("mmrobust.media.probe")  # the name is also a function
    good = media_faults.write_mp4(tmp_path / "good.mp4")
    cut = media_faults.truncate_after(good, tmp_path / "cut.mp4", 35)
    calls: list[int] = []
    demux = probe._frame_packets

    def counting(container: object, stream: object) -> int:
        calls.append(1)
        return demux(container, stream)  # type: ignore[arg-type]

    monkeypatch.setattr(probe, "_frame_packets", counting)
    facts = clip_facts(good)
    assert (facts.n_frames, facts.fps, facts.codec) == (90, "30", "mpeg4")
    assert calls == []  # the old path demuxed all 90 packets
    assert clip_facts(cut).n_frames == 35 and calls == [1]  # the index lists data not there


def test_array_scorer_equals_per_record_scores() -> None:
    types = ["original", "Original", "dropping", "Rotate", "masking", "blur", "substitution"]
    rng = np.random.default_rng(3)
    samples = [
        Sample(
            id=f"s{i}",
            benchmark="tamper",
            question="q",
            options={"A": "Yes", "B": "No"},
            answer="A",
            group=f"g{i // 7}",
            tamper_type=types[i % len(types)],
        )
        for i in range(70)
    ]
    scorer = ArrayScorer(samples)
    for _ in range(5):
        pred = (rng.random(len(samples)) < 0.5).tolist()
        assert scorer(pred) == benchmark_scores(samples, pred)
    assert scorer([True] * 70) == benchmark_scores(samples, [True] * 70)
    assert scorer([False] * 70) == benchmark_scores(samples, [False] * 70)
    only_originals = [s for s in samples if s.tamper_type == "original"]
    assert ArrayScorer(only_originals)([True] * 10) == benchmark_scores(only_originals, [True] * 10)
