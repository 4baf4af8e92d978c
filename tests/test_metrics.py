"""Tamper metrics against hand-computed confusion matrices; bootstrap and McNemar."""

from __future__ import annotations

import pytest

from mmrobust.metrics import compute_metrics
from mmrobust.metrics.stats import cluster_bootstrap, mcnemar_exact
from mmrobust.metrics.tamper import tamper_metrics, window_iou
from mmrobust.records import ScoredRecord
from mmrobust.schema import Window
from mmrobust.status import Status

YN = {"A": "Yes", "B": "No"}
TYPES = ("dropping", "masking", "repetition", "rotation", "substitution")


def rec(
    sid: str,
    ttype: str,
    predicted: str | None,
    *,
    status: Status = Status.OK,
    group: str | None = None,
    task: str | None = None,
    options: dict[str, str] | None = None,
    extra: dict[str, object] | None = None,
    covered: bool | None = None,
    rule: str | None = None,
) -> ScoredRecord:
    opts = options or YN
    yes = next(k for k, v in opts.items() if v == "Yes")
    no = next(k for k, v in opts.items() if v == "No")
    return ScoredRecord(
        sample_id=sid,
        benchmark="tamper",
        group=group or sid.split("_")[0],
        answer=no if ttype == "original" else yes,
        options=opts,
        predicted=predicted if status is Status.OK else None,
        status=status,
        task=task,
        tamper_type=ttype,
        window_covered=covered,
        rule=rule,
        window=Window(**extra.pop("true_window")) if extra and "true_window" in extra else None,
        extra=extra or {},
    )


def balanced(answer: str, n_sources: int = 4) -> list[ScoredRecord]:
    out = []
    for s in range(n_sources):
        out.append(rec(f"v{s}_orig", "original", answer))
        out += [rec(f"v{s}_{t}", t, answer) for t in TYPES]
    return out


def test_always_yes_scores_two_thirds_per_type_and_overall() -> None:
    # Per type: 4 tampered (TP) + 4 originals (FP) -> P = 0.5, R = 1, F1 = 2/3.
    m = compute_metrics(balanced("A"), "tamper", n_resamples=50)
    for t in TYPES:
        assert m["f1"][t] == pytest.approx(2 / 3)
        assert m["per_type"][t]["precision"] == pytest.approx(0.5)
        assert m["per_type"][t]["recall"] == 1.0
        assert m["per_type"][t]["yes_rate"] == 1.0
    assert m["f1"]["overall"] == pytest.approx(2 / 3)
    assert m["degenerate"] == "always_yes"
    assert m["n_samples"] == 24


def test_always_no_scores_zero() -> None:
    m = compute_metrics(balanced("B"), "tamper", n_resamples=50)
    assert all(m["f1"][t] == 0.0 for t in TYPES)
    assert m["f1"]["overall"] == 0.0
    assert m["degenerate"] == "always_no"


def test_hand_computed_confusion_matrix() -> None:
    # masking: 3 tampered -> answers Yes, Yes, No (TP 2, FN 1)
    # originals: 3 -> Yes, No, No (FP 1, TN 2)
    # P = 2/3, R = 2/3, F1 = 2/3; acc = 4/6; MCC = (2*2 - 1*1)/sqrt(3*3*3*3) = 1/3
    rows = [
        rec("a_m", "masking", "A"), rec("b_m", "masking", "A"), rec("c_m", "masking", "B"),
        rec("a_o", "original", "A"), rec("b_o", "original", "B"), rec("c_o", "original", "B"),
    ]  # fmt: skip
    pt = compute_metrics(rows, "tamper", n_resamples=0)["per_type"]["masking"]
    assert (pt["tp"], pt["fn"], pt["fp"], pt["tn"]) == (2, 1, 1, 2)
    assert pt["precision"] == pytest.approx(2 / 3)
    assert pt["recall"] == pytest.approx(2 / 3)
    assert pt["f1"] == pytest.approx(2 / 3)
    assert pt["accuracy"] == pytest.approx(4 / 6)
    assert pt["mcc"] == pytest.approx(1 / 3)
    assert pt["yes_rate"] == pytest.approx(3 / 6)


def test_overall_is_unweighted_mean_of_types_present() -> None:
    # dropping: 1 TP + original FP -> F1 = 2/3 ; rotation: 1 FN + original FP -> F1 = 0.
    rows = [rec("x_d", "dropping", "A"), rec("y_r", "rotation", "B"), rec("z_o", "original", "A")]
    m = compute_metrics(rows, "tamper", n_resamples=0)
    assert set(m["f1"]) == {"dropping", "rotation", "overall"}
    assert m["f1"]["overall"] == pytest.approx((2 / 3 + 0.0) / 2)


