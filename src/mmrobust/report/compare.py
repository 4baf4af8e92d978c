"""Paired comparison of two runs on their common samples (McNemar exact), ``mmrobust compare``.

Both runs must have been made on the same data (equal data sha256). Each run's
accuracy counts a failure as wrong. The family adds its own notes
(``BenchmarkFamily.compare_notes``): for tamper detection, what answering Yes to
every compared clip scores and the imbalance warning that ``eval`` prints, so a
model that says Yes to everything is not mistaken for a good one on an unbalanced set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrobust.metrics.stats import McNemarResult, mcnemar_exact
from mmrobust.records import ScoredRecord
from mmrobust.report.view import load_run


@dataclass(frozen=True)
class Comparison:
    """Paired comparison of two runs.

    Attributes:
        a, b: run labels (the model specs; the run folder names when the specs are equal).
        mcnemar: the 2x2 table and exact p-value over common samples.
        only_a, only_b: samples present in one run only (not compared).
        dataset: the dataset's name.
        notes: the family's lines about the compared samples (``BenchmarkFamily.compare_notes``:
            for tamper, what answering Yes to every clip scores and the imbalance warning).
    """

    a: str
    b: str
    mcnemar: McNemarResult
    only_a: int
    only_b: int
    dataset: str = ""
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        m = self.mcnemar
        return {
            "a": self.a, "b": self.b, "n": m.n, "both_correct": m.both_correct,
            "a_only_correct": m.a_only, "b_only_correct": m.b_only, "both_wrong": m.both_wrong,
            "p_value": m.p_value, "only_in_a": self.only_a, "only_in_b": self.only_b,
            "accuracy_a": self.accuracy_a, "accuracy_b": self.accuracy_b, "dataset": self.dataset,
            "notes": list(self.notes),
        }  # fmt: skip

    @property
    def accuracy_a(self) -> float:
        """Share of the common samples run A answered right (a failure counts as wrong)."""
        m = self.mcnemar
        return (m.both_correct + m.a_only) / m.n if m.n else 0.0

    @property
    def accuracy_b(self) -> float:
        """Share of the common samples run B answered right."""
        m = self.mcnemar
        return (m.both_correct + m.b_only) / m.n if m.n else 0.0

    def as_text(self) -> str:
        """The 2x2 table of right/wrong answers, each run's accuracy and the test, as text."""
        from mmrobust.report.units import pct_sign

        m = self.mcnemar
        a, b = self.a, self.b
        rows = [
            ("", f"{b}: right", f"{b}: wrong"),
            (f"{a}: right", str(m.both_correct), str(m.a_only)),
            (f"{a}: wrong", str(m.b_only), str(m.both_wrong)),
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [
            f"Paired comparison on the {m.n} samples of {self.dataset} both runs answered "
            "(a failure counts as wrong)"
        ]
        for r in rows:
            cells = [r[0].ljust(widths[0]), r[1].rjust(widths[1]), r[2].rjust(widths[2])]
            lines.append("  ".join(cells))
        lines.append(f"accuracy: {a} {pct_sign(self.accuracy_a)}, {b} {pct_sign(self.accuracy_b)}")
        verdict = "differ" if m.p_value < 0.05 else "do not differ"
        lines.append(
            f"McNemar exact test on the {m.a_only + m.b_only} discordant samples: "
            f"p = {m.p_value:.4g} (the runs {verdict} at the 5% level)"
        )
        if self.only_a or self.only_b:
            lines.append(
                f"not compared: {self.only_a} samples only in {a}, {self.only_b} only in {b}"
            )
        lines += self.notes
        return "\n".join(lines)


def compare_runs(run_a: str | Path, run_b: str | Path) -> Comparison:
    """McNemar exact test of two runs on the samples both answered (a failure counts as wrong).

    Raises:
        FileNotFoundError: not a run folder.
        ValueError: the runs were made on different data, or share no sample.
    """
    a, b = load_run(run_a), load_run(run_b)
    ra: Mapping[str, ScoredRecord] = {r.sample_id: r for r in a.records}
    rb: Mapping[str, ScoredRecord] = {r.sample_id: r for r in b.records}
    ha = a.info.get("dataset", {}).get("data_hash")
    hb = b.info.get("dataset", {}).get("data_hash")
    if ha != hb:
        raise ValueError(
            f"the runs were made on different data (sha256 {str(ha)[:12]} vs {str(hb)[:12]}); "
            "compare two runs of the same dataset"
        )
    common = sorted(set(ra) & set(rb))
    if not common:
        raise ValueError("the two runs share no sample id")
    res = mcnemar_exact([ra[s].correct for s in common], [rb[s].correct for s in common])
    la, lb = (a.model, b.model) if a.model != b.model else (a.run_dir.name, b.run_dir.name)
    return Comparison(
        a=la,
        b=lb,
        mcnemar=res,
        only_a=len(set(ra) - set(rb)),
        only_b=len(set(rb) - set(ra)),
        dataset=a.dataset,
        notes=tuple(a.family.compare_notes([ra[s] for s in common])),
    )


__all__ = ["Comparison", "compare_runs"]
