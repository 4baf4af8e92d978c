"""Text-only eval over HTTP: mmrobust vs a minimal httpx script, interleaved.

    python benchmarks/text_http.py [--samples 3000] [--rounds 3] [--concurrency 64]

Both send ``samples`` text-only chat completions (a yes/no question) to the same local
OpenAI-compatible server that answers at once (a separate process on 127.0.0.1, from
``harness_throughput.py``), ``concurrency`` requests in flight:

* ``minimal``: one ``httpx.Client`` (pool sized to the concurrency) and a thread pool; each
  reply's JSON parsed; nothing stored;
* ``mmrobust``: ``mmrobust eval --text-only`` with ``openai:bench`` (prompt, request,
  extraction, one SQLite commit per row, metrics);
* ``mmrobust-sized-pool``: the same with the connection pool sized to the concurrency
  (``max_connections`` and ``max_keepalive_connections`` both the concurrency) instead of
  mmrobust's (twice the concurrency, 20 kept alive).

Each is a fresh process, timed from after its imports; the order rotates per round. Prints
wall and CPU milliseconds per sample (medians over the rounds); asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_throughput import serve

QUESTION = "Is the sky green? A. Yes B. No"


def write_set(path: Path, n: int) -> None:
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({
                "id": f"s{i}", "benchmark": "tamper", "question": f"{QUESTION} ({i})",
                "options": {"A": "Yes", "B": "No"}, "answer": "B", "tamper_type": "original",
            }) + "\n")  # fmt: skip


def child_minimal(n: int, port: int, concurrency: int) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    t0, c0 = time.perf_counter(), time.process_time()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}/v1/", timeout=60, limits=limits)

    def one(i: int) -> str:
        payload = {"model": "bench", "temperature": 0, "max_tokens": 256,
                   "messages": [{"role": "user", "content": f"{QUESTION} ({i})"}]}  # fmt: skip
        r = client.post("chat/completions", json=payload)
        r.raise_for_status()
        return str(r.json()["choices"][0]["message"]["content"])

    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(one, range(n)))
    return {"run_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
            "n": len(answers)}  # fmt: skip


def child_mmrobust(data: str, out: str, port: int, concurrency: int, sized: bool) -> dict[str, Any]:
    from mmrobust.runner import EvalConfig, run_eval

    if sized:  # one connection per request in flight, all kept alive
        import httpx

        import mmrobust.models._http as http

        def limits(c: int) -> httpx.Limits:
            return httpx.Limits(max_connections=c, max_keepalive_connections=c)

        http._pool_limits = limits
    t0, c0 = time.perf_counter(), time.process_time()
    cfg = EvalConfig(
        data=data, model="openai:bench", out=out, n_resamples=0, text_only=True,
        model_args={"base_url": f"http://127.0.0.1:{port}/v1", "concurrency": str(concurrency)},
    )  # fmt: skip
    res = run_eval(cfg, progress=False)
    return {"run_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
            "n": res.n_new, "status": res.metrics.get("status_counts")}  # fmt: skip


def run_child(kind: str, args: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{proc.stdout}\n{proc.stderr}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--child", default=None)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--data", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.child == "minimal":
        print(json.dumps(child_minimal(a.samples, a.port, a.concurrency)))
        return
    if a.child in ("mmrobust", "mmrobust-sized-pool"):
        sized = a.child == "mmrobust-sized-pool"
        print(json.dumps(child_mmrobust(a.data, a.out, a.port, a.concurrency, sized)))
        return

    q: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(q,), daemon=True)
    server.start()
    port = q.get(timeout=30)
    kinds = ["minimal", "mmrobust", "mmrobust-sized-pool"]
    results: dict[str, list[dict[str, Any]]] = defaultdict(list)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "set.jsonl"
            write_set(data, a.samples)
            common = ["--port", str(port), "--concurrency", str(a.concurrency)]
            common += ["--samples", str(a.samples), "--data", str(data)]
            for r in range(a.rounds):
                for i in range(len(kinds)):
                    kind = kinds[(r + i) % len(kinds)]
                    out = ["--out", str(Path(tmp) / f"{kind}-{r}")]
                    res = run_child(kind, common + out)
                    results[kind].append(res)
                    print(f"round {r + 1} {kind:<19} {1000 * res['run_s'] / res['n']:.3f} ms/sample "
                          f"wall, {1000 * res['cpu_s'] / res['n']:.3f} ms/sample CPU")  # fmt: skip
    finally:
        server.terminate()
    print(f"\n{a.samples} text-only samples, concurrency {a.concurrency}, medians of {a.rounds}:")
    base = statistics.median(1000 * x["run_s"] / x["n"] for x in results["minimal"])
    for kind in kinds:
        wall = statistics.median(1000 * x["run_s"] / x["n"] for x in results[kind])
        cpu = statistics.median(1000 * x["cpu_s"] / x["n"] for x in results[kind])
        print(f"  {kind:<19} {wall:.3f} ms/sample wall ({wall / base:.2f}x minimal), "
              f"{cpu:.3f} ms/sample CPU")  # fmt: skip


if __name__ == "__main__":
    main()