def test_parse_failures_are_counted_not_scored_as_the_other_class() -> None:
    rows = [
        rec("a_m", "masking", "A"),
        rec("b_m", "masking", None, status=Status.PARSE_FAIL),
        rec("a_o", "original", "B"),
        rec("b_o", "original", None, status=Status.PARSE_FAIL),
        rec("c_o", "original", None, status=Status.API_ERROR),
    ]
    m = compute_metrics(rows, "tamper", n_resamples=0)
    pt = m["per_type"]["masking"]
    assert (pt["tp"], pt["fn"], pt["fp"], pt["tn"]) == (1, 0, 0, 1)
    assert m["f1"]["masking"] == 1.0
    assert m["parse_fail_rate"] == pytest.approx(2 / 5)
    assert m["error_rate"] == pytest.approx(1 / 5)
    assert pt["parse_fail_rate"] == pytest.approx(1 / 2)
    # Reference behaviour: every failed row is a wrong answer (a parse failure scores 0,
    # an API failure -1, an empty cell nothing; its F1 step flips all three).
    ref = compute_metrics(rows, "tamper", n_resamples=0, failures="wrong")["per_type"]["masking"]
    assert (ref["tp"], ref["fn"], ref["fp"], ref["tn"]) == (1, 1, 2, 1)


def test_reference_scoring_gives_f1_zero_not_null_when_a_type_all_failed() -> None:
    rows = [
        rec("a_m", "masking", "A"),
        rec("a_r", "rotation", None, status=Status.API_ERROR),
        rec("b_r", "rotation", None, status=Status.TIMEOUT),
        rec("a_o", "original", "B"),
    ]
    default = compute_metrics(rows, "tamper", n_resamples=0)
    assert default["f1"]["rotation"] is None and default["f1"]["overall"] is None
    ref = compute_metrics(rows, "tamper", n_resamples=0, failures="wrong")
    # rotation: tp 0, fn 2, tn 1 -> F1 0; masking: tp 1, tn 1 -> F1 1; macro mean 0.5
    assert ref["f1"] == {"masking": 1.0, "rotation": 0.0, "overall": 0.5}


def test_official_accuracy_counts_failed_rows_as_right() -> None:
    """VLMEvalKit get_dimension_rating: a truthy score counts, and -1 / empty are truthy."""
    rows = [
        rec("a_m", "masking", "A", task="t1"),  # right
        rec("b_m", "masking", "B", task="t1"),  # wrong
        rec("c_m", "masking", None, status=Status.API_ERROR, task="t2"),  # failed: "right"
        rec("a_o", "original", None, status=Status.PARSE_FAIL, task="t2"),  # wrong (score 0)
        rec("b_o", "original", None, status=Status.PARSE_FAIL, task="t2", rule="official:empty-reply"),
    ]  # fmt: skip
    m = compute_metrics(rows, "tamper", n_resamples=0, failures="wrong", official=True)
    acc = m["official_accuracy"]
    assert acc["tamper_type"]["masking"] == {"correct": 2, "total": 3, "accuracy": 66.67}
    assert acc["tamper_type"]["original"] == {"correct": 1, "total": 2, "accuracy": 50.0}
    assert acc["task_type"]["t1"] == {"correct": 1, "total": 2, "accuracy": 50.0}
    assert acc["task_tamper_type"]["t2_original"]["correct"] == 1
    assert acc["task_type"]["overall"] == {"correct": 3, "total": 5, "accuracy": 60.0}
    # the F1 counts every one of those failures wrong
    pt = m["per_type"]["masking"]
    assert (pt["tp"], pt["fn"], pt["fp"], pt["tn"]) == (1, 2, 2, 0)
    assert "official_accuracy" not in compute_metrics(rows, "tamper", n_resamples=0)


def test_permuted_options_score_the_same() -> None:
    swapped = {"A": "No", "B": "Yes"}
    rows = [
        rec("a_m", "masking", "B", options=swapped),
        rec("a_o", "original", "B", options=swapped),
    ]
    m = compute_metrics(rows, "tamper", n_resamples=0)
    pt = m["per_type"]["masking"]
    assert (pt["tp"], pt["fp"]) == (1, 1)


def test_per_task_and_coverage() -> None:
    rows = [
        rec("a_m", "masking", "A", task="t1", covered=True),
        rec("a_o", "original", "B", task="t1"),
        rec("b_m", "masking", "B", task="t2", covered=False),
        rec("b_o", "original", "B", task="t2"),
    ]
    m = compute_metrics(rows, "tamper", n_resamples=0)
    assert m["per_task"]["t1"]["masking"] == 1.0
    assert m["per_task"]["t2"]["masking"] == 0.0
    assert m["window_coverage"]["masking"] == 0.5


