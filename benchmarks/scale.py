"""Scale: memory, CPU, store and report size as the number of text-only samples grows.

    python benchmarks/scale.py [--sizes 1000,10000,100000,1000000] [--workers 4]
                               [--report-sizes 1000,10000,100000] [--http 100000]

For each size N: a JSONL of N text-only yes/no samples (tamper family, six types), then,
each in a fresh process,

* ``eval``: ``mmrobust eval`` with an instant model (``constant:A``, no media), every row
  committed to SQLite, then scored (no bootstrap): peak resident memory (``ru_maxrss`` of
  the process), CPU per sample, the size of ``results.sqlite``;
* ``report`` (for the sizes in ``--report-sizes``; default: all of ``--sizes``):
  ``mmrobust report`` of that run folder: wall time, peak resident memory, the size of
  ``index.html`` and of the whole report folder.

Then ``--http N`` samples (0: none) through ``openai:`` against a local OpenAI-compatible
server that answers at once (a separate process on 127.0.0.1, ``harness_throughput.serve``),
``--concurrency`` requests in flight: the same eval figures (the CPU is the eval process's
only, the server's not counted).

Peak memory should not grow with N (the target: at 1M within 1.2x of 10k) and the page
should stay small at any N. Prints one line per stage; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TYPES = ("original", "dropping", "masking", "repetition", "rotation", "substitution")


def write_set(path: Path, n: int) -> None:
    with path.open("w") as fh:
        for i in range(n):
            t = TYPES[i % len(TYPES)]
            fh.write(json.dumps({
                "id": f"s{i}", "benchmark": "tamper", "question": "Is this clip tampered?",
                "options": {"A": "Yes", "B": "No"}, "answer": "B" if t == "original" else "A",
                "group": f"g{i // 6}", "tamper_type": t,
            }) + "\n")  # fmt: skip


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_eval(data: str, out: str, workers: int) -> dict[str, Any]:
    from mmrobust.runner import EvalConfig, run_eval

    t0, c0 = time.perf_counter(), time.process_time()
    cfg = EvalConfig(data=data, model="constant:A", out=out, n_resamples=0, workers=workers)
    res = run_eval(cfg, progress=False)
    return {
        "n": res.n_new, "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
        "peak_mib": _peak_mib(), "sqlite_mb": (Path(out) / "results.sqlite").stat().st_size / 1e6,
    }  # fmt: skip


def child_http(data: str, out: str, port: int, concurrency: int) -> dict[str, Any]:
    from text_http import bench_config

    from mmrobust.runner import run_eval

    t0, c0 = time.perf_counter(), time.process_time()
    res = run_eval(bench_config(data, out, port, concurrency), progress=False)
    return {
        "n": res.n_new, "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
        "peak_mib": _peak_mib(), "sqlite_mb": (Path(out) / "results.sqlite").stat().st_size / 1e6,
        "status": res.metrics.get("status_counts"),
    }  # fmt: skip


def http_eval(n: int, concurrency: int) -> None:
    """``n`` samples through ``openai:`` against an instant local server."""
    import multiprocessing

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from harness_throughput import serve

    q: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(q,), daemon=True)
    server.start()
    try:
        port = q.get(timeout=30)
        with tempfile.TemporaryDirectory() as tmp:
            data, run = Path(tmp) / "set.jsonl", Path(tmp) / "run"
            write_set(data, n)
            e = run_child(["--child", "http", "--data", str(data), "--out", str(run),
                           "--port", str(port), "--concurrency", str(concurrency)])  # fmt: skip
    finally:
        server.terminate()
    print(f"{n:>9} samples  eval over HTTP ({concurrency} in flight): peak RSS "
          f"{e['peak_mib']:.0f} MiB, {1000 * e['cpu_s'] / n:.3f} ms CPU/sample "
          f"({e['wall_s']:.1f} s wall), SQLite {e['sqlite_mb']:.1f} MB, {e['status']}",
          flush=True)  # fmt: skip


def child_report(run: str, out: str) -> dict[str, Any]:
    from mmrobust.report.site import build_site

    t0, c0 = time.perf_counter(), time.process_time()
    build_site([run], out, thumb_seconds=None)
    files = [p for p in Path(out).rglob("*") if p.is_file()]
    return {
        "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
        "peak_mib": _peak_mib(), "page_mb": (Path(out) / "index.html").stat().st_size / 1e6,
        "folder_mb": sum(p.stat().st_size for p in files) / 1e6, "files": len(files),
    }  # fmt: skip


def run_child(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"{args[:2]} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--report-sizes", default=None, help="sizes to report (default: all)")
    ap.add_argument("--http", type=int, default=100000, help="samples over HTTP (0: none)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--child", default=None)
    ap.add_argument("--data", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.child == "eval":
        print(json.dumps(child_eval(a.data, a.out, a.workers)))
        return
    if a.child == "http":
        print(json.dumps(child_http(a.data, a.out, a.port, a.concurrency)))
        return
    if a.child == "report":
        print(json.dumps(child_report(a.data, a.out)))
        return
    sizes = [int(x) for x in a.sizes.split(",") if x]
    reported = sizes if a.report_sizes is None else [int(x) for x in a.report_sizes.split(",") if x]
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            data, run = Path(tmp) / "set.jsonl", Path(tmp) / "run"
            write_set(data, n)
            e = run_child(["--child", "eval", "--data", str(data), "--out", str(run),
                           "--workers", str(a.workers)])  # fmt: skip
            print(f"{n:>9} samples  eval: peak RSS {e['peak_mib']:.0f} MiB, "
                  f"{1000 * e['cpu_s'] / n:.3f} ms CPU/sample ({e['wall_s']:.1f} s wall), "
                  f"SQLite {e['sqlite_mb']:.1f} MB", flush=True)  # fmt: skip
            if n not in reported:
                continue
            r = run_child(["--child", "report", "--data", str(run), "--out", str(Path(tmp) / "r")])
            print(f"{'':>9}          report: {r['cpu_s']:.1f} s CPU ({r['wall_s']:.1f} s wall), "
                  f"peak RSS {r['peak_mib']:.0f} MiB, "
                  f"index.html {r['page_mb']:.2f} MB, folder {r['folder_mb']:.1f} MB "
                  f"({r['files']} files)", flush=True)  # fmt: skip
    if a.http:
        http_eval(a.http, a.concurrency)


if __name__ == "__main__":
    main()
