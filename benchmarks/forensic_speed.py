"""Speed and memory of the forensic detector (prints figures; not a test).

* frames per second per core: a 640x360 libx264 clip is written once, then
  decoded (luma, downscaled by the decoder's scaler) and analysed with one
  thread (``cv2.setNumThreads(1)``, PyAV single-threaded decode);
* peak Python-heap memory (``tracemalloc``) for clips of 1x, 4x and 8x the length:
  the detector analyses the stream in bounded chunks and keeps only candidate
  events, so the peak must not grow with length.

Usage::

    python benchmarks/forensic_speed.py [--frames 1500] [--out /tmp/forensic_speed]
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import cv2
import numpy as np

from mmrobust.forensic.footage import Shot, render
from mmrobust.media import VideoWriter
from mmrobust.models.forensic import ForensicDetector


def make_clip(path: Path, n: int) -> Path:
    if path.exists():
        return path
    shots = render([Shot("astronaut", 150, "pan", speed=0.004)], size=(640, 360), seed=0)
    with VideoWriter(path, 30, 640, 360) as w:
        for i in range(n):
            k = i % 300
            w.write(shots[k if k < 150 else 299 - k])  # ping-pong pan
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=1500)
    ap.add_argument("--out", default="/tmp/forensic_speed")
    a = ap.parse_args()
    cv2.setNumThreads(1)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    det = ForensicDetector()
    short = make_clip(out / f"pan_{a.frames}.mp4", a.frames)
    t0, c0 = time.perf_counter(), time.process_time()
    v = det.analyse_video(short)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"640x360, {v.frames} frames: {v.frames / wall:.0f} fps wall, {v.frames / cpu:.0f} fps per CPU-second (cpu {cpu:.2f}s, wall {wall:.2f}s)"
    )
    long = make_clip(out / f"pan_{4 * a.frames}.mp4", 4 * a.frames)
    longer = make_clip(out / f"pan_{8 * a.frames}.mp4", 8 * a.frames)
    for p in (short, long, longer):
        tracemalloc.start()
        v = det.analyse_video(p)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"peak traced memory, {v.frames} frames: {peak / 2**20:.2f} MiB")
    print("(numpy/OpenCV buffers are traced by tracemalloc; PyAV's C decoder buffers are not)")
    _ = np


if __name__ == "__main__":
    main()
