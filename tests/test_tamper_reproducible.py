"""Bit-reproducible builds: the same sources, effects and seed give byte-identical files.

x264's macroblock-tree rate control made an encode depend on memory contents
(valgrind: uninitialised stack memory used as a table index), so repeated
builds, especially several at once, sometimes differed in one GOP. The writer
turns it off (``mbtree=0``, ``mmrobust.media.writer.X264_REPRODUCIBLE``).

The concurrent test is statistical: with mbtree back on it failed in 9 of 10
runs (before the fix, 4 of 18 builds of this set, six at once, differed); with
the fix it passed 10 of 10. The option test below is exact.

FFmpeg's automatic encoder thread count follows the CPUs a process may use, and
both encoders cut each frame into one slice per thread, so before resume key v7
the same build with 1 and 2 CPUs gave different files (mpeg4: 1 vs 3 slices;
x264: 1 vs 2). The builder now pins the count (``BuildConfig.threads``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mmrobust.media import sample_clips
from mmrobust.media.encoder import EncoderSettings
from mmrobust.media.writer import X264_REPRODUCIBLE, VideoWriter
from mmrobust.tamper import BuildConfig, build, make_effect, read_manifest
from mmrobust.tamper.config import TAMPER_THREADS
from tests.synth import synthetic_frame

_BUILD_TWICE = """
import hashlib, json, sys
from pathlib import Path
from mmrobust.media import sample_clips
from mmrobust.tamper import BuildConfig, build, make_effect

clips = sample_clips()
sources = [clips["carphone_pristine"], clips["carphone_distorted"]]
config = BuildConfig(effects=(make_effect("rotation"), make_effect("masking")), seed=0)
hashes = []
for run in ("a", "b"):
    out = Path(sys.argv[1]) / run
    build(sources, out, config, jobs=1)
    hashes.append({
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*.mp4"))
    })
print(json.dumps(hashes))
"""


def _sha256_per_output(out: Path) -> dict[str, str]:
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*.mp4"))
    }


@pytest.mark.slow
def test_concurrent_builds_are_byte_identical(tmp_path: Path) -> None:
    """Two processes at once, each building the set twice, and this process once: one sha256 per output."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _BUILD_TWICE, str(tmp_path / f"p{i}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    clips = sample_clips()
    here = tmp_path / "here"
    build(
        [clips["carphone_pristine"], clips["carphone_distorted"]],
        here,
        BuildConfig(effects=(make_effect("rotation"), make_effect("masking")), seed=0),
        jobs=1,
    )
    runs = [_sha256_per_output(here)]
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        runs.extend(json.loads(stdout))
    # 2 sources x (original, rotation, masking)
    assert len(runs) == 5 and all(len(r) == 6 for r in runs)
    for r in runs[1:]:
        assert r == runs[0]


def test_x264_writer_turns_mbtree_off(tmp_path: Path) -> None:
    """The options x264 reports in its SEI (first packet) include ``mbtree=0``; the manifest records them."""
    path = tmp_path / "a.mp4"
    with VideoWriter(path, 25, 64, 48, gop=10) as w:
        for i in range(12):
            w.write(synthetic_frame(i, 64, 48))
    assert w.settings["x264_params"] == f"{X264_REPRODUCIBLE}:keyint=10:min-keyint=10:scenecut=0"
    data = path.read_bytes()
    start = data.index(b"x264 - core")
    sei = data[start : data.index(b"\x00", start)].decode()
    assert " mbtree=0 " in sei and " keyint=10 " in sei
    with VideoWriter(tmp_path / "b.mp4", 25, 64, 48, mbtree=True) as w:
        w.write(synthetic_frame(0, 64, 48))
    assert "x264_params" not in w.settings
    assert b" mbtree=1 " in (tmp_path / "b.mp4").read_bytes()


_BUILD_ON_CPUS = """
import hashlib, json, os, sys
from pathlib import Path
os.sched_setaffinity(0, [int(c) for c in sys.argv[2].split(",")])
from mmrobust.media import sample_clips
from mmrobust.tamper import BuildConfig, build, make_effect
out = Path(sys.argv[1])
config = BuildConfig(effects=(make_effect("rotation"),), codec=sys.argv[3], preset="ultrafast")
build([sample_clips()["carphone_pristine"]], out, config, jobs=1)
print(json.dumps({
    str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
    for p in sorted(out.rglob("*.mp4"))
}))
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs 2 CPUs to build on 1 and on 2",
)
@pytest.mark.parametrize("codec", ["mpeg4", "libx264"])
def test_builds_on_one_and_on_two_cpus_are_byte_identical(tmp_path: Path, codec: str) -> None:
    """The same build in a process allowed 1 CPU and in one allowed 2: one sha256 per output.

    With FFmpeg's automatic thread count (the code before resume key v7) carphone's mpeg4
    outputs were cut into 1 vs 3 slices per frame and x264's into 1 vs 2, and every
    output differed."""
    runs = []
    mine = sorted(os.sched_getaffinity(0))
    for cpus in (mine[:1], mine[:2]):
        out = tmp_path / str(len(cpus))
        done = subprocess.run(
            [sys.executable, "-c", _BUILD_ON_CPUS, str(out), ",".join(map(str, cpus)), codec],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    assert sorted(runs[0]) == [
        "videos/carphone_pristine/original.mp4",
        "videos/carphone_pristine/rotation.mp4",
    ]
    assert runs[0] == runs[1]


@pytest.mark.parametrize("segments", [True, False])
def test_build_pins_encoder_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, segments: bool
) -> None:
    """Every encoder a build opens gets ``BuildConfig.threads`` slice threads (not FFmpeg's
    automatic 0), and the manifest records the count; another count is another resume key."""
    seen: list[tuple[int, str]] = []
    configure = EncoderSettings.configure

    def spy(self: EncoderSettings, ctx: object) -> None:
        configure(self, ctx)  # type: ignore[arg-type]
        seen.append((ctx.thread_count, ctx.thread_type.name))  # type: ignore[attr-defined]

    monkeypatch.setattr(EncoderSettings, "configure", spy)
    src = tmp_path / "clip.mp4"
    with VideoWriter(src, 25, 64, 48, codec="mpeg4", crf=None, preset=None, qscale=3) as w:
        for i in range(30):
            w.write(synthetic_frame(i, 64, 48))
    seen.clear()
    config = BuildConfig(effects=(make_effect("rotation"),), segments=segments)
    assert config.threads == TAMPER_THREADS >= 1
    build([src], tmp_path / "a", config)
    assert len(seen) >= 2 and set(seen) == {(TAMPER_THREADS, "SLICE")}
    entries = read_manifest(tmp_path / "a")
    assert [e.encoder["threads"] for e in entries] == [TAMPER_THREADS] * 2
    again = BuildConfig(effects=config.effects, segments=segments, threads=TAMPER_THREADS + 1)
    other = build([src], tmp_path / "a", again)
    assert (other.built, other.skipped) == (2, 0)  # rebuilt, not kept under the old key
    with pytest.raises(ValueError, match="threads must be at least 1"):
        BuildConfig(threads=0)


def test_the_cli_threads_default_is_the_builders() -> None:
    """``tamper --threads`` defaults to ``TAMPER_THREADS`` (a literal there: the CLI starts
    without importing PyAV)."""
    import typer

    from mmrobust.cli import app

    tamper = typer.main.get_command(app).commands["tamper"]  # type: ignore[attr-defined]
    (option,) = [p for p in tamper.params if p.name == "threads"]
    assert option.default == TAMPER_THREADS
