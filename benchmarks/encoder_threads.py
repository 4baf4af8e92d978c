"""Encoder thread count: which settings give the same bytes on 1 and 2 CPUs, and what a
fixed count costs in build time. Prints figures; asserts nothing.

    python benchmarks/encoder_threads.py [--clips carphone_pristine,bikes,bigbuckbunny]
        [--threads 0,1,2,3,4] [--repeat 3] [--only hashes|speed]

* hashes: each clip's decoded frames encoded by ``FrameEncoder`` (mpeg4 q3 and x264
  veryfast crf 18, GOP 25), in a child process pinned to CPU 0, then to CPUs 0-1
  (``os.sched_setaffinity``), per thread count; ``0`` is FFmpeg's automatic count (the
  builder's before resume key v7). One sha256 per setting across CPU sets = reproducible.
  Also the encode's wall time (frames already decoded).
* speed: a default build (mpeg4 q3, original + the paper's five effects) of each clip per
  thread count, best of ``--repeat``, interleaved (one round of every count, then the next);
  wall and CPU seconds (all threads) of the process, and the total size of the outputs.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mmrobust.tamper import BuildConfig, build

_ENCODE = """
import hashlib, os, sys, time
from fractions import Fraction
os.sched_setaffinity(0, [int(c) for c in sys.argv[1].split(",")])
import av
from mmrobust.media import sample_clips
from mmrobust.media.encoder import EncoderSettings, FrameEncoder
clip, codec, threads = sys.argv[2], sys.argv[3], int(sys.argv[4])
with av.open(str(sample_clips()[clip])) as c:
    s = c.streams.video[0]
    frames, fps = list(c.decode(s)), s.average_rate
kw = {"qscale": 3, "crf": None, "preset": None} if codec == "mpeg4" else {"preset": "veryfast"}
st = EncoderSettings(Fraction(fps), frames[0].width, frames[0].height, codec=codec,
                     threads=threads, gop=25, **kw)
enc, h = FrameEncoder(st), hashlib.sha256()
t = time.perf_counter()
for f in frames:
    for p in enc.encode(f):
        h.update(bytes(p))
for p in enc.flush():
    h.update(bytes(p))
print(enc._ctx.thread_count, h.hexdigest()[:12], time.perf_counter() - t)
"""


def _encode(cpus: str, clip: str, codec: str, threads: int) -> str:
    out = subprocess.run(
        [sys.executable, "-c", _ENCODE, cpus, clip, codec, str(threads)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return f"{out[1]} ({out[0]} thr, {float(out[2]):.2f} s)"


def hashes(clips: list[str], counts: list[int]) -> None:
    """One line per clip, codec and thread count: the sha256 on CPU 0 and on CPUs 0-1."""
    sets = ["0", "0,1"] if len(os.sched_getaffinity(0)) >= 2 else ["0"]
    for clip in clips:
        for codec in ("mpeg4", "libx264"):
            for n in counts:
                got = [_encode(cpus, clip, codec, n) for cpus in sets]
                same = len({g.split()[0] for g in got}) == 1
                name = "auto" if n == 0 else str(n)
                print(
                    f"{clip:18s} {codec:8s} threads={name:4s} "
                    + "  ".join(f"cpus {c}: {g}" for c, g in zip(sets, got, strict=True))
                    + ("  same" if same else "  DIFFER")
                )


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _config(threads: int) -> BuildConfig:
    config = BuildConfig(threads=max(threads, 1))
    if threads == 0:  # FFmpeg's automatic count, as before key v7 (BuildConfig refuses it)
        object.__setattr__(config, "threads", 0)
    return config


def speed(clips: list[str], counts: list[int], repeat: int) -> None:
    """Best-of-``repeat`` build time per clip and thread count, rounds interleaved."""
    from mmrobust.media import sample_clips

    paths = sample_clips()
    best: dict[tuple[str, int], tuple[float, float, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            for clip in clips:
                for n in counts:
                    out = Path(tmp) / f"{clip}-{n}"
                    shutil.rmtree(out, ignore_errors=True)
                    t, c = time.perf_counter(), _cpu()
                    build([paths[clip]], out, _config(n))
                    wall, cpu = time.perf_counter() - t, _cpu() - c
                    size = sum(p.stat().st_size for p in (out / "videos").rglob("*.mp4"))
                    old = best.get((clip, n))
                    best[clip, n] = (
                        min(wall, old[0]) if old else wall,
                        min(cpu, old[1]) if old else cpu,
                        size,
                    )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for clip in clips:
        for n in counts:
            wall, cpu, size = best[clip, n]
            name = "auto" if n == 0 else str(n)
            print(
                f"{clip:18s} threads={name:4s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  "
                f"outputs {size / 1024:8.0f} KiB"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", default="carphone_pristine,bikes,bigbuckbunny")
    ap.add_argument("--threads", default="0,1,2,3,4", help="counts to compare; 0 = automatic")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=("hashes", "speed"))
    args = ap.parse_args()
    clips = args.clips.split(",")
    counts = [int(n) for n in args.threads.split(",")]
    if args.only != "speed":
        hashes(clips, counts)
    if args.only != "hashes":
        speed(clips, counts, args.repeat)


if __name__ == "__main__":
    main()
