"""Reasoning models (issue 28): the reasoning split, its stored columns, the per-run count of
replies cut inside their reasoning, and the browser's collapsed view."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from mmrobust.models.base import Model, Request, Response
from mmrobust.reasoning import reasoning_summary, split_reasoning, suggested_max_tokens
from mmrobust.report.tables import summary_text
from mmrobust.runner import EvalConfig, rescore, run_eval
from mmrobust.status import Status
from mmrobust.store import ResultStore

REASON = "Option A would mean tampered. The frames look fine."


@pytest.mark.parametrize(
    ("text", "field", "answer", "reasoning", "form"),
    [
        (f"<think>\n{REASON}\n</think>\n\nB", None, "\n\nB", REASON, "closed"),
        (f"{REASON}\n</think>\n\nB", None, "\n\nB", REASON, "unopened"),  # template opened it
        (f"<think>\n{REASON}", None, "", REASON, "cut"),  # never closed: no answer
        ("B", REASON, "B", REASON, "field"),
        ("", REASON, "", REASON, "cut"),  # vLLM: content null, reasoning_content set
        ("B", None, "B", None, "none"),
        ("B", "  ", "B", None, "none"),
        (f"<think>{REASON}</think>x<think>more", None, "", f"{REASON}\n\nmore", "cut"),
        ("<think>a</think><think>b</think>C", None, "C", "a\n\nb", "closed"),
        (f"<think>{REASON}</think>B", "field text", "B", f"field text\n\n{REASON}", "closed"),
        # gpt-oss harmony channels (issue 37): analysis is reasoning, final the answer
        (
            f"<|channel|>analysis<|message|>{REASON}<|end|><|start|>assistant<|channel|>final"
            "<|message|>**B**<|return|>",
            None,
            "**B**",
            REASON,
            "harmony",
        ),
        (
            f"<|channel|>analysis<|message|>{REASON}<|end|><|start|>assistant<|channel|>commentary"
            " to=functions.f <|constrain|>json<|message|>{}<|call|><|start|>assistant<|channel|>"
            "final<|message|>B",
            None,
            "B",
            f"{REASON}\n\n{{}}",
            "harmony",
        ),
        (f"<|channel|>analysis<|message|>{REASON}", None, "", REASON, "cut"),
        (f"<|channel|>analysis<|message|>{REASON}<|end|>", None, "", REASON, "cut"),
        ("<|channel|>analy", None, "", None, "cut"),  # cut inside the first header
        (f"analysis{REASON}assistantfinalB", None, "B", REASON, "harmony"),  # tokens dropped
        (f"analysis{REASON}", None, "", REASON, "cut"),
        (
            "Analysis: the frames look fine. B",
            None,
            "Analysis: the frames look fine. B",
            None,
            "none",
        ),  # an ordinary reply that starts with the word
    ],
)
def test_split_reasoning_forms(
    text: str, field: str | None, answer: str, reasoning: str | None, form: str
) -> None:
    split = split_reasoning(text, field)
    assert (split.answer, split.reasoning, split.form) == (answer, reasoning, form)
    assert split.chars == (None if reasoning is None else len(reasoning))
    assert split.cut is (form == "cut")


def test_suggested_max_tokens() -> None:
    assert suggested_max_tokens([]) == 16384
    assert suggested_max_tokens([None, 1024]) == 16384  # 4 x 1024 < 16384
    assert suggested_max_tokens([8000, 2000]) == 32768  # 4 x 8000 = 32000 -> 32 x 1024
    assert suggested_max_tokens([8193]) == 33792


def test_reasoning_summary() -> None:
    assert reasoning_summary([(None, None, 10), ("none", None, 10)]) is None
    block = reasoning_summary([("closed", 100, 50), ("cut", 300, 8192), ("field", 200, None),
                               ("none", None, 3)])  # fmt: skip
    assert block == {
        "rows_with_reasoning": 3,
        "cut_in_reasoning": 1,
        "mean_reasoning_chars": 200.0,
        "max_reasoning_chars": 300,
        "hint": "1 of 3 replies were cut inside their reasoning: max_tokens too small for a "
        "thinking model; try max_tokens=32768",
    }


class Thinker(Model):
    """A thinking model: the reply form is chosen by the sample id."""

    media_input = "none"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out = []
        for r in requests:
            kind = r.sample_id.split("_")[1]
            resp = Response(text="B", completion_tokens=40)
            if kind == "closed":
                resp.text = f"<think>\n{REASON}\n</think>\n\nB"
            elif kind == "unopened":
                resp.text = f"{REASON}\n</think>\nB"
            elif kind == "cut":
                resp.text, resp.completion_tokens = f"<think>\n{REASON}", 2048
            elif kind == "field":
                resp.reasoning = REASON  # type: ignore[attr-defined]  # Response.reasoning
            elif kind == "fieldcut":
                resp.text, resp.completion_tokens = "", 2048
                resp.reasoning = REASON  # type: ignore[attr-defined]
            out.append(resp)
        return out


KINDS = ("closed", "unopened", "cut", "field", "fieldcut", "plain")


def _data(tmp_path: Path) -> Path:
    lines = [
        {"id": f"v_{k}", "benchmark": "tamper", "question": "tampered?",
         "options": {"A": "Yes", "B": "No"}, "answer": "B", "group": "v",
         "tamper_type": "original"}
        for k in KINDS
    ]  # fmt: skip
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_eval_stores_reasoning_and_counts_cut_replies(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cfg = EvalConfig(data=str(_data(tmp_path)), model="think", out=str(out), n_resamples=0)
    metrics = run_eval(cfg, progress=False, model=Thinker()).metrics
    with ResultStore(out) as store:
        rows = {r.sample_id.split("_")[1]: r for r in store.rows()}
    got = {k: (r.status, r.letter, r.rule, r.reasoning_form, r.reasoning_chars)
           for k, r in rows.items()}  # fmt: skip
    n = len(REASON)
    assert got == {
        "closed": (Status.OK, "B", "strict:lone-letter", "closed", n),
        "unopened": (Status.OK, "B", "strict:lone-letter", "unopened", n),
        "cut": (Status.PARSE_FAIL, None, "reasoning:cut", "cut", n),
        "field": (Status.OK, "B", "strict:lone-letter", "field", n),
        "fieldcut": (Status.PARSE_FAIL, None, "reasoning:cut", "cut", n),
        "plain": (Status.OK, "B", "strict:lone-letter", "none", None),
    }
    assert rows["field"].reasoning == REASON and rows["plain"].reasoning is None
    assert metrics["reasoning"]["cut_in_reasoning"] == 2
    assert metrics["reasoning"]["rows_with_reasoning"] == 5
    hint = ("2 of 5 replies were cut inside their reasoning: max_tokens too small for a "
            "thinking model; try max_tokens=16384")  # fmt: skip
    assert metrics["reasoning"]["hint"] == hint
    assert f"warning: {hint}" in summary_text(metrics).splitlines()
    assert json.loads((out / "metrics.json").read_text())["reasoning"]["cut_in_reasoning"] == 2
    # rescore keeps the split: a separate field is read again from its column
    again = rescore(out, extract_mode="lenient")
    assert again["reasoning"] == metrics["reasoning"]
    with ResultStore(out) as store:
        after = {r.sample_id.split("_")[1]: (r.letter, r.rule) for r in store.rows()}
    assert after["fieldcut"] == (None, "reasoning:cut")
    assert after["field"] == ("B", "strict:lone-letter")


class HarmonyThinker(Model):
    """gpt-oss: harmony channels, whole, cut inside analysis, and decoded without tokens."""

    media_input = "none"
    replies: ClassVar[dict[str, str]] = {
        "final": f"<|channel|>analysis<|message|>{REASON}<|end|><|start|>assistant<|channel|>"
        "final<|message|>B<|return|>",
        "cut": f"<|channel|>analysis<|message|>{REASON}",
        "bare": f"analysis{REASON}assistantfinalB",
    }

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response(text=self.replies[r.sample_id.split("_")[1]], completion_tokens=5000)
                for r in requests]  # fmt: skip


def test_harmony_channels_are_reasoning_and_a_cut_is_counted(tmp_path: Path) -> None:
    """Issue 37: stored form ``harmony``; a reply cut inside ``analysis`` is cut in its
    reasoning, with the max_tokens hint; official mode still reads the whole text."""
    lines = [{"id": f"v_{k}", "benchmark": "tamper", "question": "tampered?",
              "options": {"A": "Yes", "B": "No"}, "answer": "B", "group": "v",
              "tamper_type": "original"} for k in HarmonyThinker.replies]  # fmt: skip
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "run"
    cfg = EvalConfig(data=str(data), model="gptoss", out=str(out), n_resamples=0)
    metrics = run_eval(cfg, progress=False, model=HarmonyThinker()).metrics
    with ResultStore(out) as store:
        rows = {r.sample_id.split("_")[1]: r for r in store.rows()}
    got = {k: (r.letter, r.rule, r.reasoning_form, r.reasoning) for k, r in rows.items()}
    assert got == {
        "final": ("B", "strict:lone-letter", "harmony", REASON),
        "cut": (None, "reasoning:cut", "cut", REASON),
        "bare": ("B", "strict:lone-letter", "harmony", REASON),
    }
    assert metrics["reasoning"]["cut_in_reasoning"] == 1
    assert metrics["reasoning"]["hint"] == (
        "1 of 3 replies were cut inside their reasoning: max_tokens too small for a thinking "
        "model; try max_tokens=20480"  # 4 x 5000 tokens, rounded up to 1,024s
    )
    from mmrobust.report.browser import _reply_parts

    assert _reply_parts(rows["final"]) == ("B", REASON)
    assert _reply_parts(rows["cut"]) == ("(cut inside its reasoning: no answer)", REASON)
    again = rescore(out, extract_mode="official")  # the reference reads the text as written
    assert again["reasoning"]["cut_in_reasoning"] == 1
    with ResultStore(out) as store:
        official = {r.sample_id.split("_")[1]: r.rule for r in store.rows()}
    assert official["cut"].startswith("official:")


def test_official_mode_decides_on_the_text_and_still_counts(tmp_path: Path) -> None:
    """The reference sees the whole reply; the cut count is reported all the same."""
    out = tmp_path / "run"
    cfg = EvalConfig(data=str(_data(tmp_path)), model="think", out=str(out), official=True,
                     n_resamples=0)  # fmt: skip
    metrics = run_eval(cfg, progress=False, model=Thinker()).metrics
    with ResultStore(out) as store:
        rows = {r.sample_id.split("_")[1]: r for r in store.rows()}
    # "<think> Option A would mean tampered ..." holds the single letter token A: wrong for B
    assert rows["cut"].letter == "A" and rows["cut"].rule == "official:rule-search"
    assert rows["fieldcut"].status is Status.EMPTY_REPLY  # the reference never scores ""
    assert metrics["reasoning"]["cut_in_reasoning"] == 2


def test_old_store_gains_reasoning_columns(tmp_path: Path) -> None:
    """A results.sqlite written before the columns existed: read-only rows read None; opened
    for writing it gains the columns in place."""
    out = tmp_path / "run"
    cfg = EvalConfig(data=str(_data(tmp_path)), model="think", out=str(out), n_resamples=0)
    run_eval(cfg, progress=False, model=Thinker())
    db = sqlite3.connect(out / "results.sqlite")
    for col in ("reasoning", "reasoning_chars", "reasoning_form"):
        db.execute(f"ALTER TABLE results DROP COLUMN {col}")
    db.commit()
    db.close()
    with ResultStore(out, readonly=True) as store:
        rows = store.rows()
    assert len(rows) == 6 and all(r.reasoning is None and r.reasoning_form is None for r in rows)
    with ResultStore(out) as store:
        cols = {r[1] for r in store._db.execute("PRAGMA table_info(results)")}
        assert {"reasoning", "reasoning_chars", "reasoning_form"} <= cols
        assert all(r.reasoning_chars is None for r in store.rows())


def test_browser_shows_reasoning_collapsed(tmp_path: Path) -> None:
    from mmrobust.report.browser import _reasoning_label, _reply_parts

    out = tmp_path / "run"
    cfg = EvalConfig(data=str(_data(tmp_path)), model="think", out=str(out), n_resamples=0)
    run_eval(cfg, progress=False, model=Thinker())
    with ResultStore(out) as store:
        rows = {r.sample_id.split("_")[1]: r for r in store.rows()}
    assert _reply_parts(rows["closed"]) == ("B", REASON)
    assert _reply_parts(rows["cut"]) == ("(cut inside its reasoning: no answer)", REASON)
    assert _reply_parts(rows["field"]) == ("B", REASON)
    assert _reply_parts(rows["plain"]) == ("B", "")
    assert _reasoning_label(rows["closed"]) == f"reasoning (closed, {len(REASON):,} characters)"
    js = (Path(__file__).parents[1] / "src/mmrobust/report/templates/browser.js").read_text()
    assert 'el("details", "reasoning")' in js
