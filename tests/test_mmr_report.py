"""MMR report: Table-2-shaped table values and the accuracy plot."""

from __future__ import annotations

from pathlib import Path

import cv2

from mmrobust.metrics.mmr import mmr_metrics
from mmrobust.records import ScoredRecord
from mmrobust.report.mmr import table2, to_markdown, write_mmr_report
from mmrobust.status import Status


def _pair(group: str, category: str, pos: bool, neg: bool) -> list[ScoredRecord]:
    def one(polarity: str, right: bool) -> ScoredRecord:
        return ScoredRecord(
            sample_id=f"{group}#{polarity}",
            benchmark="mmr",
            group=group,
            answer="A",
            options={"A": "a", "B": "b", "C": "c", "D": "d"},
            predicted="A" if right else "B",
            status=Status.OK,
            category=category,
            polarity=polarity,
        )

    return [one("positive", pos), one("negative", neg)]


def _metrics() -> dict:  # type: ignore[type-arg]
    records = [
        *_pair("a1", "Character/Number", True, True),
        *_pair("a2", "Character/Number", True, False),
        *_pair("r1", "Relationships", False, True),
    ]
    return mmr_metrics(records, n_boot=0)


def test_table2_shape_and_values() -> None:
    frame = table2({"m": _metrics()})
    assert list(frame.columns) == ["Char/Num", "Rel.", "Avg"]
    assert frame.loc[("m", "RA")].tolist() == [50.0, 0.0, 33.33]
    mr = frame.loc[("m", "MR")].tolist()
    assert mr[0] == 50.0 and mr[2] == 50.0 and mr[1] != mr[1]  # Rel. MR undefined -> NaN
    md = to_markdown(frame)
    assert "| m | MR ↓ | 50.00 | – | 50.00 |" in md


def test_write_report_files(tmp_path: Path) -> None:
    paths = write_mmr_report(_metrics(), tmp_path, label="demo")
    assert paths["csv"].read_text().splitlines()[0] == "Method,Metric,Char/Num,Rel.,Avg"
    text = paths["markdown"].read_text()
    assert "UR 1, UF 1, NR 1, NF 0" in text
    image = cv2.imread(str(paths["plot"]))
    assert image is not None and image.shape[2] == 3 and image.shape[1] >= 600


def test_a_missing_score_prints_a_dash_without_a_percent_sign() -> None:
    """A run with no answered leading question has MR undefined: the console and the suite
    lines showed "MR –%" (and a tamper run with a null overall F1 "F1 –%")."""
    from mmrobust.report.mmr import headline, summary_lines
    from mmrobust.report.tamper import headline as tamper_headline
    from mmrobust.report.units import percent_sign

    m = {"RA": 0.0, "MR": None, "ci": {"RA": [0.0, 0.0]}, "UR": 0, "UF": 0, "NR": 0, "NF": 3}
    assert headline(m) == "RA 0.00%  MR –"
    assert summary_lines(m)[0].startswith("RA 0.00% (95% CI 0.00–0.00)  MR – (95% CI –)  ")
    assert tamper_headline({"f1": {"overall": None}}) == "F1 –"
    assert tamper_headline({"f1": {"overall": 0.9714}}) == "F1 97.1%"
    assert percent_sign(6.666) == "6.67%"
