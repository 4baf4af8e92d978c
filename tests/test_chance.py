"""Chance levels (``mmrobust.metrics.chance``): one definition, the metric's own, everywhere.

Three unbalanced tamper sets on which the pooled tampered share and the per-type groups
give different levels (the levels below are hand fractions: always Yes ``2t / (2t + o)``,
a coin ``2t / (3t + o)`` per type with ``t`` clips beside the ``o`` originals, then the
mean over the types):

* ``two_types``: dropping 3, masking 1, 2 originals: always Yes (6/8 + 2/4)/2 = 62.5,
  coin (6/11 + 2/5)/2 = 47.27 (pooled share 2/3 would say 80.0 and 57.14);
* ``five_types``: 1..5 clips of the five types, 1 original: always Yes the mean of 2/3,
  4/5, 6/7, 8/9, 10/11; coin the mean of 2/4, 4/7, 6/10, 8/13, 10/16 (pooled 15/16 would
  say 96.77 and 65.22);
* ``more_originals``: dropping 2, rotation 2, 6 originals: always Yes 4/10 = 40.0, coin
  4/12 = 33.33 (pooled 2/5 would say 57.14 and 44.44).

On each, ``constant:A`` (Yes to every clip) is run through ``eval``; its Overall F1 must
equal the card's always-Yes level, and the card, the console line, ``compare`` and the
report's chance rows must all show the hand values.
"""

from __future__ import annotations

import json
from fractions import Fraction as F
from itertools import product
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrobust.cli import app
from mmrobust.metrics.chance import (
    detection_chance,
    detection_chance_of_types,
    expected_f1,
    pair_chance,
    uniform_guess_chance,
)
from mmrobust.metrics.tamper import scores_from_counts

runner = CliRunner()


def _mean(*xs: F) -> float:
    return float(sum(xs) / len(xs))


SETS: dict[str, tuple[dict[str, int], int, float, float]] = {
    # name: (clips per type, originals, always-Yes F1, coin-flip F1) by hand
    "two_types": (
        {"dropping": 3, "masking": 1}, 2, _mean(F(6, 8), F(2, 4)), _mean(F(6, 11), F(2, 5)),
    ),
    "five_types": (
        {"dropping": 1, "masking": 2, "repetition": 3, "rotation": 4, "substitution": 5}, 1,
        _mean(F(2, 3), F(4, 5), F(6, 7), F(8, 9), F(10, 11)),
        _mean(F(2, 4), F(4, 7), F(6, 10), F(8, 13), F(10, 16)),
    ),
    "more_originals": ({"dropping": 2, "rotation": 2}, 6, 0.4, 1 / 3),
}  # fmt: skip


def _pooled(types: dict[str, int], originals: int) -> tuple[float, float]:
    """What the card printed before: F1 of the pooled tampered share ``p``."""
    p = sum(types.values()) / (sum(types.values()) + originals)
    return 2 * p / (1 + p), p / (p + 0.5)


def _jsonl(path: Path, types: dict[str, int], originals: int) -> Path:
    """A tamper set as JSONL (no media: ``constant:A`` never looks)."""
    common = {"benchmark": "tamper", "question": "Tampered?", "options": {"A": "Yes", "B": "No"}}
    lines = [{"id": f"o{i}", "tamper_type": "original", "answer": "B", "group": f"v{i}"}
             for i in range(originals)]  # fmt: skip
    for t, n in types.items():
        lines += [{"id": f"{t}{i}", "tamper_type": t, "answer": "A", "group": f"v{i}"}
                  for i in range(n)]  # fmt: skip
    path.write_text("".join(json.dumps({**common, **x}) + "\n" for x in lines), encoding="utf-8")
    return path


