"""The sample browser's data (one JSON document), the console summary and the unit convention."""

from __future__ import annotations

import json
from pathlib import Path

from mmrobust.datasets.base import TAMPER_QUESTION, YES_NO
from mmrobust.prompts import PromptConfig, build_prompt, prompt_record
from mmrobust.report.browser import BrowserRun, _thumb_order, build_payload, script_json, shorten
from mmrobust.report.tables import summary_text
from mmrobust.report.units import pct, pct_interval, percent
from mmrobust.schema import Sample, Window
from mmrobust.status import Status
from mmrobust.store import RunKey, StoredRow

KEY = RunKey("m", "p", "f")


def clip(i: int, ttype: str) -> Sample:
    window = (
        None
        if ttype == "original"
        else Window(start_frame=40, end_frame=65, start_s=1.6, end_s=2.6)
    )
    return Sample(
        id=f"v{i}__{ttype}", benchmark="tamper", video=Path(f"/nowhere/v{i}_{ttype}.mp4"),
        question=TAMPER_QUESTION, options=dict(YES_NO), answer="B" if ttype == "original" else "A",
        group=f"v{i}", tamper_type=ttype, window=window, meta={"frames_output": 132},
    )  # fmt: skip


def row(
    sample: Sample,
    letter: str,
    raw: str = "",
    frames: list[int] | None = None,
    official: bool = False,
) -> StoredRow:
    """A stored row with the prompt text eval stores with it (``official``: --official's)."""
    config = PromptConfig(option_style="vlmevalkit" if official else "paper", official=official)
    return StoredRow(
        sample=sample, key=KEY, status=Status.OK, raw_text=raw or letter, letter=letter,
        answer=sample.answer, options=dict(sample.options), frame_indices=frames,
        window_covered=None if frames is None or sample.window is None else False,
        prompt=prompt_record(build_prompt(sample, config)),
    )  # fmt: skip


def test_payload_one_sample_per_id_with_every_answer(tmp_path: Path) -> None:
    samples = [clip(i, t) for i in range(2) for t in ("original", "masking")]
    frames = [8, 24, 41, 57, 74, 90, 107, 123]
    long = "Looking closely " * 320 + "so the answer is A"  # 5,138 characters
    runs = [
        BrowserRun("constant:A", "set", "tamper", {"config": {}}, [row(s, "A") for s in samples]),
        BrowserRun(
            "vlm",
            "set",
            "tamper",
            {"config": {"official": True}},
            [row(s, "A", raw=long, frames=frames, official=True) for s in samples],
        ),
        BrowserRun(
            "vlm2", "set", "tamper", {"config": {}}, [row(s, "B", frames=frames) for s in samples]
        ),
    ]
    payload = build_payload(runs, tmp_path, max_thumbs=0)
    assert [s["id"] for s in payload["samples"]] == [
        "v0__masking", "v0__original", "v1__masking", "v1__original",
    ]  # fmt: skip
    s = payload["samples"][0]
    assert (s["t"], s["a"], s["n"], s["w"], s["th"]) == ("masking", "A. Yes", 132, [40, 65], "")
    assert s["fs"] == [frames]  # the same frame list of two runs is stored once
    a_const, a_vlm, a_vlm2 = s["r"]
    assert (a_const[0], a_const[2], a_const[4], a_const[9]) == (0, "A", 1, -1)
    assert (a_vlm[6], a_vlm[9], a_vlm2[9]) == (0, 0, 0)  # window not covered, frames list 0
    # two prompts in all: the paper's, and the reference framing sent with --official
    assert len(payload["prompts"]) == 2 and a_const[10] == a_vlm2[10] != a_vlm[10]
    assert payload["prompts"][a_const[10]] == f"{TAMPER_QUESTION}\nOptions:\nA. Yes\nB. No"
    official = payload["prompts"][a_vlm[10]]
    assert official.startswith("[system] Carefully watch the video")
    assert "(A) Yes\n(B) No\nOnly give the best option." in official
    assert official.endswith("[assistant prefill] Best option:(")
    # a long reply keeps its head and its tail (where the answer usually is)
    assert a_vlm[1].startswith("Looking closely") and a_vlm[1].endswith("so the answer is A")
    assert "characters cut" in a_vlm[1] and len(a_vlm[1]) < len(long)