def test_bootstrap_ci_contains_estimate_and_is_seeded() -> None:
    rows = [rec(f"v{i}_m", "masking", "A" if i % 3 else "B") for i in range(30)]
    rows += [rec(f"v{i}_o", "original", "B" if i % 4 else "A") for i in range(30)]
    a = compute_metrics(rows, "tamper", n_resamples=300, seed=1)
    b = compute_metrics(rows, "tamper", n_resamples=300, seed=1)
    lo, hi = a["f1_ci95"]["masking"]
    assert lo <= a["f1"]["masking"] <= hi and lo < hi
    assert a["f1_ci95"] == b["f1_ci95"]


def test_cluster_bootstrap_constant_statistic() -> None:
    import numpy as np

    counts = np.ones((5, 2))
    low, high = cluster_bootstrap(counts, lambda s: s[:, 0] / s[:, 1], n_resamples=20)
    assert float(low) == float(high) == 1.0


def test_localisation_type_accuracy_and_iou() -> None:
    w = {"start_frame": 10, "end_frame": 20, "start_s": 0.0, "end_s": 1.0}
    seam = {"start_frame": 15, "end_frame": 15, "start_s": 0.5, "end_s": 0.5}
    rows = [
        rec("a_m", "masking", "A", extra={"pred_type": "masking", "pred_window": {"start_frame": 15, "end_frame": 25}, "true_window": w}),
        rec("b_d", "dropping", "A", extra={"pred_type": "masking", "pred_window": {"start_frame": 15, "end_frame": 15}, "true_window": seam}),
        rec("c_o", "original", "B"),
    ]  # fmt: skip
    loc = compute_metrics(rows, "tamper", n_resamples=0)["localisation"]
    assert loc["type_accuracy"] == 0.5
    # IoU [15,25) vs [10,20) = 5/15; seam: [14,16) vs [14,16) = 1.
    assert loc["iou_mean"] == pytest.approx((5 / 15 + 1.0) / 2)
    assert window_iou((0, 5), (10, 20)) == 0.0


def test_mcnemar_exact() -> None:
    # 6 discordant: A right only 5, B right only 1 -> two-sided p = 2 * P(X <= 1 | n=6) = 14/64.
    a = [True] * 5 + [False] + [True] * 3
    b = [False] * 5 + [True] + [True] * 3
    res = mcnemar_exact(a, b)
    assert (res.a_only, res.b_only, res.both_correct) == (5, 1, 3)
    assert res.p_value == pytest.approx(14 / 64)
    assert mcnemar_exact([True], [True]).p_value == 1.0


def test_unknown_benchmark() -> None:
    with pytest.raises(ValueError, match="unknown benchmark"):
        compute_metrics([], "nope")


def test_scores_from_counts_match_sklearn() -> None:
    import numpy as np
    from sklearn.metrics import balanced_accuracy_score, f1_score, matthews_corrcoef

    from mmrobust.metrics.tamper import binary_scores

    rng = np.random.default_rng(0)
    yt, yp = rng.random(200) < 0.5, rng.random(200) < 0.6
    s = binary_scores(list(yt), list(yp))
    assert s["f1"] == pytest.approx(f1_score(yt, yp))
    assert s["mcc"] == pytest.approx(matthews_corrcoef(yt, yp))
    assert s["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(yt, yp))


def test_an_undefined_f1_has_no_interval() -> None:
    """A type none of whose tampered clips was scored has F1 None, and so has its CI (it was
    bootstrapped from the originals alone: a CI around no estimate)."""
    records = [
        rec("a_orig", "original", "B"),
        rec("b_orig", "original", "A"),
        rec("a_drop", "dropping", "A"),
        rec("b_drop", "dropping", "B"),
        rec("a_mask", "masking", None, status=Status.PARSE_FAIL),
        rec("b_mask", "masking", None, status=Status.API_ERROR),
    ]
    m = tamper_metrics(records, n_resamples=50)
    assert m["f1"]["masking"] is None and m["f1"]["overall"] is None
    assert m["f1_ci95"]["masking"] is None and m["f1_ci95"]["overall"] is None
    assert m["per_type"]["masking"]["ci95"] is None
    assert m["f1"]["dropping"] == pytest.approx(0.5)  # tp 1, fp 1, fn 1
    low, high = m["f1_ci95"]["dropping"]
    assert 0.0 <= low <= 0.5 <= high <= 1.0