def test_expected_f1_is_the_f1_of_the_expected_counts() -> None:
    # every outcome of a fair coin on 3 positives and 2 negatives, equally likely: the F1 of
    # the summed confusion counts is the expected-count F1, 2*3/(3*3+2) = 6/11
    tp = fp = fn = tn = 0
    truth = [True] * 3 + [False] * 2
    for said in product([True, False], repeat=5):
        tp += sum(t and s for t, s in zip(truth, said, strict=True))
        fp += sum(s and not t for t, s in zip(truth, said, strict=True))
        fn += sum(t and not s for t, s in zip(truth, said, strict=True))
        tn += sum(not t and not s for t, s in zip(truth, said, strict=True))
    assert scores_from_counts(tp, fp, fn, tn)["f1"] == pytest.approx(expected_f1(3, 2, 0.5))
    assert expected_f1(3, 2, 0.5) == pytest.approx(6 / 11)
    assert expected_f1(25, 25, 0.5) == pytest.approx(0.5)  # balanced: a coin scores 50
    assert expected_f1(25, 25) == pytest.approx(2 / 3)  # always Yes: 66.7
    assert expected_f1(0, 4) is None and expected_f1(4, 4, 0.0) is None
    with pytest.raises(ValueError):
        expected_f1(1, 1, 1.5)


@pytest.mark.parametrize("name", list(SETS))
def test_detection_levels_by_hand_and_not_pooled(name: str) -> None:
    types, originals, yes, coin = SETS[name]
    got = detection_chance(types, originals)
    assert got["always_yes"]["overall"] == pytest.approx(yes)
    assert got["coin_flip"]["overall"] == pytest.approx(coin)
    assert list(got["always_yes"]) == [*types, "overall"]
    pooled_yes, pooled_coin = _pooled(types, originals)
    assert abs(pooled_yes - yes) > 0.05 and abs(pooled_coin - coin) > 0.05  # the sets differ
    clips = ["original"] * originals + [t for t, n in types.items() for _ in range(n)]
    assert detection_chance_of_types(clips) == got
    assert detection_chance_of_types([c.replace("rotation", "rotate") for c in clips]) == got


@pytest.mark.parametrize("name", list(SETS))
def test_constant_a_scores_the_cards_always_yes_level(name: str, tmp_path: Path) -> None:
    """constant:A through eval: its Overall F1 is the always-Yes level on the card, the
    console line, compare and the report's chance rows; all equal the hand values."""
    from mmrobust.report.card import card_data
    from mmrobust.report.tables import CHANCE_LABELS, chance_rows
    from mmrobust.report.tamper import compare_notes
    from mmrobust.report.units import pct
    from mmrobust.report.view import load_run

    types, originals, yes, coin = SETS[name]
    data = _jsonl(tmp_path / "set.jsonl", types, originals)
    out = tmp_path / "run"
    res = runner.invoke(app, ["eval", "--data", str(data), "--model", "constant:A",
                              "--out", str(out), "--bootstrap", "0"])  # fmt: skip
    assert res.exit_code == 0, res.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["f1"]["overall"] == pytest.approx(yes)  # constant:A is always Yes
    assert metrics["chance"]["always_yes"]["overall"] == pytest.approx(yes)
    assert metrics["chance"]["coin_flip"]["overall"] == pytest.approx(coin)
    # the console line
    assert f"chance: always Yes {pct(yes)}, coin flip {pct(coin)})" in res.output
    # the card
    run = load_run(out)
    entry = card_data("constant:A", [run], tmp_path / "rep")["detection"][0]
    assert entry["position"] == "all"
    assert entry["f1"] == entry["chance"]["always_yes"] == round(100 * yes, 2)
    assert entry["chance"]["coin_flip"] == round(100 * coin, 2)
    # compare's note
    note = compare_notes(run.records)[0]
    assert f"detection F1 {pct(yes)}%, a coin flip {pct(coin)}%" in note
    # the plot's always-Yes marks
    from mmrobust.report.plots import _always_yes

    assert _always_yes({"constant:A": metrics})["overall"] == pytest.approx(yes)
    # the report's reference rows
    rows = chance_rows({"constant:A": metrics}).set_index("Model")["Overall"]
    assert rows[CHANCE_LABELS["always_yes"]] == round(100 * yes, 1)
    assert rows[CHANCE_LABELS["coin_flip"]] == round(100 * coin, 1)


