"""The published rows (MVTamperBench Table 7, MMR Table 2): transcription and consistency.

Each row must reproduce its paper's overall column from its own values, as the
paper defines it; a transcription slip in any cell breaks that. The check
against the papers' text itself needs ``../shared/seeds`` and skips without it.
"""

from __future__ import annotations

import re

import pytest

from mmrobust.report.published import (
    load_published,
    table2_errata,
    table2_metrics,
    table7_metrics,
)
from tests.shared_data import SHARED_DIR, shared_file

TYPES = ("dropping", "masking", "repetition", "rotation", "substitution")


def test_table7_overall_is_the_mean_of_the_five_types() -> None:
    # MVTamperBench section 4.1: "F1 (overall) score as the macro average of these individual
    # F1 scores". Each printed value is rounded to 3 decimals, so the mean of the printed
    # per-type values may differ from the printed overall by at most 0.0005 + 0.0005.
    rows = table7_metrics()
    assert len(rows) == 45  # "We evaluate 45 recent MLLMs"
    for model, m in rows.items():
        mean = sum(m["f1"][t] for t in TYPES) / 5
        assert abs(mean - m["f1"]["overall"]) <= 0.001 + 1e-9, model


def test_table7_rows_the_text_names() -> None:
    rows = table7_metrics()
    # Appendix A.5: "VILA1.5-40B and InternVL2.5-8B ... overall scores of 0.879 and 0.875";
    # "Chat-UniVi-7B-v1.5 achieved an overall score of 0.658"; "as low as 0.001".
    assert rows["VILA1.5-40b"]["f1"]["overall"] == 0.879
    assert rows["InternVL2_5-8B"]["f1"]["overall"] == 0.875
    assert rows["Chat-UniVi-7B-v1.5"]["f1"]["overall"] == 0.658
    assert min(m["f1"]["overall"] for m in rows.values()) == 0.001
    # Four models answer (almost) always "Yes": F1 2/3 on every type.
    always_yes = [k for k, m in rows.items() if all(m["f1"][t] == 0.667 for t in TYPES)]
    assert always_yes == ["molmo-7B-O-0924", "Video-LLaVA-7B-HF", "molmo-72B-0924"]


def test_table7_categories_follow_the_printed_thresholds() -> None:
    table = load_published("mvtamperbench_table7")
    cols = table.source["columns"]
    for row in table.rows:
        rec = dict(zip(cols, row, strict=True))
        overall = rec["overall"]
        expected = "Low" if overall < 0.1 else "High" if overall > 0.8 else "Moderate"
        assert rec["performance_category"] == expected, rec["model"]
        size = rec["size_b"]
        expected_size = "Small" if size < 7 else "Medium" if size < 26 else "Large"
        assert rec["size_category"] == expected_size, rec["model"]  # 26B prints as Large


def _counts(values: list[float], totals: list[int]) -> list[int]:
    """Whole counts k with 100 k / n equal to each printed percentage to 2 decimals."""
    out = []
    for v, n in zip(values, totals, strict=True):
        k = round(v * n / 100)
        assert abs(100 * k / n - v) < 0.01, (v, n)  # rounded or truncated to 2 decimals
        out.append(k)
    return out


def test_table2_avg_follows_from_the_categories() -> None:
    # MMR section 3: RA = UR / pairs, MR = UF / (UR + UF); Avg is over all 300 pairs. Each
    # category's RA fixes its UR, its MR then fixes its UF; the sums must give the printed Avg.
    table = load_published("mmr_table2")
    pairs = table.source["pairs_per_category"]
    assert sum(pairs) == 300 and len(pairs) == len(table.source["categories"]) == 12
    errata = {(e["model"], e["metric"], e["category"]): e["consistent"] for e in table2_errata()}
    assert len(table.rows) == 19  # 6 closed-source, 12 open-source, Bunny-MMR-3B
    for row in table.rows:
        ra = [
            errata.get((row["model"], "RA", c), v)
            for c, v in zip(table.source["categories"], row["RA"], strict=True)
        ]
        ur = _counts(ra, pairs)
        assert abs(100 * sum(ur) / 300 - row["RA_avg"]) < 0.01, row["model"]
        uf = []
        for u, mr in zip(ur, row["MR"], strict=True):
            f = round(u * mr / (100 - mr))
            assert u + f > 0 and abs(100 * f / (u + f) - mr) < 0.01, (row["model"], mr)
            uf.append(f)
        assert abs(100 * sum(uf) / (sum(ur) + sum(uf)) - row["MR_avg"]) < 0.01, row["model"]


def test_table2_erratum_is_the_only_inconsistent_cell() -> None:
    (erratum,) = table2_errata()
    assert (erratum["model"], erratum["category"], erratum["printed"]) == (
        "Mini-Gemini-HD-34B",
        "Activity",
        19.17,
    )
    printed = table2_metrics()["Mini-Gemini-HD-34B"]
    assert printed["categories"]["Activity"]["RA"] == 19.17  # kept as printed
    assert (printed["RA"], printed["MR"]) == (69.0, 15.16)


def _seed(name: str) -> list[str]:
    return shared_file(SHARED_DIR / "seeds" / name).read_text(encoding="utf-8").splitlines()


def test_table7_matches_the_paper_text() -> None:
    lines = _seed("mvtamperbench-paper.txt")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Model\tSize\tDrop\tMask"))
    printed = [ln.split("\t") for ln in lines[start:] if ln.count("\t") == 9]  # 2 header lines
    table = load_published("mvtamperbench_table7")
    assert [[str(v) for v in r] for r in printed[2:]] == [
        [r[0], str(r[1]), *(f"{v:.3f}" for v in r[2:8]), r[8], r[9]] for r in table.rows
    ]


def test_table2_matches_the_paper_text() -> None:
    lines = _seed("mmr-paper.txt")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Table 2: Comparison"))
    rows = [ln.split("\t") for ln in lines[start + 1 :] if ln.count("\t") == 13]
    ra = [r for r in rows[:21] if r[0] not in ("Method", "Random")]
    mr = [r for r in rows[21:42] if r[0] not in ("Method", "Random")]
    table = load_published("mmr_table2")
    for r_ra, r_mr, row in zip(ra, mr, table.rows, strict=True):
        assert re.sub(r"\s\[\d+\]$", "", r_ra[0]) == row["model"]
        assert [float(v) for v in r_ra[1:]] == [*row["RA"], row["RA_avg"]]
        assert [float(v) for v in r_mr[1:]] == [*row["MR"], row["MR_avg"]]


@pytest.mark.parametrize("name", ["mvtamperbench_table7", "mmr_table2"])
def test_sources_are_named(name: str) -> None:
    source = load_published(name).source
    for key in ("paper", "arxiv", "table", "where", "page", "page_note", "units"):
        assert key in source, key
