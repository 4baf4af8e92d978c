"""Eval memory does not grow with the number of samples (docs/performance.md, the scale rows).

The JSONL loader keeps one line number per sample (``datasets.stream.SampleRows``), the plan
keeps one flag per sample, rows go to SQLite as they come and the score is computed from the
rows streamed back. Checked here cheaply: the Python heap's peak (``tracemalloc``) of a whole
``run_eval`` grows by under 1 KB per added sample (about 5 KB before; about 100 bytes at 20k samples now), and the lazy
loader gives the samples and defects the whole-file reading gives.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from mmrobust.datasets import load_dataset
from mmrobust.datasets.stream import SampleRows
from mmrobust.runner import EvalConfig, run_eval

TYPES = ("original", "dropping", "masking", "repetition", "rotation", "substitution")


def _write(path: Path, n: int) -> Path:
    with path.open("w") as fh:
        for i in range(n):
            t = TYPES[i % len(TYPES)]
            rec = {
                "id": f"s{i}", "benchmark": "tamper", "question": "Is this clip tampered?",
                "options": {"A": "Yes", "B": "No"}, "answer": "B" if t == "original" else "A",
                "group": f"g{i // 6}", "tamper_type": t,
            }  # fmt: skip
            fh.write(json.dumps(rec) + "\n")
    return path


def _peak(tmp: Path, n: int) -> tuple[int, dict[str, object]]:
    data = _write(tmp / f"set{n}.jsonl", n)
    cfg = EvalConfig(data=str(data), model="constant:A", out=str(tmp / f"run{n}"),
                     n_resamples=0, workers=1)  # fmt: skip
    tracemalloc.start()
    try:
        res = run_eval(cfg, progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, res.metrics


def test_eval_peak_memory_does_not_grow_per_sample(tmp_path: Path) -> None:
    run_eval(  # warm-up: imports and first-call caches are not counted
        EvalConfig(data=str(_write(tmp_path / "w.jsonl", 30)), model="constant:A",
                   out=str(tmp_path / "w"), n_resamples=0, workers=1),
        progress=False,
    )  # fmt: skip
    small, m_small = _peak(tmp_path, 200)
    large, m_large = _peak(tmp_path, 1400)
    assert m_small["n_samples"] == 200 and m_large["n_samples"] == 1400
    # constant:A says Yes to all: every tampered clip is a true positive, every original a
    # false positive: 1400 samples, F1 per type 2 * tp / (2 * tp + fp) = 2/3 (233 or 234 each)
    assert m_large["f1"]["dropping"] == pytest.approx(2 / 3)  # type: ignore[index]
    assert m_large["status_counts"] == {"ok": 1400}
    per_sample = (large - small) / 1200
    assert per_sample < 1000, f"eval's Python heap peak grows {per_sample:.0f} bytes per sample"


def test_lazy_jsonl_reads_what_the_whole_file_gives(tmp_path: Path) -> None:
    recs: list[object] = [
        {"id": "a", "question": "q1", "options": ["x", "y"], "answer": "x"},
        {"id": "b", "question": "q2", "options": {"A": "1", "B": "2"}, "answer": "B"},
        {"id": "a", "question": "dup", "options": ["x", "y"], "answer": "y"},  # later: dropped
        {"question": "no id", "options": ["x", "y"], "answer": "y"},  # id: its line number
        {"id": "c", "question": "no options", "answer": "A"},  # skipped
        ["not", "an", "object"],  # skipped
        {"id": "d", "question": "q4", "options": ["x", "y"], "answer": "x", "video": "no.mp4"},
    ]
    jsonl = tmp_path / "set.jsonl"
    jsonl.write_text("\ufeff" + "\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    whole = tmp_path / "set.json"  # a JSON array: read whole into a list
    whole.write_text(json.dumps(recs), encoding="utf-8")
    lazy, eager = load_dataset(jsonl), load_dataset(whole)
    assert isinstance(lazy.samples, SampleRows) and isinstance(eager.samples, list)
    assert list(lazy.samples) == eager.samples
    assert [s.id for s in lazy.samples] == ["a", "b", "4", "d"]
    assert lazy.samples[2].id == "4" and [s.id for s in lazy.samples[1:3]] == ["b", "4"]
    assert lazy.defects == [d.replace("set.json:", "set.jsonl:") for d in eager.defects]
    assert len(lazy.defects) == 4  # 2 skipped, 1 duplicate, 1 missing video
    assert (lazy.benchmark, lazy.data_hash != eager.data_hash) == (eager.benchmark, True)


def test_lazy_jsonl_refuses_a_file_changed_under_it(tmp_path: Path) -> None:
    data = _write(tmp_path / "set.jsonl", 12)
    ds = load_dataset(data)
    assert len(ds.samples) == 12
    with data.open("a") as fh:
        fh.write("\n")
    with pytest.raises(ValueError, match="changed while it was being evaluated"):
        list(ds.samples)
