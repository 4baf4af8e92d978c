"""Released-style data end to end: derived windows, per-task metrics, and the leak audit.

Two builds of the same four synthetic sources: ``--style released`` (the
released generator: originals copied as they are, tampered clips MPEG-4 Part 2
at the integer rate, windows of ``int(fps)`` frames) and the default
codec-controlled build (every clip, originals included, re-encoded alike).
The released-style build is read through its ``json/<task>.json`` files,
which carry no window, so the runner derives windows by the released rule;
the build's own manifest records the true windows to compare with.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.audit import audit_dataset, clip_facts, coverage_under
from mmrobust.cli import app
from mmrobust.datasets import load_dataset
from mmrobust.media.sampling import FramePolicy
from mmrobust.schema.window import released_window
from mmrobust.store import ResultStore
from mmrobust.tamper.manifest import read_manifest
from tests.synth import make_synthetic_video

pytestmark = pytest.mark.slow
SOURCES = {  # name -> (frames, fps, container)
    "s1.mp4": (70, Fraction(30000, 1001), "mp4"),
    "s2.mkv": (80, 25, "mkv"),
    "s3.mp4": (64, Fraction(30000, 1001), "mp4"),
    "s4.mkv": (75, 30, "mkv"),
}


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("rel")
    for i, (name, (n, fps, _)) in enumerate(SOURCES.items()):
        make_synthetic_video(root / "src" / name, n, fps, (96, 64), seed=10 + i)
    out = {}
    for style in ("released", "mmrobust"):
        dest = root / style
        res = CliRunner().invoke(
            app,
            ["tamper", str(root / "src"), "--out", str(dest), "--style", style, "--layout",
             "mvtamperbench", "--task", "object_shuffle", "-q"],
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        # Two tasks, as the release has: s3/s4 rows go to state_change.json.
        rows = json.loads((dest / "json" / "object_shuffle.json").read_text())
        second = [r for r in rows if Path(r["video"]).name.startswith(("s3", "s4"))]
        (dest / "json" / "state_change.json").write_text(json.dumps(second))
        first = [r for r in rows if r not in second]
        (dest / "json" / "object_shuffle.json").write_text(json.dumps(first))
        out[style] = dest
    return out


def test_released_rule() -> None:
    w = released_window("masking", 70, Fraction(30000, 1001), "middle", 1.0)
    assert (w.source.start_frame, w.source.end_frame) == (35 - 14, 35 - 14 + 29)
    assert (w.output.start_frame, w.output.end_frame, w.output.start_s) == (21, 50, 21 / 29)
    drop = released_window("dropping", 70, 25, "end", 1.0)
    assert (drop.output.start_frame, drop.output.end_frame, drop.dropped) == (45, 45, 25)
    rep = released_window("repetition", 70, 25, "start", 1.0)
    assert (rep.output.start_frame, rep.output.end_frame, rep.dropped) == (0, 50, None)


@pytest.fixture(scope="module")
def released_run(builds: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``random:0`` shown 8 frames of each clip of the released-style build, read from its json."""
    out = tmp_path_factory.mktemp("run") / "run"
    res = CliRunner().invoke(
        app,
        ["eval", "--data", str(builds["released"]), "--format", "mvtamperbench", "--model",
         "random:0", "--model-arg", "media=frames", "--out", str(out), "--bootstrap", "0",
         "--cache-dir", "none", "-q"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def released_audit(builds: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mmrobust audit`` of the released-style build; returns its audit.json."""
    out = tmp_path_factory.mktemp("audit")
    res = CliRunner().invoke(
        app, ["audit", str(builds["released"]), "--format", "mvtamperbench", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "codec" in res.output and "window coverage (8 segment-centre frames), %" in res.output
    return out / "audit.json"


def test_derived_windows_match_the_build_and_tasks_flow(
    builds: dict[str, Path], released_run: Path
) -> None:
    truth = {e.video: e.window_output for e in read_manifest(builds["released"])}
    with ResultStore(released_run) as store:
        rows = store.rows()
    tampered = [r for r in rows if r.sample.tamper_type != "original"]
    assert len(tampered) == 20 and all(r.sample.window is None for r in tampered)
    for r in tampered:
        derived = r.extra["derived_window"]
        assert derived["derived"] is True and derived["rule"].startswith("released")
        expected = truth[r.sample.meta["video_ref"]]
        assert r.window == expected, r.sample.id  # frames and seconds
        assert r.window_covered is not None
    metrics = json.loads((released_run / "metrics.json").read_text())
    assert metrics["windows_derived"] == 20
    assert set(metrics["window_coverage"]) == {
        "dropping", "masking", "repetition", "rotation", "substitution",
    }  # fmt: skip
    assert set(metrics["per_task"]) == {"object_shuffle", "state_change"}
    assert set(metrics["per_task"]["state_change"]) == {
        "dropping", "masking", "repetition", "rotation", "substitution", "overall",
    }  # fmt: skip


def test_audit_finds_the_released_leak_and_not_the_controlled_build(
    builds: dict[str, Path], released_audit: Path
) -> None:
    released = json.loads(released_audit.read_text())
    controlled = audit_dataset(load_dataset(builds["mmrobust"], "manifest"), seed=0)
    for a in (released, controlled):
        assert (a["n_clips"], a["n_original"], a["n_tampered"], a["n_groups"]) == (24, 4, 20, 4)
        assert a["always_yes"]["f1"] == pytest.approx(2 / 3)
    # Released style: originals keep their H.264, tampered clips are MPEG-4 Part 2.
    codec = released["fields"]["codec"]
    assert codec["f1"] == 1.0 and codec["balanced_accuracy"] == 1.0
    assert codec["values"] == {"original": {"h264": 4}, "tampered": {"mpeg4": 20}}
    fps = released["fields"]["fps"]  # 30000/1001 originals vs their 29 fps tampered clips
    assert fps["values"]["tampered"]["29"] == 10 and fps["balanced_accuracy"] > 0.6
    assert released["classifier"]["f1"] == 1.0
    # Codec control: codec, container and fps say nothing (chance: always "Yes").
    for field in ("codec", "container", "fps"):
        r = controlled["fields"][field]
        assert r["balanced_accuracy"] == 0.5 and r["f1"] == pytest.approx(2 / 3), field
    assert controlled["classifier"]["balanced_accuracy"] < 0.75
    # Window coverage: derived (released json) vs known (manifest), same clips, same rule.
    cov_r, cov_c = released["window_coverage"], controlled["window_coverage"]
    assert (cov_r["windows_derived"], cov_r["windows_unknown"]) == (20, 0)
    assert (cov_c["windows_known"], cov_c["windows_derived"]) == (20, 0)
    assert cov_r["policy"] == "8 segment-centre frames"
    assert 0 < cov_r["overall"] <= 1 and set(cov_r["per_type"]) == set(cov_c["per_type"])
    dense = coverage_under(*_facts(load_dataset(builds["released"], "mvtamperbench")),
                           FramePolicy(mode="dense"))  # fmt: skip
    assert dense["overall"] == 1.0


def _facts(ds: Any) -> tuple[list[Any], list[Any]]:
    samples = [s for s in ds.samples if s.video is not None]
    return samples, [clip_facts(Path(str(s.video))) for s in samples]


def test_report_heatmap_and_audit_panel(
    released_run: Path, released_audit: Path, tmp_path: Path
) -> None:
    rep = CliRunner().invoke(
        app, ["report", str(released_run), "--out", str(tmp_path), "--audit", str(released_audit)]
    )
    assert rep.exit_code == 0, rep.output
    assert (tmp_path / "heatmap_random_0.png").is_file()  # task x type F1 (paper Figure 10)
    html = (tmp_path / "index.html").read_text()
    assert "Leak audit: released" in html and "<td>codec</td><td>100.0</td>" in html
