"""Start-up cost of the ``mmrobust`` command (issue 32 item 3). Prints figures; asserts nothing.

    PYTHONPATH=src python benchmarks/startup.py [--rounds 7] [--no-eval]

Each figure is a fresh interpreter, run in interleaved rounds (one of each command per
round), min and median over the rounds; wall seconds and CPU seconds (user + sys of the
child, from ``os.wait4``). The machine may be shared: the load average is printed before
and after, and the minimum is the figure to compare (the least disturbed run).

* ``python -c pass``: the interpreter alone (the floor of any command).
* ``import mmrobust.cli``: the cumulative import time ``python -X importtime`` reports for
  ``mmrobust.cli`` (the module ``mmrobust`` runs), in seconds.
* ``mmrobust --help`` and ``mmrobust eval --help``: the console command end to end.
* ``minimal imports``: ``import av, numpy, cv2, httpx``, what a minimal PyAV + OpenCV JPEG +
  httpx evaluation script imports (the comparison of ``benchmarks/harness_throughput.py``).
* ``eval, 4 clips``: ``mmrobust eval`` of a built tamper set (bikes + carphone, ``dropping``)
  through ``openai:`` against the scriptable local server of ``tests/fake_openai_server.py``,
  frame cache off, 1,000 bootstrap draws (the default); skipped with ``--no-eval``.

Then the heavy libraries each command had imported at exit (``sys.modules``; none of
torch, transformers, sklearn, scipy, matplotlib, ray, pandas is the target, asserted by
``tests/test_startup_imports.py``).

Target (issue 32): ``import mmrobust.cli`` and ``mmrobust eval --help`` under 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "sklearn", "scipy", "matplotlib", "ray", "pandas")
CHECKED = (*HEAVY, "skimage", "skvideo", "openai", "jinja2", "cv2", "av", "numpy", "pydantic")

_DUMP = """
import atexit, json, sys
out, args = sys.argv[1], sys.argv[2:]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
from mmrobust.cli import app
sys.argv = ["mmrobust", *args]
app()
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    env.setdefault("OPENAI_API_KEY", "sk-startup-benchmark")
    return env


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Run ``cmd``; (wall s, child CPU s, stderr). Raises on a non-zero exit."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(), text=True
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} exited {proc.returncode}: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, err


def cli_import_s() -> tuple[float, float]:
    """(cumulative import time of mmrobust.cli in s, wall of that process)."""
    wall, _cpu, err = timed([sys.executable, "-X", "importtime", "-c", "import mmrobust.cli"])
    for line in err.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| mmrobust\.cli$", line)
        if m:
            return int(m.group(1)) / 1e6, wall
    raise RuntimeError("no mmrobust.cli line in -X importtime output")


def heavy_imported(args: list[str]) -> list[str]:
    """Which of CHECKED ``mmrobust ARGS`` has imported at exit."""
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "modules.json"
        subprocess.run(
            [sys.executable, "-c", _DUMP, str(dump), *args],
            env=_env(),
            check=True,
            capture_output=True,
        )
        top = {m.split(".")[0] for m in json.loads(dump.read_text())}
    return [m for m in CHECKED if m in top]


def build_set(out: Path) -> Path:
    from mmrobust.media import sample_clips

    clips = sample_clips()
    cmd = [shutil.which("mmrobust") or "mmrobust", "tamper", str(clips["bikes"])]
    cmd += [str(clips["carphone_pristine"]), "--out", str(out), "--effects", "dropping", "-q"]
    subprocess.run(cmd, env=_env(), check=True, capture_output=True)
    return out


def fmt(values: list[float]) -> str:
    return f"min {min(values):.3f}  median {statistics.median(values):.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-eval", action="store_true", help="skip the 4-clip API eval")
    a = ap.parse_args()
    mmrobust = shutil.which("mmrobust")
    if mmrobust is None:
        raise SystemExit("the mmrobust command is not on PATH (pip install -e .)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print("load average before: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))

    with tempfile.TemporaryDirectory() as tmp:
        server = None
        eval_args: list[str] = []
        if not a.no_eval:
            sys.path.insert(0, str(ROOT))
            from tests.fake_openai_server import FakeOpenAIServer, Reply

            data = build_set(Path(tmp) / "set")
            server = FakeOpenAIServer(responder=lambda request: Reply.ok("A. Yes"))
            server.start()
            eval_args = ["eval", "--data", str(data), "--model", "openai:test"]
            eval_args += ["--model-arg", f"base_url={server.base_url}", "--cache-dir", "none"]
            eval_args += ["-q"]
        figures: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        runs: dict[str, Callable[[int], tuple[float, float]]] = {
            "python -c pass": lambda i: timed([sys.executable, "-c", "pass"])[:2],
            "minimal imports (av, numpy, cv2, httpx)": lambda i: timed(
                [sys.executable, "-c", "import av, numpy, cv2, httpx"]
            )[:2],
            "mmrobust --help": lambda i: timed([mmrobust, "--help"])[:2],
            "mmrobust eval --help": lambda i: timed([mmrobust, "eval", "--help"])[:2],
        }
        if eval_args:
            runs["mmrobust eval, 4 clips, openai: (instant server)"] = lambda i: timed(
                [mmrobust, *eval_args, "--out", str(Path(tmp) / f"run{i}")]
            )[:2]
        imports: list[float] = []
        for i in range(a.rounds):
            imports.append(cli_import_s()[0])
            for name, run in runs.items():
                wall, c = run(i)
                figures.setdefault(name, []).append(wall)
                cpu.setdefault(name, []).append(c)
        print("load average after:  {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
        print(f"\n{a.rounds} interleaved rounds, seconds")
        print(f"  {'import mmrobust.cli (-X importtime cumulative)':52s} {fmt(imports)}")
        for name in runs:
            print(f"  {name:52s} wall {fmt(figures[name])}   CPU {fmt(cpu[name])}")
        print("\nheavy libraries imported at exit (of " + ", ".join(CHECKED) + ")")
        for label, args in [("--help", ["--help"]), ("eval --help", ["eval", "--help"])] + (
            [("eval of the built set, openai:", [*eval_args, "--out", str(Path(tmp) / "mods")])]
            if eval_args
            else []
        ):
            found = heavy_imported(args)
            heavy = [m for m in found if m in HEAVY]
            print(
                f"  {label:32s} {', '.join(found) or '-'}   (of the target list: {heavy or 'none'})"
            )
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
