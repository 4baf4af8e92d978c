"""Results never depend on order: stored-row order, worker count, kill and resume.

``metrics.json`` must be byte-identical, bootstrap intervals included (rows are
scored sorted by sample id; MMR pairs are resampled in group order).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmrobust.runner import EvalConfig, rescore, run_eval
from tests.shared_data import MMR_JSON, needs_shared
from tests.test_runner import write_text_tamper_set


def _data(kind: str, tmp_path: Path) -> str:
    return "mmr-demo" if kind == "mmr" else str(write_text_tamper_set(tmp_path / "t.jsonl", 8))


def _eval(data: str, out: Path, workers: int) -> bytes:
    config = EvalConfig(
        data=data, model="random:6", out=str(out), text_only=True, workers=workers,
        model_args={"delay_s": "0.002"}, n_resamples=300,
    )  # fmt: skip
    run_eval(config, progress=False)
    return (out / "metrics.json").read_bytes()


def _shuffle_store(run_dir: Path, seed: int) -> None:
    """Rewrite the results table with its rows inserted in a shuffled order."""
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        rows = db.execute("SELECT * FROM results").fetchall()
        cols = len(rows[0])
        random.Random(seed).shuffle(rows)
        db.execute("DELETE FROM results")
        db.executemany(f"INSERT INTO results VALUES ({', '.join('?' * cols)})", rows)


@pytest.mark.parametrize("kind", ["mmr", "tamper"])
def test_metrics_bytes_ignore_workers_and_stored_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("MMROBUST_CACHE", str(tmp_path / "cache"))
    data = _data(kind, tmp_path)
    one = _eval(data, tmp_path / "w1", 1)
    assert _eval(data, tmp_path / "w4", 4) == one
    assert json.loads(one)["ci" if kind == "mmr" else "f1_ci95"]  # intervals are there
    rescored = rescore(tmp_path / "w1")
    for seed in range(2):
        copy = tmp_path / f"shuffled{seed}"
        shutil.copytree(tmp_path / "w1", copy)
        _shuffle_store(copy, seed)
        assert rescore(copy) == rescored
        assert (copy / "metrics.json").read_bytes() == (
            tmp_path / "w1" / "metrics.json"
        ).read_bytes()


def _rows(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            return int(con.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_kill_and_resume_with_other_workers_gives_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL a 4-worker run mid-way, resume with 2 workers: same bytes as 1 worker."""
    monkeypatch.setenv("MMROBUST_CACHE", str(tmp_path / "cache"))
    # 0.25 s a request in the run that is killed: 48 samples on 4 workers take 3 s, so the kill
    # lands mid-run however late a busy machine lets this loop see the 10th row (the key holds
    # no delay_s: the resume below asks the rest at 0.03 s)
    args = ["--data", "mmr-demo", "--text-only", "--model", "random:6", "--model-arg",
            "delay_s=0.25", "--bootstrap", "300", "--workers", "4", "-q"]  # fmt: skip
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mmrobust.cli", "eval", *args, "--out", str(killed)],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while _rows(killed / "results.sqlite") < 10 and time.time() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 10 <= _rows(killed / "results.sqlite") < 48, "the kill must land mid-run"

    def run(out: Path, workers: int) -> bytes:
        config = EvalConfig(
            data="mmr-demo", model="random:6", out=str(out), text_only=True, workers=workers,
            model_args={"delay_s": "0.03"}, n_resamples=300,
        )  # fmt: skip
        run_eval(config, progress=False)
        return (out / "metrics.json").read_bytes()

    resumed = run(killed, 2)
    assert resumed == run(tmp_path / "clean", 1)
    assert json.loads(resumed)["ci"]["MR"][0] < json.loads(resumed)["MR"]


@needs_shared(MMR_JSON)
def test_real_mmr_file_shuffled_gives_the_same_default_metrics(tmp_path: Path) -> None:
    records = json.loads(MMR_JSON.read_text(encoding="utf-8"))
    runs = []
    for seed in (None, 0, 1, 2):
        data = MMR_JSON
        if seed is not None:
            shuffled = records[:]
            random.Random(seed).shuffle(shuffled)
            data = tmp_path / f"shuffled{seed}.json"
            data.write_text(json.dumps(shuffled))
        config = EvalConfig(
            data=str(data), model="random:11", out=str(tmp_path / f"run{seed}"), text_only=True,
            n_resamples=200,
        )  # fmt: skip
        m = run_eval(config, progress=False).metrics
        runs.append({k: m[k] for k in ("UR", "UF", "NR", "NF", "RA", "MR", "ci", "categories")})
    assert all(r == runs[0] for r in runs[1:])