def test_constant_predictor_mcc_is_undefined_not_zero(tmp_path: Path) -> None:
    types, originals, _, _ = SETS["two_types"]
    data = _jsonl(tmp_path / "set.jsonl", types, originals)
    res = runner.invoke(app, ["eval", "--data", str(data), "--model", "constant:A",
                              "--out", str(tmp_path / "run"), "--bootstrap", "0", "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["all"]["mcc"] is None  # tn = fn = 0: 0/0
    assert {m["mcc"] for m in metrics["per_type"].values()} == {None}
    assert scores_from_counts(2, 1, 1, 2)["mcc"] == pytest.approx((4 - 1) / 9)
    assert scores_from_counts(0, 0, 0, 0)["mcc"] is None


def test_multiple_choice_and_paired_levels_by_hand() -> None:
    # type: 3 clips of one class, 1 of another, 4 options: 2p/(Kp + 1) per class
    c = uniform_guess_chance(["none", "masking", "rotation"], [3, 1, 0], 4)
    assert c["accuracy"] == c["balanced_accuracy"] == 0.25
    assert c["macro_f1"] == pytest.approx((1.5 / 4 + 0.5 / 2) / 2)
    assert (c["majority"], c["majority_class"]) == (0.75, "none")
    # pairs of 2 x 2 and 4 x 4 options: E[UR] = 1/4 + 1/16, E[UF] = 1/2*1/2 + 1/4*3/4;
    # enumerating every equally likely answer pair gives the same RA and MR
    ur = uf = n = 0
    for k in (2, 4):
        for pos, neg in product(range(k), repeat=2):  # option 0 is right
            ur, uf = ur + (pos == 0 and neg == 0) / k**2, uf + (pos == 0 and neg != 0) / k**2
        n += 1
    got = pair_chance([(2, 2), (4, 4)])
    assert got["RA"] == pytest.approx(100 * ur / n) == pytest.approx(100 * 5 / 32)
    assert got["MR"] == pytest.approx(100 * uf / (ur + uf)) == pytest.approx(100 * 7 / 12)
    assert pair_chance([(4, 4)] * 3) == {"RA": pytest.approx(6.25), "MR": pytest.approx(75.0)}
    assert pair_chance([]) == {"RA": None, "MR": None}


def test_a_types_parse_fail_rate_counts_its_tampered_clips_only() -> None:
    """Per type: failures among that type's tampered clips / its clips; the run's rate and the
    card's: over every row (the originals are shared by every type)."""
    from mmrobust.metrics.tamper import tamper_metrics
    from mmrobust.records import ScoredRecord
    from mmrobust.status import Status

    def rec(sid: str, ttype: str, status: Status = Status.OK) -> ScoredRecord:
        answer = "B" if ttype == "original" else "A"
        return ScoredRecord(sample_id=sid, benchmark="tamper", group=sid, answer=answer,
                            options={"A": "Yes", "B": "No"},
                            predicted="A" if status is Status.OK else None, status=status,
                            tamper_type=ttype)  # fmt: skip

    rows = [rec("o0", "original", Status.PARSE_FAIL), rec("o1", "original")]
    rows += [rec("d0", "dropping", Status.PARSE_FAIL), rec("d1", "dropping")]
    rows += [rec(f"m{i}", "masking") for i in range(4)]
    m = tamper_metrics(rows, n_resamples=0)
    assert m["per_type"]["dropping"]["parse_fail_rate"] == 1 / 2  # 1 of its 2 clips
    assert m["per_type"]["masking"]["parse_fail_rate"] == 0.0  # the failed original not counted
    assert m["parse_fail_rate"] == 2 / 8