def test_script_json_cannot_close_its_element() -> None:
    text = script_json({"raw": "</script><script>alert(1)</script> & more"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"raw": "</script><script>alert(1)</script> & more"}


def test_shorten_and_thumbnail_budget() -> None:
    assert shorten("short", 10) == "short"
    cut = shorten("x" * 50 + "ANSWER", 20)
    assert cut.startswith("x" * 12) and cut.endswith("ANSWER") and "[36 characters cut]" in cut
    keys = [("tamper-set", f"c{i}") for i in range(5)] + [("mmr", f"q{i}") for i in range(3)]
    # datasets take turns, each in its own order, until the budget is spent
    assert _thumb_order(keys, 5) == [
        ("tamper-set", "c0"), ("mmr", "q0"), ("tamper-set", "c1"), ("mmr", "q1"),
        ("tamper-set", "c2"),
    ]  # fmt: skip
    assert len(_thumb_order(keys, 100)) == 8


def test_units_one_convention() -> None:
    assert (pct(0.97142), pct(2 / 3), pct(None), percent(6.666), percent(None)) == (
        "97.1", "66.7", "–", "6.67", "–",
    )  # fmt: skip
    assert pct_interval([0.88, 1.0]) == "88.0–100.0"


def test_summary_prints_f1_ci_and_window_coverage() -> None:
    metrics = {
        "benchmark": "tamper", "n_samples": 24,
        "f1": {"dropping": 1 / 3, "masking": 0.0, "overall": 1 / 6},
        "f1_ci95": {"overall": [0.05, 0.3]},
        "window_coverage": {"dropping": 0.75, "masking": 1.0},
        "parse_fail_rate": 1 / 24, "error_rate": 0.0,
        "run": {"model": "random:0", "frames": "8 segment-centre frames"},
    }  # fmt: skip
    text = summary_text(metrics)
    assert "tamper: 24 samples, model random:0" in text
    assert "F1 %: Drop 33.3  Mask 0.0  | Overall 16.7 (95% CI 5.0–30.0)" in text
    assert "window coverage 87.5% (tampered clips with a shown frame inside the window): " in text
    assert "Drop 75.0  Mask 100.0" in text
    assert "parse-fail 4.2%  errors 0.0%" in text
    metrics["window_coverage"] = {"dropping": None, "masking": None}
    metrics["run"] = {"model": "forensic", "frames": "whole video (model reads the file)"}
    assert "window coverage: not measured (frames: whole video (model reads the file))" in (
        summary_text(metrics)
    )


def test_summary_names_the_always_yes_f1_and_hides_the_ci_of_nothing() -> None:
    # 9 tampered clips of each type beside 3 originals: always Yes 2*9/(2*9+3) = 85.7,
    # a coin flip 2*9/(3*9+3) = 60.0
    per_type = {t: {"n_tampered": 9, "n_original": 3} for t in ("dropping", "masking")}
    metrics = {
        "benchmark": "tamper", "n_samples": 21, "per_type": per_type,
        "f1": {"dropping": 0.5, "masking": 0.5, "overall": 0.5},
        "f1_ci95": {"overall": [0.4, 0.6]}, "parse_fail_rate": 0.0, "error_rate": 0.0,
    }  # fmt: skip
    text = summary_text(metrics)
    assert "| Overall 50.0 (95% CI 40.0–60.0; chance: always Yes 85.7, coin flip 60.0)" in text
    assert "answering Yes to every clip scores F1 85.7 here (66.7 on a balanced set)" in text
    # nothing scored: no interval is shown for a missing F1
    metrics["f1"] = {"dropping": None, "masking": None, "overall": None}
    metrics["f1_ci95"] = {"overall": [0.0, 0.0]}
    assert "| Overall – (chance: always Yes 85.7, coin flip 60.0)" in summary_text(metrics)


def test_summary_of_a_text_only_mmr_run() -> None:
    metrics = {
        "benchmark": "mmr", "pairs": 300, "UR": 20, "UF": 56, "NR": 54, "NF": 170,
        "RA": 6.67, "MR": 73.68, "ci": {"RA": [4.0, 9.666], "MR": [63.1, 83.0]},
        "parse_fail_rate": 0.0, "error_rate": 0.0,
        "run": {"model": "constant:A", "text_only": True},
    }  # fmt: skip
    text = summary_text(metrics)
    assert (
        text.splitlines()[0]
        == "mmr: 300 pairs, model constant:A (text only: no images or frames sent)"
    )
    assert "RA 6.67% (95% CI 4.00–9.67)  MR 73.68% (95% CI 63.10–83.00)" in text
