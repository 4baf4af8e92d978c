"""``--repeats K``: K rows per question keyed by repeat, resumable, and the ``stability`` block.

Every figure is checked against a count made here from the raw SQLite rows (not through
``mmrobust.store`` or the metric code).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.metrics.stability import sampling_stability
from mmrobust.records import ScoredRecord
from mmrobust.status import Status

N = 48  # mmr-demo: 24 pairs, 48 questions


def _eval(out: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, ["eval", "--data", "mmr-demo", "--out", str(out), *args, "-q"])
    assert result.exit_code == code, result.output
    return result.output


def _metrics(run: Path) -> dict[str, Any]:
    return json.loads((run / "metrics.json").read_text(encoding="utf-8"))


def _raw(run: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(run / "results.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM results")]


def _hand_count(rows: list[dict[str, Any]], k: int) -> dict[str, float]:
    """agreement, majority-vote and mean accuracy as docs/evaluation.md defines them."""
    asks: dict[str, dict[int, tuple[str | None, str]]] = defaultdict(dict)
    for r in rows:
        if r["repeat"] < k:
            letter = r["letter"] if r["status"] == "ok" else None
            asks[r["sample_id"]][r["repeat"]] = (letter, r["answer"])
    agree = majority = 0
    mean = 0.0
    for by_repeat in asks.values():
        letters = [by_repeat[i][0] for i in range(k)]
        truth = by_repeat[0][1]
        agree += len(set(letters)) == 1
        top = Counter(letters).most_common(1)[0][1]
        vote = next(x for x in letters if letters.count(x) == top)
        majority += vote == truth
        mean += sum(x == truth for x in letters) / k
    n = len(asks)
    return {
        "agreement_rate": agree / n,
        "majority_accuracy": majority / n,
        "mean_accuracy": mean / n,
    }


@pytest.fixture(scope="module")
def random_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("repeats")
    five, one = base / "k5", base / "k1"
    _eval(five, "--model", "random:3", "--repeats", "5", "--bootstrap", "200")
    _eval(one, "--model", "random:3", "--bootstrap", "200")
    return five, one


def test_random_repeats_match_a_hand_count(random_runs: tuple[Path, Path]) -> None:
    five, _ = random_runs
    rows = _raw(five)
    assert len(rows) == 5 * N
    assert Counter(r["repeat"] for r in rows) == dict.fromkeys(range(5), N)
    block = _metrics(five)["stability"]
    hand = _hand_count(rows, 5)
    assert (block["repeats"], block["n_samples"], block["n_agreement"], block["n_rows"]) == (
        5, N, N, 5 * N,
    )  # fmt: skip
    for key, value in hand.items():
        assert block[key] == pytest.approx(round(value, 4), abs=1e-9), key
        low, high = block[f"{key}_ci95"]
        assert low <= block[key] <= high
    # random:3 draws anew each repeat: 4 options, all 5 asks agree w.p. 4 / 4**5
    assert block["agreement_rate"] < 0.1
    letters = {(r["sample_id"], r["repeat"]): r["letter"] for r in rows}
    moved = sum(letters[sid, 0] != letters[sid, 1] for sid, k in letters if k == 0)
    assert N / 2 < moved < N  # about 3/4 of the answers move between two asks
    per_repeat = [
        sum(r["letter"] == r["answer"] for r in rows if r["repeat"] == k) / N for k in range(5)
    ]
    assert block["accuracy_per_repeat"] == [round(v, 4) for v in per_repeat]


def test_repeat_zero_is_the_run_without_repeats(random_runs: tuple[Path, Path]) -> None:
    five, one = random_runs
    first = {r["sample_id"]: r["letter"] for r in _raw(five) if r["repeat"] == 0}
    assert first == {r["sample_id"]: r["letter"] for r in _raw(one)}
    m5, m1 = _metrics(five), _metrics(one)
    assert "stability" not in m1 and "repeats" not in m1["run"] and m5["run"]["repeats"] == 5
    for key in ("RA", "MR", "ci", "pairs", "UR", "UF", "NR", "NF"):
        assert m5[key] == m1[key], key  # the headline: the family's metrics on repeat 0
    k1_key = json.loads((one / "run.json").read_text())["key"]
    assert json.loads((five / "run.json").read_text())["key"] == k1_key  # K is not in the key


def test_repeats_are_reproducible(random_runs: tuple[Path, Path], tmp_path: Path) -> None:
    five, _ = random_runs
    again = tmp_path / "again"
    _eval(again, "--model", "random:3", "--repeats", "5", "--bootstrap", "200")
    key = lambda r: (r["sample_id"], r["repeat"])  # noqa: E731
    assert sorted((key(r), r["letter"]) for r in _raw(again)) == sorted(
        (key(r), r["letter"]) for r in _raw(five)
    )
    assert _metrics(again)["stability"] == _metrics(five)["stability"]


def test_resume_asks_only_missing_repeats(tmp_path: Path) -> None:
    run = tmp_path / "run"
    out = _eval(run, "--model", "random:1", "--repeats", "2", "--bootstrap", "0")
    assert f"{2 * N} new rows, 0 resumed" in out
    with sqlite3.connect(run / "results.sqlite") as db:  # a run killed inside repeat 2
        db.execute("DELETE FROM results WHERE repeat = 1 AND sample_id LIKE 'attribute/%'")
        lost = 2 * N - db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert 0 < lost < N
    before = {(r["sample_id"], r["repeat"]): r["created_at"] for r in _raw(run)}
    out = _eval(run, "--model", "random:1", "--repeats", "3", "--bootstrap", "0")
    assert f"{lost + N} new rows, {2 * N - lost} resumed" in out
    rows = _raw(run)
    assert len(rows) == 3 * N
    assert all(
        before[k] == r["created_at"] for r in rows if (k := (r["sample_id"], r["repeat"])) in before
    )
    assert _metrics(run)["complete"] is True
    block = _metrics(run)["stability"]
    assert block["agreement_rate"] == pytest.approx(
        round(_hand_count(rows, 3)["agreement_rate"], 4)
    )
    # a later run with fewer repeats scores only those (the extra rows stay stored)
    _eval(run, "--model", "random:1", "--bootstrap", "0")
    assert "stability" not in _metrics(run) and len(_raw(run)) == 3 * N


def test_constant_model_agrees_always(tmp_path: Path) -> None:
    run = tmp_path / "c"
    _eval(run, "--model", "constant:A", "--repeats", "3", "--bootstrap", "100")
    block = _metrics(run)["stability"]
    accuracy = sum(r["letter"] == r["answer"] for r in _raw(run) if r["repeat"] == 0) / N
    assert block["agreement_rate"] == 1.0 and block["agreement_rate_ci95"] == [1.0, 1.0]
    assert block["majority_accuracy"] == block["mean_accuracy"] == round(accuracy, 4) == 0.25
    out = CliRunner().invoke(app, ["rescore", str(run)])
    assert out.exit_code == 0, out.output
    assert "sampling stability (3 asks): agreement 100.0% (95% CI 100.0–100.0)" in out.output
    assert _metrics(run)["stability"] == block  # rescore keeps the repeats


def test_store_without_repeat_column_is_upgraded_and_resumed(tmp_path: Path) -> None:
    run = tmp_path / "old"
    _eval(run, "--model", "random:2", "--bootstrap", "0")
    before = _metrics(run)
    with sqlite3.connect(run / "results.sqlite") as db:  # the schema before --repeats existed
        cols = [c[1] for c in db.execute("PRAGMA table_info(results)") if c[1] != "repeat"]
        db.execute("ALTER TABLE results RENAME TO r0")
        db.execute(
            "CREATE TABLE results (" + ", ".join(cols) + ", "
            "PRIMARY KEY (sample_id, model_fp, prompt_fp, policy_fp))"
        )
        db.execute(f"INSERT INTO results SELECT {', '.join(cols)} FROM r0")
        db.execute("DROP TABLE r0")
    assert f"0 new rows, {N} resumed" in _eval(run, "--model", "random:2", "--bootstrap", "0")
    assert _metrics(run) == before
    assert f"{N} new rows, {N} resumed" in _eval(
        run, "--model", "random:2", "--bootstrap", "0", "--repeats", "2"
    )
    assert len(_raw(run)) == 2 * N


def test_bad_repeats_and_temperature_exit_2(tmp_path: Path) -> None:
    for args, words in (
        (("--repeats", "0"), "--repeats"),
        (("--temperature", "-1"), "--temperature"),
        (("--temperature", "0.7", "--model-arg", "temperature=0.2"), "disagree"),
    ):
        out = _eval(tmp_path / "x", "--model", "random:1", *args, code=2)
        assert words in out
        assert not (tmp_path / "x").exists()


def _rec(sid: str, group: str, predicted: str | None, status: Status = Status.OK) -> ScoredRecord:
    return ScoredRecord(
        sid, "generic", group, "A", {"A": "a", "B": "b", "C": "c"}, predicted, status
    )


def test_stability_ties_failures_and_policies() -> None:
    rows = [
        *((k, _rec("s1", "g1", p)) for k, p in enumerate("BAAB")),  # tie A/B: B asked first
        *((k, _rec("s2", "g1", "A")) for k in range(4)),
        (0, _rec("s3", "g2", "A")),
        (1, _rec("s3", "g2", None, Status.PARSE_FAIL)),
        (2, _rec("s3", "g2", "A")),
        (3, _rec("s3", "g2", "A")),
        (4, _rec("s3", "g2", "C")),  # repeat 4 of a K=4 run: ignored
    ]
    ex = sampling_stability(rows, repeats=4, failures="exclude", n_resamples=0)
    # exclude: s3 has 3 counted answers, so only s1, s2 count for agreement (s2 agrees)
    assert (ex["n_samples"], ex["n_agreement"], ex["agreement_rate"]) == (3, 2, 0.5)
    assert ex["majority_accuracy"] == round(2 / 3, 4)  # s1's vote is B
    assert ex["mean_accuracy"] == round((0.5 + 1 + 1) / 3, 4)
    assert ex["accuracy_per_repeat"] == [round(2 / 3, 4), 1.0, 1.0, round(2 / 3, 4)]
    wr = sampling_stability(rows, repeats=4, failures="wrong", n_resamples=0)
    assert (wr["n_agreement"], wr["agreement_rate"]) == (3, round(1 / 3, 4))
    assert wr["mean_accuracy"] == round((0.5 + 1 + 0.75) / 3, 4)
    assert wr["agreement_rate_ci95"] is None


def test_run_suite_card_and_report_show_stability(tmp_path: Path) -> None:
    """``mmrobust run --repeats 3``: each run folder holds 3 asks; the card's stability row and
    the report's metadata line carry the run's own ``stability`` figures (same formatter)."""
    out = tmp_path / "OUT"
    args = ["run", "--model", "constant:A", "--model", "random:0", "--data", "mmr-demo"]
    args += ["--repeats", "3", "--temperature", "0.7", "--bootstrap", "100", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "-q"])
    assert result.exit_code == 0, result.output
    from mmrobust.report.stability import stability_line, stability_text

    lines = []
    for model, agree in (("constant-A", 1.0), ("random-0", None)):
        run = out / model / "mmr-demo" / "mmr"
        rows, metrics = _raw(run), _metrics(run)
        assert len(rows) == 3 * N
        block = metrics["stability"]
        assert block["agreement_rate"] == pytest.approx(
            round(_hand_count(rows, 3)["agreement_rate"], 4)
        )
        assert agree is None or block["agreement_rate"] == agree
        config = json.loads((run / "run.json").read_text())["config"]
        assert (config["repeats"], config["temperature"], config["model_args"]) == (
            3, 0.7, {"temperature": "0.7"},
        )  # fmt: skip
        card = json.loads((out / "report" / "cards" / f"{model}.json").read_text())
        (row,) = card["stability"]
        assert row["repeats"] == 3 and row["family"] and row["line"] == stability_line(metrics)
        for key in ("agreement_rate", "majority_accuracy", "mean_accuracy"):
            assert row[key] == round(100 * block[key], 1)
        html = (out / "report" / "cards" / f"{model}.html").read_text()
        assert 'id="stability"' in html and f"<td>{row['agreement_rate']:.1f}</td>" in html
        lines.append(stability_text(metrics))
    index = (out / "report" / "index.html").read_text()
    assert all(line and line in index for line in lines)
    markdown = (out / "report" / "report.md").read_text()
    assert all(f"on mmr-demo: {line}" in markdown for line in lines)


def test_repeat_seed_and_greedy_warning(caplog: pytest.LogCaptureFixture) -> None:
    from mmrobust.models.base import Request, repeat_seed
    from mmrobust.models.baselines import ConstantModel, RandomModel
    from mmrobust.run.checks import greedy_repeats

    assert repeat_seed(7, 0) == 7  # a run without repeats draws as before
    seeds = {repeat_seed(7, k) for k in range(1, 50)}
    assert len(seeds) == 49 and 7 not in seeds and max(seeds) < 2**63
    assert repeat_seed(7, 3) == repeat_seed(7, 3) != repeat_seed(8, 3)
    opts = {L: L.lower() for L in "ABCD"}
    model = RandomModel(seed=5)
    draws = [model._reply(Request("s", "p", "q", opts, repeat=k)) for k in range(40)]
    assert draws[0] == model._reply(Request("s", "p", "q", opts)) and len(set(draws)) == 4

    class Greedy(ConstantModel):
        def fingerprint(self) -> dict[str, object]:
            return {"name": "greedy", "temperature": 0.0}

    assert greedy_repeats(1, Greedy("A")) is None and greedy_repeats(3, ConstantModel("A")) is None
    with caplog.at_level("WARNING", logger="mmrobust"):
        assert "--temperature" in (greedy_repeats(3, Greedy("A")) or "")
    assert "greedy decoding gives the same answer" in caplog.text
