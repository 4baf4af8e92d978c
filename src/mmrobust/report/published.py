"""Published results of the two papers, shown beside a user's runs as reference rows.

The numbers are transcribed from the papers into package data
(``mmrobust/data/published/``), each file naming its paper, table, section
and the copy it was transcribed from:

* ``mvtamperbench_table7.json`` — MVTamperBench (arXiv:2412.19794) Table 7:
  45 models, F1 per tamper type and overall (fractions, three decimals);
* ``mmr_table2.json`` — MMR (arXiv:2406.10638) Table 2: 19 models, RA and MR
  per category and over all pairs (percent).

They were measured on the released benchmarks with the papers' protocols; a
run here is comparable only when it used the same data and protocol (the
report says so under each table). ``tests/test_published.py`` checks that
every row reproduces its paper's overall column from its per-type or
per-category values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

PUBLISHED_MARK = "published, not run here"
"""The label a reference row carries in every report."""


@dataclass(frozen=True)
class PublishedTable:
    """One transcribed table: its source description and rows.

    Attributes:
        name: file stem (``mvtamperbench_table7``, ``mmr_table2``).
        source: the file's fields other than ``rows`` (paper, arxiv, table, where,
            page, units, notes, errata ...).
        rows: the rows as stored.
    """

    name: str
    source: dict[str, Any]
    rows: list[Any]

    @property
    def citation(self) -> str:
        """``"MVTamperBench (arXiv:2412.19794) Table 7"``-style reference."""
        short = {"mvtamperbench_table7": "MVTamperBench", "mmr_table2": "MMR"}.get(self.name, "")
        return f"{short} (arXiv:{self.source['arxiv']}) {self.source['table']}".strip()


@cache
def load_published(name: str) -> PublishedTable:
    """Read ``mmrobust/data/published/<name>.json``.

    Raises:
        FileNotFoundError: no such table.
    """
    path = resources.files("mmrobust").joinpath("data", "published", f"{name}.json")
    if not path.is_file():
        raise FileNotFoundError(f"no published table {name!r}")
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data.pop("rows")
    return PublishedTable(name=name, source=data, rows=rows)


def table7_metrics() -> dict[str, dict[str, Any]]:
    """MVTamperBench Table 7 as ``metrics.json``-like dicts: model -> ``{"f1": {type: F1}}``.

    F1 values are fractions as printed; ``n_samples`` and the rates are absent.
    """
    table = load_published("mvtamperbench_table7")
    cols = table.source["columns"]
    out: dict[str, dict[str, Any]] = {}
    for row in table.rows:
        rec = dict(zip(cols, row, strict=True))
        types = ("dropping", "masking", "repetition", "rotation", "substitution", "overall")
        out[str(rec["model"])] = {"benchmark": "tamper", "f1": {t: rec[t] for t in types}}
    return out


def table2_metrics() -> dict[str, dict[str, Any]]:
    """MMR Table 2 as ``metrics.json``-like dicts: model -> ``{"RA", "MR", "categories"}``.

    Values in percent as printed (one printed typo is kept; see :func:`table2_errata`).
    """
    table = load_published("mmr_table2")
    names = table.source["categories"]
    out: dict[str, dict[str, Any]] = {}
    for row in table.rows:
        out[str(row["model"])] = {
            "benchmark": "mmr",
            "RA": row["RA_avg"],
            "MR": row["MR_avg"],
            "categories": {
                name: {"RA": ra, "MR": mr}
                for name, ra, mr in zip(names, row["RA"], row["MR"], strict=True)
            },
        }
    return out


def table2_errata() -> list[dict[str, Any]]:
    """Cells of MMR Table 2 that contradict the rest of their row (kept as printed)."""
    return list(load_published("mmr_table2").source.get("errata", []))


__all__ = [
    "PUBLISHED_MARK",
    "PublishedTable",
    "load_published",
    "table2_errata",
    "table2_metrics",
    "table7_metrics",
]
