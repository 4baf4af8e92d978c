"""Harness overhead: per-sample cost of load + prompt + store + extract with an instant model,
and the time to score 20,000 stored rows. Prints figures; asserts nothing.

    python benchmarks/harness_overhead.py [--samples 2000] [--rows 20000]

Targets (issue 3): under 1 ms per sample; under 5 s to score 20,000 rows.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from mmrobust.metrics import compute_metrics
from mmrobust.records import ScoredRecord
from mmrobust.runner import EvalConfig, run_eval
from mmrobust.status import Status

TYPES = ("original", "dropping", "masking", "repetition", "rotation", "substitution")


def write_set(path: Path, n: int) -> None:
    with path.open("w") as fh:
        for i in range(n):
            t = TYPES[i % len(TYPES)]
            fh.write(json.dumps({
                "id": f"s{i}", "benchmark": "tamper", "question": "q", "options": {"A": "Yes", "B": "No"},
                "answer": "B" if t == "original" else "A", "group": f"g{i // 6}", "tamper_type": t,
            }) + "\n")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=20000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.jsonl"
        write_set(warm, 12)  # one-time imports (scikit-learn, SciPy) are not per-sample overhead
        run_eval(
            EvalConfig(data=str(warm), model="random:0", out=str(Path(tmp) / "w"), n_resamples=0),
            progress=False,
        )
        data = Path(tmp) / "d.jsonl"
        write_set(data, a.samples)
        cfg = EvalConfig(
            data=str(data), model="random:0", out=str(Path(tmp) / "run"), workers=1, n_resamples=0
        )
        t0 = time.perf_counter()
        res = run_eval(cfg, progress=False)
        dt = time.perf_counter() - t0
        print(f"eval, instant model, {res.n_new} samples: {dt:.2f} s total, {1000 * dt / res.n_new:.3f} ms/sample "
              "(load, prompt, extract, SQLite commit per row, metrics)")  # fmt: skip
    recs = [
        ScoredRecord(
            sample_id=f"s{i}",
            benchmark="tamper",
            group=f"g{i // 6}",
            answer="B" if TYPES[i % 6] == "original" else "A",
            options={"A": "Yes", "B": "No"},
            predicted="A" if i % 3 else "B",
            status=Status.OK,
            tamper_type=TYPES[i % 6],
            task=f"t{i % 19}",
        )
        for i in range(a.rows)
    ]
    t0 = time.perf_counter()
    compute_metrics(recs, "tamper", n_resamples=1000)
    print(
        f"score {a.rows} rows (1000 cluster-bootstrap resamples): {time.perf_counter() - t0:.2f} s"
    )


if __name__ == "__main__":
    main()
