"""Runner and store: typed failures, resume, rescore, SIGKILL mid-run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from mmrobust.models.base import Model, Request, Response
from mmrobust.runner import EvalConfig, rescore, run_eval
from mmrobust.status import Status
from mmrobust.store import ResultStore, RunKey
from tests.runs import duplicate_rows

TYPES = ("dropping", "masking", "repetition", "rotation", "substitution")


def write_text_tamper_set(path: Path, n_sources: int) -> Path:
    """A text-only tamper set in generic JSONL: per source one original and five tampered."""
    lines = []
    for s in range(n_sources):
        for t in ("original", *TYPES):
            lines.append(json.dumps({
                "id": f"v{s}_{t}", "benchmark": "tamper", "question": "tampered?",
                "options": {"A": "Yes", "B": "No"}, "answer": "B" if t == "original" else "A",
                "group": f"v{s}", "tamper_type": t,
            }))  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


class Flaky(Model):
    """Raises for any batch containing a sample id with 'boom'; answers 'maybe' for 'vague'."""

    media_input = "none"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        if any("boom" in r.sample_id for r in requests):
            raise RuntimeError("GPU on fire")
        return [Response(text="maybe" if "vague" in r.sample_id else "A") for r in requests]


def test_typed_failures_never_stop_the_run(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    (tmp_path / "broken.mp4").write_bytes(b"not a video")
    recs = [
        {"id": "ok", "question": "q", "options": ["Yes", "No"], "answer": "A"},
        {"id": "boom", "question": "q", "options": ["Yes", "No"], "answer": "A"},
        {"id": "vague", "question": "q", "options": ["Yes", "No"], "answer": "A"},
        {
            "id": "missing",
            "question": "q",
            "options": ["Yes", "No"],
            "answer": "A",
            "video": "nope.mp4",
        },
        {
            "id": "broken",
            "question": "q",
            "options": ["Yes", "No"],
            "answer": "A",
            "video": "broken.mp4",
        },
    ]
    data.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    out = tmp_path / "run"
    cfg = EvalConfig(data=str(data), model="x", out=str(out), cache_dir=str(tmp_path / "c"))
    res = run_eval(cfg, progress=False, model=Flaky())
    assert res.n_new == 5
    with ResultStore(out) as store:
        rows = {r.sample_id: r for r in store.rows()}
    assert rows["ok"].status is Status.OK and rows["ok"].letter == "A"
    assert rows["boom"].status is Status.MODEL_ERROR and "GPU on fire" in (rows["boom"].error or "")
    assert rows["vague"].status is Status.PARSE_FAIL and rows["vague"].raw_text == "maybe"
    assert rows["missing"].status is Status.DATA_ERROR
    assert rows["broken"].status is Status.OK  # Flaky is text-only: the file is never opened
    m = json.loads((out / "metrics.json").read_text())
    assert m["parse_fail_rate"] == pytest.approx(1 / 5) and m["error_rate"] == pytest.approx(2 / 5)
    assert m["run"]["extraction"] == "lenient" and "defects" in m
    # A frames model opens the media: the corrupt clip becomes a media_error.
    res2 = run_eval(
        EvalConfig(
            data=str(data),
            model="constant:A",
            model_args={"media": "frames"},
            out=str(tmp_path / "run2"),
            cache_dir=str(tmp_path / "c"),
        ),
        progress=False,
    )
    with ResultStore(res2.run_dir) as store:
        by_id = {r.sample_id: r for r in store.rows()}
    assert by_id["broken"].status is Status.MEDIA_ERROR and by_id["broken"].error
    # Re-running retries the transient model_error only.
    again = run_eval(cfg, progress=False, model=Flaky())
    assert (again.n_skipped, again.n_new) == (4, 1)


def test_rescore_changes_extraction_without_model(tmp_path: Path) -> None:
    data = write_text_tamper_set(tmp_path / "t.jsonl", 2)
    out = tmp_path / "run"
    run_eval(
        EvalConfig(data=str(data), model="constant:Yes", out=str(out), n_resamples=0),
        progress=False,
    )
    with ResultStore(out) as store:
        store.put(store.rows()[0].__class__(**{**store.rows()[0].__dict__, "raw_text": "Yes"}))
    strict = rescore(out, extract_mode="strict")
    assert strict["parse_fail_rate"] == pytest.approx(1 / 12)
    assert json.loads((out / "run.json").read_text())["run"]["extraction"] == "strict"
    lenient = rescore(out, extract_mode="lenient")
    assert lenient["parse_fail_rate"] == 0 and lenient["f1"]["overall"] == pytest.approx(2 / 3)


def test_rescore_and_report_score_the_samples_the_last_eval_selected(tmp_path: Path) -> None:
    """A re-run on fewer samples (``--limit``, or a rebuilt dataset without some clips) keeps
    the other rows stored, but ``rescore`` and ``report`` score what that eval scored."""
    from mmrobust.report import load_run

    data = write_text_tamper_set(tmp_path / "t.jsonl", 2)  # 12 samples
    out = tmp_path / "run"
    full = run_eval(
        EvalConfig(data=str(data), model="constant:Yes", out=str(out), n_resamples=0),
        progress=False,
    )
    assert full.metrics["n_samples"] == 12
    part = run_eval(
        EvalConfig(data=str(data), model="constant:Yes", out=str(out), n_resamples=0, limit=6),
        progress=False,
    )
    assert part.metrics["n_samples"] == 6
    assert rescore(out)["n_samples"] == 6  # was 12: every stored row
    assert len(load_run(out).rows) == 6
    with ResultStore(out) as store:
        assert len(store.rows()) == 12  # nothing deleted
        key = store.keys()[0]
        assert sorted(store.selection(key) or []) == sorted(f"v0_{t}" for t in ("original", *TYPES))
        store._db.execute("DELETE FROM selection")  # a store from before selections
        store._db.commit()
    assert rescore(out)["n_samples"] == 12  # then every stored row counts, as before


def _count_rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return int(con.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    data = write_text_tamper_set(tmp_path / "t.jsonl", 10)  # 60 samples
    args = ["--data", str(data), "--model", "random:7", "--model-arg", "delay_s=0.03",
            "--workers", "2", "--bootstrap", "200", "-q"]  # fmt: skip
    exe = [sys.executable, "-m", "mmrobust.cli", "eval"]
    killed = tmp_path / "killed"
    # 0.2 s a request in the run that is killed (60 samples on 2 workers: 6 s), so the kill lands
    # mid-run however late a busy machine lets this loop see the 12th row; the key holds no delay_s
    slow = [a.replace("delay_s=0.03", "delay_s=0.2") for a in args]
    proc = subprocess.Popen([*exe, *slow, "--out", str(killed)], stdout=subprocess.DEVNULL)
    deadline = time.time() + 60
    while _count_rows(killed / "results.sqlite") < 12 and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = _count_rows(killed / "results.sqlite")
    assert 12 <= n_before < 60, "the kill must land mid-run"
    done = subprocess.run(
        [*exe, *args, "--out", str(killed)], capture_output=True, text=True, check=True
    )
    assert f"{n_before} resumed" in done.stdout
    clean = tmp_path / "clean"
    subprocess.run([*exe, *args, "--out", str(clean)], capture_output=True, check=True)
    m_killed = json.loads((killed / "metrics.json").read_text())
    m_clean = json.loads((clean / "metrics.json").read_text())
    assert m_killed == m_clean
    assert duplicate_rows(killed) == 0
    with ResultStore(killed) as store:
        assert len(store.rows()) == 60
    shutil.rmtree(clean)


def test_store_key_is_unique(tmp_path: Path) -> None:
    from mmrobust.schema import Sample
    from mmrobust.store import StoredRow

    s = Sample(id="x", question="q", options={"A": "a"}, answer="A")
    key = RunKey("m", "p", "f")
    with ResultStore(tmp_path / "r") as store:
        store.put(StoredRow(sample=s, key=key, status=Status.API_ERROR, error="503"))
        assert [r.status for r in store.rows(key)] == [Status.API_ERROR]
        store.put(StoredRow(sample=s, key=key, status=Status.OK, raw_text="A", letter="A"))
        assert [r.status for r in store.rows(key)] == [Status.OK]  # the same row, overwritten
        assert store.rows()[0].sample == s
    assert duplicate_rows(tmp_path / "r") == 0
