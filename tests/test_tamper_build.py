"""The builder on small synthetic clips: every effect frame-exact, manifest, resume, layouts.

Tolerance: outputs are re-encodes of the synthetic frames with the default
encoder (MPEG-4 Part 2 at quantiser 3; x264 crf 18 where a test says so); a
decoded frame is compared by its index code (exact) and by mean absolute
difference to the expected frame, which must be below ``TOL`` = 6 (8-bit units;
measured ~2.5; neighbouring frames differ by > 10).
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.media import iter_frames, probe
from mmrobust.tamper import BuildConfig, build, make_effect, read_manifest
from tests.synth import make_synthetic_video, read_frame_code, synthetic_frame

TOL = 6.0
N, FPS, SIZE = 60, 25, (160, 96)
S, E = N // 2 - 25 // 2, N // 2 - 25 // 2 + 25  # middle window: [18, 43)
ALL = ("dropping", "masking", "rotation", "substitution", "repetition", "shuffle", "speed", "flip")


def _mad(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


@pytest.fixture(scope="module")
def synth_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("synth_build")
    src = make_synthetic_video(root / "src" / "a.mp4", N, FPS, SIZE, seed=1)
    donor = make_synthetic_video(root / "src" / "b.mp4", 40, FPS, (200, 120), seed=2)
    out = root / "out"
    cfg = BuildConfig(effects=tuple(make_effect(n) for n in ALL), seed=7)
    report = build([root / "src"], out, cfg)
    assert report.errors == []
    return out, src, donor


def _frames(out: Path, entry_id: str) -> list[np.ndarray]:
    entry = next(e for e in read_manifest(out) if e.id == entry_id)
    return list(iter_frames(out / entry.video))


def _codes(frames: list[np.ndarray]) -> list[int | None]:
    return [read_frame_code(f) for f in frames]


def test_manifest_matches_outputs(synth_build: tuple[Path, Path, Path]) -> None:
    out, _, _ = synth_build
    entries = {e.id: e for e in read_manifest(out)}
    assert len(entries) == 2 * (1 + len(ALL))
    lengths = {"dropping": N - 25, "repetition": N + 25, "speed": N - 25 + 12, "original": N}
    for e in (v for k, v in entries.items() if k.startswith("a__")):
        n_out = lengths.get(e.tamper_type, N)
        assert e.frames_output == n_out == probe(out / e.video).frame_count
        assert e.frames_source == N and e.fps == "25" and e.width == 160 and not e.padded
        assert (e.encoder["codec"], e.encoder["qscale"]) == ("mpeg4", 3)  # the default
        if e.tamper_type == "original":
            assert e.window_source is None and e.window_output is None
        else:
            assert e.window_source is not None and e.window_output is not None
            assert (e.window_source.start_frame, e.window_source.end_frame) == (S, E)
            assert e.window_output.start_frame == S
            assert e.window_output.n_frames == n_out - N + 25
    assert entries["a__dropping"].window_output.n_frames == 0  # type: ignore[union-attr]


def test_original_and_dropping_frame_exact(synth_build: tuple[Path, Path, Path]) -> None:
    out, _, _ = synth_build
    orig = _frames(out, "a__original")
    assert _codes(orig) == list(range(N))
    assert max(_mad(f, synthetic_frame(i, *SIZE, seed=1)) for i, f in enumerate(orig)) < TOL
    assert _codes(_frames(out, "a__dropping")) == [*range(S), *range(E, N)]


def test_repetition_plays_window_twice(synth_build: tuple[Path, Path, Path]) -> None:
    out, _, _ = synth_build
    rep = _frames(out, "a__repetition")
    assert _codes(rep) == [*range(E), *range(S, E), *range(E, N)]
    assert max(_mad(rep[E + i], rep[S + i]) for i in range(25)) < TOL


def test_rotation_and_masking(synth_build: tuple[Path, Path, Path]) -> None:
    out, _, _ = synth_build
    orig, rot, mask = (_frames(out, f"a__{v}") for v in ("original", "rotation", "masking"))
    for i in range(N):
        if S <= i < E:
            assert _mad(rot[i], orig[i][::-1, ::-1]) < TOL
            assert read_frame_code(rot[i]) is None
            assert mask[i].mean() < 1.0 and mask[i].max() <= 20  # black within codec noise
        else:
            assert read_frame_code(rot[i]) == i and read_frame_code(mask[i]) == i
            assert _mad(rot[i], orig[i]) < TOL


def test_substitution_comes_from_recorded_donor_offset(
    synth_build: tuple[Path, Path, Path],
) -> None:
    out, _, donor_path = synth_build
    entry = next(e for e in read_manifest(out) if e.id == "a__substitution")
    assert entry.donor is not None and Path(entry.donor.source) == donor_path.resolve()
    off = entry.donor.offset
    assert 0 <= off <= 40 - 25
    sub = list(iter_frames(out / entry.video))
    assert _codes(sub) == [*range(S), *range(off, off + 25), *range(E, N)]
    for i in range(25):  # donor frames resized 200x120 -> 160x96
        want = cv2.resize(
            synthetic_frame(off + i, 200, 120, seed=2), SIZE, interpolation=cv2.INTER_AREA
        )
        assert _mad(sub[S + i], want) < TOL
        assert _mad(sub[S + i], synthetic_frame(S + i, *SIZE, seed=1)) > 3 * TOL


def test_extra_effects(synth_build: tuple[Path, Path, Path]) -> None:
    out, _, _ = synth_build
    shuffled = _codes(_frames(out, "a__shuffle"))
    assert shuffled[:S] == list(range(S)) and shuffled[E:] == list(range(E, N))
    assert sorted(shuffled[S:E]) == list(range(S, E)) and shuffled[S:E] != list(range(S, E))  # type: ignore[type-var]
    assert _codes(_frames(out, "a__speed")) == [*range(E), *range(E, N)][:S] + list(range(S, E, 2))[
        :12
    ] + list(range(E, N))
    flip = _frames(out, "a__flip")
    assert _codes([f[:, ::-1] for f in flip[S:E]]) == list(range(S, E))


def test_rerun_skips_and_repairs(synth_build: tuple[Path, Path, Path], tmp_path: Path) -> None:
    out, src, _ = synth_build
    cfg = BuildConfig(effects=tuple(make_effect(n) for n in ALL), seed=7)
    again = build([src.parent], out, cfg)
    assert (again.built, again.skipped) == (0, 18)
    victim = out / next(e for e in read_manifest(out) if e.id == "a__masking").video
    victim.write_bytes(b"corrupted")
    fixed = build([src.parent], out, cfg)
    assert (fixed.built, fixed.skipped) == (1, 17)
    assert len(read_manifest(out)) == 18
    assert not list(out.rglob(".*.part*"))


def test_single_source_substitution_needs_donor(tmp_path: Path) -> None:
    src = make_synthetic_video(tmp_path / "only.mp4", 40, FPS, (64, 48))
    report = build([src], tmp_path / "out")
    assert {e.tamper_type for e in report.entries} == {
        "original", "dropping", "masking", "rotation", "repetition",
    }  # fmt: skip
    [err] = report.errors
    assert err.variant == "substitution" and "no substitution donor" in err.reason
    donor = make_synthetic_video(tmp_path / "d" / "donor.mp4", 30, FPS, (64, 48), seed=3)
    cfg = BuildConfig(donors=(donor,))
    report = build([src], tmp_path / "out", cfg)
    assert report.errors == [] and report.built == 1 and report.skipped == 5


def test_fractional_fps_odd_size_and_official_fps(tmp_path: Path) -> None:
    from fractions import Fraction

    # yuv444p allows odd sizes in the source; the builder's yuv420p output must pad
    src = make_synthetic_video(
        tmp_path / "s" / "ntsc.mp4", 70, Fraction(30000, 1001), (99, 75), pix_fmt="yuv444p"
    )
    assert (probe(src).width, probe(src).height) == (99, 75)
    other = make_synthetic_video(tmp_path / "s" / "other.mp4", 70, 25, (64, 48), seed=4)
    assert other.exists()
    report = build([tmp_path / "s"], tmp_path / "o", BuildConfig())
    e = {x.id: x for x in report.entries}
    rot = e["ntsc__rotation"]
    assert rot.fps == "30000/1001" and rot.padded and (rot.width, rot.height) == (100, 76)
    assert (rot.source_width, rot.source_height) == (99, 75)
    assert rot.window_source is not None and rot.window_source.n_frames == 30
    assert rot.window_source.start_frame == 35 - 15
    official = build([tmp_path / "s"], tmp_path / "o2", BuildConfig(official_fps=True))
    rot2 = next(x for x in official.entries if x.id == "ntsc__rotation")
    assert rot2.window_source is not None and rot2.window_source.n_frames == 29


def test_released_style_and_mvtamperbench_layout(tmp_path: Path) -> None:
    from fractions import Fraction

    src = make_synthetic_video(tmp_path / "s" / "clip1.mkv", 70, Fraction(30000, 1001), (96, 64))
    make_synthetic_video(tmp_path / "s" / "clip2.mp4", 70, 25, (96, 64), seed=5)
    result = CliRunner().invoke(
        app,
        ["tamper", str(tmp_path / "s"), "--out", str(tmp_path / "o"), "--style", "released",
         "--layout", "mvtamperbench", "--task", "action_sequence"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    entries = {e.id: e for e in read_manifest(tmp_path / "o")}
    orig = entries["clip1__original"]
    assert orig.video == "videos/clip1.mkv" and orig.encoder == {"writer": "copy"}
    assert orig.video_sha256 == orig.source_sha256  # copied as-is, the released leak
    rot = entries["clip1__rotation"]
    assert rot.video == "videos/clip1_middle_tampered_rotate_1sec.mp4"
    assert rot.fps == "29" and rot.encoder["fourcc"] == "mp4v"
    assert probe(tmp_path / "o" / rot.video).codec == "mpeg4"
    assert rot.window_source is not None and rot.window_source.n_frames == 29
    rows = json.loads((tmp_path / "o" / "json" / "action_sequence.json").read_text())
    assert len(rows) == 12
    assert {r["tamper_type"] for r in rows} == {
        "original", "dropping", "masking", "repetition", "rotate", "substitution",
    }  # fmt: skip
    row = next(r for r in rows if r["video"] == rot.video)
    assert row["answer"] == "Yes" and row["candidates"] == ["Yes", "No"]
    assert row["question"].startswith("Does this video exhibit any signs of tampering, such as")
    assert next(r for r in rows if r["video"] == orig.video)["answer"] == "No"
    assert src.exists()


def test_cli_mpeg4_fixed_quantiser(tmp_path: Path) -> None:
    make_synthetic_video(tmp_path / "s" / "a.mp4", 60, 25, (96, 64))
    make_synthetic_video(tmp_path / "s" / "b.mp4", 60, 25, (96, 64), seed=5)
    result = CliRunner().invoke(
        app,
        ["tamper", str(tmp_path / "s"), "--out", str(tmp_path / "o"), "--effects",
         "dropping,repetition", "--codec", "mpeg4", "--qscale", "3", "-q"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "6 clips (6 built, 0 already done), 0 errors" in result.output  # -q keeps the summary
    entries = {e.id: e for e in read_manifest(tmp_path / "o")}
    assert len(entries) == 6
    for e in entries.values():
        assert (e.encoder["codec"], e.encoder["qscale"]) == ("mpeg4", 3)
        assert probe(tmp_path / "o" / e.video).codec == "mpeg4"
    assert probe(tmp_path / "o" / entries["a__dropping"].video).frame_count == 35
    bad = CliRunner().invoke(app, ["tamper", str(tmp_path / "s"), "--out", "x", "--qscale", "40"])
    assert bad.exit_code == 2
