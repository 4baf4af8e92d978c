"""The optional LLM judge: verdicts, typed failures, and its record in the run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from mmrobust.judge import JUDGE_PROMPT, Judge, judge_prompt
from mmrobust.models.base import Model, Request, Response
from mmrobust.runner import EvalConfig, rescore, run_eval
from mmrobust.status import Status

YN = {"A": "Yes", "B": "No"}


class Scripted(Model):
    """Replies with a fixed text (or raises), and keeps the prompts it saw."""

    media_input = "none"

    def __init__(self, reply: str | None, status: Status = Status.OK) -> None:
        self.reply, self.status, self.prompts = reply, status, []  # type: ignore[var-annotated]

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        self.prompts += [r.prompt for r in requests]
        if self.reply is None:
            raise RuntimeError("judge backend down")
        return [Response(text=self.reply, status=self.status) for _ in requests]


def test_verdicts_and_typed_failures() -> None:
    assert Judge(Scripted("B"), "s")("x", "q?", YN, "nah").letter == "B"
    none = Judge(Scripted("None."), "s")("x", "q?", YN, "hmm")
    assert (none.letter, none.status, none.rule) == (None, Status.PARSE_FAIL, "judge:none")
    for judge in (
        Judge(Scripted("I think it means the second"), "s"),
        Judge(Scripted(None), "s"),
        Judge(Scripted("", Status.TIMEOUT), "s"),
    ):
        verdict = judge("x", "q?", YN, "hmm")
        assert verdict.status is Status.JUDGE_ERROR and verdict.letter is None


def test_prompt_lists_options_and_reply() -> None:
    text = judge_prompt("Is it tampered?", YN, "  looks edited  ")
    assert "A. Yes\nB. No" in text and "Model's answer: looks edited" in text
    assert "(A, B)" in text


def _dataset(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    rows = [
        {"id": f"s{i}", "question": "Is the sky blue?", "options": YN, "answer": "A"}
        for i in range(3)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_eval_judges_parse_failures_and_records_the_judge(tmp_path: Path) -> None:
    data = _dataset(tmp_path)
    # "constant:perhaps" is no option: lenient extraction fails on every row, the judge decides
    res = run_eval(
        EvalConfig(data=str(data), model="constant:perhaps", out=str(tmp_path / "run"),
                   judge="constant:A", n_resamples=0),
        progress=False,
    )  # fmt: skip
    assert res.metrics["parse_fail_rate"] == 0.0
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["run"]["judge"]["model"] == "constant:A"
    assert info["run"]["judge"]["prompt"] == JUDGE_PROMPT
    # without the judge the same stored answers are parse failures (no model call needed)
    plain = rescore(tmp_path / "run")
    assert plain["parse_fail_rate"] == 1.0 and plain["run"]["judge"] is None
