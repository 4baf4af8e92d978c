"""Text-only eval over HTTP: mmrobust vs a minimal httpx script, interleaved.

    python benchmarks/text_http.py [--samples 3000] [--rounds 3] [--concurrency 64]

Each contender sends ``samples`` text-only chat completions (a yes/no question) to the same
local OpenAI-compatible server that answers at once (a separate process on 127.0.0.1, from
``harness_throughput.py``), ``concurrency`` requests in flight, every request the same body
(the prompt mmrobust builds for these samples, as one text part):

* ``minimal``: a thread pool of ``concurrency`` threads sharing one ``httpx.Client`` whose
  pool keeps ``concurrency`` connections alive; each reply's JSON parsed and its answer
  taken (a request that fails in transport tried again, up to 3 times); nothing stored or
  scored;
* ``minimal-per-thread``: the same, each thread with an ``httpx.Client`` of its own (one
  connection; one SSL context shared), as mmrobust sends;
* ``mmrobust``: ``run_eval`` of ``openai:bench`` with ``--text-only``, as ``mmrobust eval``
  runs it without its progress bar: dataset loaded and checked, prompt, request with retries
  and the overall deadline, reply read up to ``max_reply_bytes``, redaction, extraction, rows
  committed to SQLite as they finish, metrics and ``run.json`` written.

Each is a fresh process, timed from after its imports (bytecode cached, as in an installed
package: one untimed warm-up run of each first); the order rotates per round. Prints wall and
CPU milliseconds per sample (medians over the rounds) and their ratios to ``minimal``, and
how many requests each retried; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
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


def child_minimal(
    n: int, port: int, concurrency: int, prompt: str, per_thread: bool
) -> dict[str, Any]:
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    t0, c0 = time.perf_counter(), time.process_time()
    base = f"http://127.0.0.1:{port}/v1/"
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    shared = httpx.Client(base_url=base, timeout=60, limits=limits)
    ssl_context = httpx.create_ssl_context()
    local = threading.local()
    clients: list[httpx.Client] = []
    retried: list[int] = []

    def client() -> httpx.Client:
        if not per_thread:
            return shared
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=base, timeout=60, verify=ssl_context)
            clients.append(local.client)
        return local.client  # type: ignore[no-any-return]

    def one(i: int) -> str:
        payload = {"model": "bench", "temperature": 0.0, "max_tokens": 256,
                   "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}]}  # fmt: skip
        for attempt in range(3):  # a shared pool races (encode/httpcore#1110): try again
            try:
                r = client().post("chat/completions", json=payload)
                break
            except httpx.TransportError:
                if attempt == 2:
                    raise
                retried.append(i)
        r.raise_for_status()
        return str(r.json()["choices"][0]["message"]["content"])

    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(one, range(n)))
    for c in [shared, *clients]:
        c.close()
    return {"run_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
            "n": len(answers), "retried": len(set(retried))}  # fmt: skip


def bench_config(data: str, out: str, port: int, concurrency: int) -> Any:
    """The ``EvalConfig`` of a text-only ``openai:`` eval against the instant server on ``port``
    (no bootstrap), ``concurrency`` requests in flight (``benchmarks/scale.py --http`` too)."""
    from mmrobust.runner import EvalConfig

    return EvalConfig(
        data=data, model="openai:bench", out=out, n_resamples=0, text_only=True,
        model_args={"base_url": f"http://127.0.0.1:{port}/v1", "concurrency": str(concurrency)},
    )  # fmt: skip


def child_mmrobust(data: str, out: str, port: int, concurrency: int) -> dict[str, Any]:
    import sqlite3

    from mmrobust.runner import run_eval

    t0, c0 = time.perf_counter(), time.process_time()
    res = run_eval(bench_config(data, out, port, concurrency), progress=False)
    run_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    with sqlite3.connect(Path(out) / "results.sqlite") as db:
        extras = [json.loads(e) for (e,) in db.execute("SELECT extra FROM results")]
    return {"run_s": run_s, "cpu_s": cpu_s, "n": res.n_new,
            "status": res.metrics.get("status_counts"),
            "retried": sum(e.get("attempts", 1) > 1 for e in extras)}  # fmt: skip


def sent_prompt(data: Path) -> str:
    """The prompt text mmrobust sends for the first sample of ``data`` (all are alike)."""
    from mmrobust.datasets import load_dataset
    from mmrobust.prompts import build_prompt
    from mmrobust.runner import EvalConfig

    cfg = EvalConfig(data=str(data), model="openai:bench", out="unused", text_only=True)
    dataset = load_dataset(cfg.data, cfg.format, images=cfg.images, text_only=True)
    return build_prompt(dataset.samples[0], cfg.prompt_config()).text


def run_child(kind: str, args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{proc.stdout}\n{proc.stderr}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


KINDS = ("minimal", "minimal-per-thread", "mmrobust")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--child", default=None)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--data", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--prompt", default="")
    a = ap.parse_args()
    if a.child in ("minimal", "minimal-per-thread"):
        per_thread = a.child == "minimal-per-thread"
        print(json.dumps(child_minimal(a.samples, a.port, a.concurrency, a.prompt, per_thread)))
        return
    if a.child == "mmrobust":
        print(json.dumps(child_mmrobust(a.data, a.out, a.port, a.concurrency)))
        return

    q: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(q,), daemon=True)
    server.start()
    port = q.get(timeout=30)
    results: dict[str, list[dict[str, Any]]] = defaultdict(list)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "set.jsonl"
            write_set(data, a.samples)
            common = ["--port", str(port), "--concurrency", str(a.concurrency)]
            common += ["--prompt", sent_prompt(data)]
            # bytecode cached as in an installed package, warmed by one untimed run of each
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
            warm = Path(tmp) / "warm.jsonl"
            write_set(warm, 2 * a.concurrency)
            for kind in KINDS:
                warm_args = ["--samples", str(2 * a.concurrency), "--data", str(warm)]
                run_child(kind, common + warm_args + ["--out", str(Path(tmp) / f"w-{kind}")], env)
            common += ["--samples", str(a.samples), "--data", str(data)]
            for r in range(a.rounds):
                for i in range(len(KINDS)):
                    kind = KINDS[(r + i) % len(KINDS)]
                    out = ["--out", str(Path(tmp) / f"{kind}-{r}")]
                    res = run_child(kind, common + out, env)
                    results[kind].append(res)
                    retried = f", {res['retried']} retried" if "retried" in res else ""
                    print(f"round {r + 1} {kind:<18} {1000 * res['run_s'] / res['n']:.3f} ms/sample "
                          f"wall, {1000 * res['cpu_s'] / res['n']:.3f} ms/sample CPU{retried}")  # fmt: skip
    finally:
        server.terminate()
    print(f"\n{a.samples} text-only samples, concurrency {a.concurrency}, medians of {a.rounds}:")

    def median(kind: str, what: str) -> float:
        return statistics.median(1000 * x[what] / x["n"] for x in results[kind])

    wall0, cpu0 = median("minimal", "run_s"), median("minimal", "cpu_s")
    for kind in KINDS:
        wall, cpu = median(kind, "run_s"), median(kind, "cpu_s")
        print(f"  {kind:<18} CPU {cpu:.3f} ms/sample ({cpu / cpu0:.2f}x minimal), "
              f"wall {wall:.3f} ms/sample ({wall / wall0:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
