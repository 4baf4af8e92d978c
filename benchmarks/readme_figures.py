"""The demo figures of docs/performance.md, re-measured: ``mmrobust demo`` wall and CPU time.

    PYTHONPATH=src python benchmarks/readme_figures.py [--rounds 1] [--out DIR]

Each round runs ``mmrobust demo --out DIR -q`` in a fresh interpreter into an empty folder
and prints its wall seconds (``time.perf_counter``), its CPU seconds (user + sys of the
child and everything it started, ``resource.getrusage(RUSAGE_CHILDREN)`` differences),
the peak resident memory of the largest child (``ru_maxrss``, MiB) and the 1-minute load
average before and after (``os.getloadavg``). Wall time depends on the machine's load;
CPU time much less so, and is the figure to compare between machines. Asserts nothing.

The test count is not measured here (it changes with every landing): count them with
``pytest --collect-only -q | tail -1``.
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

ROOT = Path(__file__).resolve().parents[1]


def _load() -> float:
    """The 1-minute load average (``os.getloadavg()[0]``)."""
    return os.getloadavg()[0]


def demo_round(out: Path) -> dict[str, float]:
    """One ``mmrobust demo`` into ``out`` (must not exist): wall s, CPU s, peak MiB, loads.

    Raises:
        subprocess.CalledProcessError: the demo exited non-zero.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = _load()
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mmrobust.cli", "demo", "--out", str(out), "-q"],
        check=True, env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_mib": after.ru_maxrss / 1024,  # Linux: KiB; the largest child so far
        "load_before": load_before,
        "load_after": _load(),
    }


def main() -> None:
    """Parse the options, run the rounds, print one line per round and the CPU range."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="keep the demo here (last round)")
    a = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; load average now {_load():.1f}")
    cpus: list[float] = []
    with tempfile.TemporaryDirectory(prefix="readme-figures-") as tmp:
        for i in range(a.rounds):
            out = Path(tmp) / f"demo{i}"
            if a.out is not None and i == a.rounds - 1:  # the last round's demo is kept
                shutil.rmtree(a.out, ignore_errors=True)
                out = a.out
            r = demo_round(out)
            cpus.append(r["cpu_s"])
            print(
                f"round {i + 1}: mmrobust demo {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU "
                f"(user + sys), {r['peak_mib']:.0f} MiB peak, load average "
                f"{r['load_before']:.1f} -> {r['load_after']:.1f}",
                flush=True,
            )
    print(f"demo CPU {min(cpus):.1f}-{max(cpus):.1f} s over {len(cpus)} round(s)")
    print("test count: pytest --collect-only -q | tail -1")


if __name__ == "__main__":
    main()
