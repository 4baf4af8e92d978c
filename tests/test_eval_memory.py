"""Eval memory does not grow with the number of samples (docs/performance.md, the scale rows).

The JSONL loader keeps one line number per sample (``datasets.stream.SampleRows``), the plan
keeps one flag per sample, rows go to SQLite as they come and the score is computed from the
rows streamed back. Checked here cheaply: the Python heap's peak (``tracemalloc``) of a whole
``run_eval`` grows by under 1 KB per added sample (about 5 KB before; about 100 bytes at 20k samples now), and the lazy
loader gives the samples and defects the whole-file reading gives. Loading, the resume plan
and the dispatch hold about 13 bytes per sample (line numbers, one flag) half-way through a
run; a Python object per sample (a list of ids or ints) would be 36 or more.
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


def _held_while_dispatching(tmp: Path, n: int, done: int) -> tuple[int, int, int]:
    """The Python heap a run of ``n`` samples (the first ``done`` finished before, as a
    resume finds them) holds half-way through handing out its work items, over what it held
    before loading: the dataset, the resume plan and the dispatch (everything of ``eval``
    but the model and the score). Returns (bytes, samples planned, work items)."""
    from mmrobust.run.checks import selected, unfinished_repeats
    from mmrobust.run.executors import repeat_batches
    from mmrobust.status import Status
    from mmrobust.store import ResultStore, RunKey, StoredRow

    data = _write(tmp / f"plan{n}.jsonl", n)
    cfg = EvalConfig(data=str(data), model="constant:A", out=str(tmp / f"p{n}"))
    key = RunKey(model_fp="m", prompt_fp="p", policy_fp="f")
    with ResultStore(tmp / f"p{n}") as store:
        first = load_dataset(str(data)).samples[:done]
        store.put_many([StoredRow(sample=s, key=key, status=Status.OK) for s in first])
        del first
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            _, samples = selected(cfg, load_dataset(str(data)))
            todo = unfinished_repeats(store, key, samples, 1)
            held, items = 0, 0
            for _ in repeat_batches(todo, 8):
                items += 1
                if items == (n - done) // 16:  # half-way
                    held = tracemalloc.get_traced_memory()[0] - before
            store.set_selection(key, (s.id for s in samples))
        finally:
            tracemalloc.stop()
    return held, len(todo[0]), items


def test_plan_and_dispatch_hold_no_python_object_per_sample(tmp_path: Path) -> None:
    """Loading, resume planning and batching hold a few bytes per sample (a line number and
    a flag), never a Python object per sample (a list of ids or ints: 36 bytes or more)."""
    (tmp_path / "w").mkdir()
    _held_while_dispatching(tmp_path / "w", 40, 8)  # warm-up: imports, first-call caches
    small, todo_small, items_small = _held_while_dispatching(tmp_path, 600, 200)
    large, todo_large, items_large = _held_while_dispatching(tmp_path, 6600, 200)
    assert (todo_small, todo_large) == (400, 6400)  # the first 200 found finished
    assert (items_small, items_large) == (50, 800)  # 400 / 8, 6400 / 8
    per_sample = (large - small) / 6000
    assert per_sample < 20, f"plan and dispatch hold {per_sample:.1f} bytes per sample"
