"""Run-folder safety: resume never reuses answers to changed samples, runs never mix,
unscorable types are null (not 0), and a dataset nobody can answer fails fast."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from mmrobust.datasets import DatasetError
from mmrobust.metrics.tamper import tamper_metrics
from mmrobust.models.base import Model, Request, Response
from mmrobust.records import ScoredRecord
from mmrobust.runner import ABORT_AFTER, EvalConfig, RunConflictError, WorkItem, run_eval
from mmrobust.status import Status
from mmrobust.store import ResultStore, StoredRow

YN = {"A": "Yes", "B": "No"}


def _write(path: Path, questions: list[str]) -> Path:
    rows = [
        {"id": f"s{i}", "question": q, "options": YN, "answer": "A"}
        for i, q in enumerate(questions)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _run(data: Path, out: Path, model: str = "constant:A") -> tuple[int, int]:
    res = run_eval(
        EvalConfig(data=str(data), model=model, out=str(out), n_resamples=0), progress=False
    )
    return res.n_new, res.n_skipped


def test_resume_asks_again_only_the_samples_that_changed(tmp_path: Path) -> None:
    data = _write(tmp_path / "d.jsonl", ["q0", "q1", "q2"])
    assert _run(data, tmp_path / "run") == (3, 0)
    assert _run(data, tmp_path / "run") == (0, 3)
    _write(data, ["q0", "q1 edited", "q2"])  # same ids, one sample changed
    assert _run(data, tmp_path / "run") == (1, 2)


def test_a_run_folder_holds_one_model_and_one_dataset(tmp_path: Path) -> None:
    data = _write(tmp_path / "d.jsonl", ["q0"])
    other = _write(tmp_path / "e.jsonl", ["q0"])
    _run(data, tmp_path / "run")
    with pytest.raises(RunConflictError, match="different model"):
        _run(data, tmp_path / "run", model="constant:B")
    with pytest.raises(RunConflictError, match="different dataset"):
        _run(other, tmp_path / "run")


def test_dataset_that_no_sample_can_use_fails_fast(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(
        json.dumps(
            {"id": "s0", "question": "q", "options": YN, "answer": "A", "image": "missing.jpg"}
        )
        + "\n"
    )
    with pytest.raises(DatasetError, match="none of the 1 samples"):
        _run(data, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def _rec(i: int, ttype: str, status: Status, predicted: str | None) -> ScoredRecord:
    answer = "B" if ttype == "original" else "A"
    return ScoredRecord(
        f"{ttype}{i}", "tamper", f"g{i}", answer, YN, predicted, status, tamper_type=ttype
    )


def test_type_without_scored_clips_has_null_f1_not_zero() -> None:
    recs = [_rec(i, "original", Status.OK, "B") for i in range(2)]
    recs += [_rec(i, "masking", Status.OK, "A") for i in range(2)]
    recs += [_rec(i, "dropping", Status.PARSE_FAIL, None) for i in range(2)]
    m = tamper_metrics(recs, n_resamples=0)
    assert m["f1"]["masking"] == 1.0
    assert m["f1"]["dropping"] is None and m["per_type"]["dropping"]["f1"] is None
    assert m["f1"]["overall"] is None
    # counted as wrong (reference scoring), the same answers do score: F1 = 0 for dropping
    wrong = tamper_metrics(recs, n_resamples=0, failures="wrong")
    assert wrong["f1"]["dropping"] == 0.0 and wrong["f1"]["overall"] == 0.5


class _Down(Model):
    """A backend whose server is unreachable: every request is an api_error."""

    media_input = "none"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        self.calls += len(requests)
        return [
            Response(text="", status=Status.API_ERROR, error="connection refused") for _ in requests
        ]


def test_unreachable_backend_stops_the_run_and_keeps_rows(tmp_path: Path) -> None:
    data = _write(tmp_path / "d.jsonl", [f"q{i}" for i in range(30)])
    down = _Down()
    cfg = EvalConfig(data=str(data), model="down", out=str(tmp_path / "run"), n_resamples=0)
    res = run_eval(cfg, progress=False, model=down)
    assert res.aborted is not None and "8 consecutive failed samples" in res.aborted
    assert "api_error: connection refused" in res.aborted
    assert down.calls == ABORT_AFTER == res.n_new
    assert res.first_error == "api_error: connection refused"
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["aborted"] == res.aborted and info["n_rows"] == ABORT_AFTER


def test_broken_run_folders_give_one_line_errors(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from mmrobust.cli import app

    data = _write(tmp_path / "d.jsonl", ["q0"])
    _run(data, tmp_path / "run")
    (tmp_path / "run" / "results.sqlite").write_text("garbage")
    for f in ("results.sqlite-wal", "results.sqlite-shm"):
        (tmp_path / "run" / f).unlink(missing_ok=True)
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "run.json").write_text("{}")
    bad_json = tmp_path / "badjson"
    bad_json.mkdir()
    (bad_json / "run.json").write_text("{nope")
    runner = CliRunner()
    cases = [
        (
            ["report", str(tmp_path / "run"), "--out", str(tmp_path / "rep")],
            "not a readable results database",
        ),
        (["rescore", str(tmp_path / "run")], "not a readable results database"),
        (["rescore", str(fake)], "missing config, key"),
        (["report", str(bad_json), "--out", str(tmp_path / "rep2")], "run.json: not valid JSON"),
    ]
    for args, message in cases:
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert message in res.output and "Traceback" not in res.output


class _Grouped:
    """An executor that yields the rows of ``size`` items at once, as ``ThreadExecutor`` does
    when several items finished while the driver was storing."""

    def __init__(self, size: int) -> None:
        self.size = size

    def run(self, fn: Callable[[WorkItem], list[StoredRow]], items: Iterable[WorkItem]) -> Any:
        group: list[StoredRow] = []
        for n, item in enumerate(items, 1):
            group += fn(item)
            if n % self.size == 0:
                yield group
                group = []
        if group:
            yield group

    def cancel(self) -> None:
        pass


def test_rows_that_arrive_together_are_committed_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _write(tmp_path / "d.jsonl", [f"q{i}" for i in range(25)])
    commits: list[int] = []
    put_many = ResultStore.put_many
    monkeypatch.setattr(
        ResultStore,
        "put_many",
        lambda self, rows: (commits.append(len(rows)), put_many(self, rows)),
    )
    cfg = EvalConfig(data=str(data), model="constant:A", out=str(tmp_path / "run"), n_resamples=0)
    res = run_eval(cfg, progress=False, executor=_Grouped(10))
    assert res.n_new == 25 and [n for n in commits if n] == [10, 10, 5]


def test_a_failure_streak_stops_at_the_limit_when_more_rows_arrive_at_once(tmp_path: Path) -> None:
    data = _write(tmp_path / "d.jsonl", [f"q{i}" for i in range(30)])
    cfg = EvalConfig(data=str(data), model="down", out=str(tmp_path / "run"), n_resamples=0)
    res = run_eval(cfg, progress=False, model=_Down(), executor=_Grouped(12))
    assert res.aborted is not None and "stopped after 8 consecutive failed samples" in res.aborted
    assert res.n_new == ABORT_AFTER == 8  # 12 computed at once; stored up to the 8th
    assert json.loads((tmp_path / "run" / "run.json").read_text())["n_rows"] == 8
