"""MMR metrics (paper section 3, eq. 1-2) against hand counts and the real file's facts."""

from __future__ import annotations

from mmrobust.datasets.mmr import load_mmr
from mmrobust.metrics import compute_metrics
from mmrobust.metrics.mmr import mmr_metrics, pair_records
from mmrobust.records import ScoredRecord
from mmrobust.status import Status
from tests.shared_data import MMR_JSON as REAL
from tests.shared_data import needs_shared

needs_real = needs_shared(REAL)


def rec(
    group: str,
    polarity: str,
    answer: str,
    predicted: str | None,
    status: Status = Status.OK,
    category: str = "Shape",
) -> ScoredRecord:
    return ScoredRecord(
        sample_id=f"{group}#{polarity[:3]}",
        benchmark="mmr",
        group=group,
        answer=answer,
        options={k: k.lower() for k in "ABCD"},
        predicted=predicted,
        status=status,
        category=category,
        polarity=polarity,
    )


def pair(
    group: str, pos_right: bool, neg_right: bool, category: str = "Shape"
) -> list[ScoredRecord]:
    return [
        rec(group, "positive", "A", "A" if pos_right else "B", category=category),
        rec(group, "negative", "C", "C" if neg_right else "D", category=category),
    ]


def test_hand_counted_example() -> None:
    # 3 UR, 1 UF, 1 NR, 1 NF in Shape; 1 UF in Posture.
    records = [
        *pair("s1", True, True),
        *pair("s2", True, True),
        *pair("s3", True, True),
        *pair("s4", True, False),
        *pair("s5", False, True),
        *pair("s6", False, False),
        *pair("p1", True, False, category="Posture"),
    ]
    m = mmr_metrics(records, n_boot=0)
    assert (m["pairs"], m["UR"], m["UF"], m["NR"], m["NF"]) == (7, 3, 2, 1, 1)
    assert m["RA"] == 42.86  # 3/7
    assert m["MR"] == 40.0  # 2/5
    assert m["positive_accuracy"] == 71.43  # 5/7
    assert m["negative_accuracy"] == 57.14  # 4/7
    shape, posture = m["categories"]["Shape"], m["categories"]["Posture"]
    assert (shape["RA"], shape["MR"]) == (50.0, 25.0)
    assert (posture["RA"], posture["MR"]) == (0.0, 100.0)
    assert list(m["categories"]) == ["Shape", "Posture"]  # Table 2 order
    assert m["category_mean"] == {"RA": 25.0, "MR": 62.5}
    assert m["parse_fail_rate"] == 0.0 and m["error_rate"] == 0.0
    assert m["ci"]["RA"] is None  # n_boot=0


def test_failures_count_as_wrong_and_are_reported() -> None:
    records = [
        rec("g1", "positive", "A", "A"),
        rec("g1", "negative", "B", None, Status.PARSE_FAIL),
        rec("g2", "positive", "A", None, Status.TIMEOUT),
        rec("g2", "negative", "B", "B"),
    ]
    m = mmr_metrics(records, n_boot=0)
    assert (m["UR"], m["UF"], m["NR"], m["NF"]) == (0, 1, 1, 0)
    assert m["MR"] == 100.0 and m["RA"] == 0.0
    assert m["parse_fail_rate"] == 0.25 and m["error_rate"] == 0.25


def test_undefined_mr_is_none() -> None:
    m = mmr_metrics(pair("g", False, True), n_boot=0)
    assert m["MR"] is None and m["RA"] == 0.0
    assert m["category_mean"]["MR"] is None


def test_unpaired_groups_are_listed_not_scored() -> None:
    records = [*pair("ok", True, True), rec("lonely", "positive", "A", "A")]
    m = mmr_metrics(records, defects=["loader said so"], n_boot=0)
    assert m["pairs"] == 1 and m["unpaired"] == 1
    assert m["defects"][0] == "loader said so"
    assert m["defects"][1].startswith("lonely: 1 positive and 0 negative")
    pairs, problems = pair_records(records)
    assert [p.group for p in pairs] == ["ok"] and len(problems) == 1


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    records = [r for i in range(40) for r in pair(f"g{i}", True, i % 4 != 0)]
    a = mmr_metrics(records, n_boot=500, seed=1)
    b = mmr_metrics(records, n_boot=500, seed=1)
    assert a["ci"] == b["ci"]
    lo, hi = a["ci"]["RA"]
    assert lo < a["RA"] == 75.0 < hi
    lo, hi = a["ci"]["MR"]
    assert lo < a["MR"] == 25.0 < hi


def _constant(data_samples: list, letter: str) -> list[ScoredRecord]:  # type: ignore[type-arg]
    return [
        ScoredRecord(
            sample_id=s.id,
            benchmark="mmr",
            group=s.group,
            answer=s.answer,
            options=s.options,
            predicted=letter,
            status=Status.OK,
            category=s.category,
            polarity=s.polarity,
        )
        for s in data_samples
    ]


@needs_real
def test_real_file_constant_baselines() -> None:
    data = load_mmr(REAL, text_only=True)
    a = compute_metrics(_constant(data.samples, "A"), "mmr", defects=data.defects, n_boot=0)
    assert (a["UR"], a["UF"], a["NR"], a["NF"], a["RA"], a["MR"]) == (20, 56, 54, 170, 6.67, 73.68)
    assert a["benchmark"] == "mmr" and a["pairs"] == 300
    assert a["defects"] == data.defects and "attribute/number/04" in a["defects"][0]
    c = mmr_metrics(_constant(data.samples, "C"), n_boot=0)
    assert (c["UR"], c["UF"], c["NR"], c["NF"], c["RA"], c["MR"]) == (30, 45, 45, 180, 10.0, 60.0)


@needs_real
def test_real_file_synthetic_gpt4o_row() -> None:
    # 207 UR and 50 UF over 300 pairs -> RA 69.00, MR 19.46 (the published GPT-4o row).
    data = load_mmr(REAL, text_only=True)
    positives = [s for s in data.samples if s.polarity == "positive"]
    plan = {
        p.group: ("UR" if i < 207 else "UF" if i < 257 else "NF") for i, p in enumerate(positives)
    }
    records = []
    for s in data.samples:
        outcome = plan[s.group]
        right = outcome == "UR" or (outcome == "UF" and s.polarity == "positive")
        wrong = next(k for k in s.options if k != s.answer)
        records.append(_constant([s], s.answer if right else wrong)[0])
    m = mmr_metrics(records, n_boot=0)
    assert (m["UR"], m["UF"], m["RA"], m["MR"]) == (207, 50, 69.0, 19.46)
