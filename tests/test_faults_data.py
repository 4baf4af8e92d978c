"""Bad dataset files and bad tamper sources that used to crash a load or silently corrupt a
build (issue 17 items 7, 8, 9, 10, 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmrobust.datasets import DatasetError, load_dataset
from mmrobust.runner import EvalConfig, run_eval

DEEP = "[" * 100_000 + "]" * 100_000  # past Python's recursion limit
NESTED = '{"k": ' * 300 + "1" + "}" * 300  # parses, but no sample may hold it


def _good(i: int) -> dict[str, object]:
    return {"id": f"s{i}", "question": "q", "options": ["Yes", "No"], "answer": "Yes"}


# -- item 7: deeply nested JSON is a record defect (or a clear dataset error) ----------------


def test_deeply_nested_jsonl_records_are_defects_and_the_run_goes_on(tmp_path: Path) -> None:
    lines = [json.dumps(_good(0)), DEEP, json.dumps({**_good(2), "meta": {"x": 1}})]
    lines.append(json.dumps(_good(3))[:-1] + ', "extra": ' + NESTED + "}")
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(lines) + "\n")
    ds = load_dataset(data)
    assert [s.id for s in ds.samples] == ["s0", "s2"]
    assert len(ds.defects) == 2
    assert "d.jsonl:2: skipped" in ds.defects[0] and "nested too deeply" in ds.defects[0]
    assert "d.jsonl:4: skipped" in ds.defects[1] and "deeper than 64 levels" in ds.defects[1]
    res = run_eval(
        EvalConfig(data=str(data), model="constant:A", out=str(tmp_path / "run"), n_resamples=0),
        progress=False,
    )
    assert res.n_new == 2 and len(res.metrics["defects"]) == 2


def test_deeply_nested_json_in_every_format_never_raises_recursion_error(tmp_path: Path) -> None:
    array = tmp_path / "array.json"  # a JSON array file: the whole file is unreadable
    array.write_text("[" + json.dumps(_good(0)) + ", " + DEEP + "]")
    with pytest.raises(DatasetError, match="nested too deeply"):
        load_dataset(array, "jsonl")

    manifest = tmp_path / "set"
    manifest.mkdir()
    (manifest / "manifest.jsonl").write_text(DEEP + "\n")
    (manifest / "errors.jsonl").write_text(DEEP + "\n")
    assert "nested too deeply" in load_dataset(manifest).defects[0]

    mvtb = tmp_path / "mvtb"
    (mvtb / "json").mkdir(parents=True)
    (mvtb / "json" / "task_a.json").write_text(DEEP)
    row = {"video": "v.mp4", "question": "q", "candidates": ["Yes", "No"], "answer": "No"}
    (mvtb / "json" / "task_b.json").write_text(json.dumps([{**row, "x": json.loads(NESTED)}]))
    defects = load_dataset(mvtb, text_only=True).defects
    assert "task_a.json: unreadable" in defects[0] and "nested too deeply" in defects[0]
    assert "task_b.json[0]: skipped" in defects[1] and "deeper than 64" in defects[1]

    mmr = tmp_path / "MMR-benchmark.json"
    mmr.write_text("[" + DEEP + "]")
    with pytest.raises(DatasetError, match="nested too deeply"):
        load_dataset(mmr, "mmr")


# -- item 8: MMR questions that are not 4-option questions are defects -----------------------


def test_mmr_fifth_option_and_repeated_d_are_defects_not_merged(tmp_path: Path) -> None:
    def pair(pid: str, question: str) -> list[dict[str, str]]:
        return [
            {
                "id": pid,
                "image": "x.jpg",
                "question": question,
                "ground_truth": "A",
                "question_type": qt,
            }
            for qt in ("POS", "NEG")
        ]

    records = pair("attribute/color&texture/01", "What colour?\nA. red\nB. blue\nC. green\nD. grey")
    records += pair("attribute/color&texture/02", "What colour?\nA. a\nB. b\nC. c\nD. d\nE. e")
    records += pair("attribute/shape/01", "Which shape?\nA. a\nB. b\nC. c\nD. d\nD. round")
    records += pair("attribute/shape/02", "Which shape? A. a B. b C. c D. d E. square")
    path = tmp_path / "MMR-benchmark.json"
    path.write_text(json.dumps(records))
    ds = load_dataset(path, text_only=True)
    ok = [s for s in ds.samples if not s.error]
    assert {s.group for s in ok} == {"attribute/color&texture/01"}
    assert ok[0].options == {"A": "red", "B": "blue", "C": "green", "D": "grey"}
    bad = {s.id: s.error for s in ds.samples if s.error}
    assert len(bad) == 6 and all("not a 4-option question" in e for e in bad.values())
    joined = "\n".join(ds.defects)
    assert "attribute/color&texture/02#pos: not a 4-option question: option E" in joined
    assert "attribute/shape/01#neg: not a 4-option question: option D given twice" in joined
    assert "attribute/shape/02#pos: not a 4-option question: option E" in joined
