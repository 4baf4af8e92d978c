"""MMR metrics: RA and MR per category and overall (arXiv:2406.10638, section 3, eq. 1-2).

Every pair (one positive and one negative question on the same image, paired
by ``ScoredRecord.group``) falls in one of four outcomes:

* ``UR`` understanding and robustness: positive right, negative right;
* ``UF`` understanding but fragility: positive right, negative wrong;
* ``NR`` not understanding, rigorous: positive wrong, negative right;
* ``NF`` not understanding, fragility: both wrong.

``RA = UR / pairs`` (eq. 2) and ``MR = UF / (UR + UF)`` (eq. 1), in percent,
rounded to two decimals as in the paper's tables (so are the positive- and
negative-question accuracies and the CIs; ``parse_fail_rate`` and
``error_rate`` are fractions 0-1, as for every benchmark). ``MR`` is ``None`` when
``UR + UF == 0`` (undefined; the reference script prints 0 there).

A question whose answer failed (``parse_fail`` or an error status) is *not
right*: the pair is scored by that natural rule, and the share of failed
questions is reported as ``parse_fail_rate`` and ``error_rate`` so a low RA
caused by failures cannot pass for fragility.

The ``overall`` figures are over all pairs (the published "Avg" column); the
unweighted mean of the category values is reported separately as
``category_mean``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from mmrobust.official import mmr_pair_outcome
from mmrobust.records import ScoredRecord
from mmrobust.status import Status

OUTCOMES: tuple[str, ...] = ("UR", "UF", "NR", "NF")

_CATEGORY_ORDER: tuple[str, ...] = (
    "Character/Number",
    "Presence",
    "Color/Texture",
    "Number",
    "Shape",
    "Posture",
    "Position",
    "Abstract Knowledge",
    "Concrete Knowledge",
    "Expertise",
    "Activity",
    "Relationships",
)


PairingRule = Literal["content", "position"]
PAIRING_RULES: tuple[str, ...] = ("content", "position")


@dataclass(frozen=True)
class Pair:
    """The two scored questions of one MMR pair and its outcome.

    ``outcome`` is decided when the pair is formed (:func:`pair_records`): by
    the records' labels and correctness (``content``), or by the reference's
    rule for file-position pairs (``position``).
    """

    group: str
    category: str
    positive: ScoredRecord
    negative: ScoredRecord
    outcome: str


def _outcome(positive: ScoredRecord, negative: ScoredRecord) -> str:
    """``"UR"``, ``"UF"``, ``"NR"`` or ``"NF"`` (a failed answer counts as wrong)."""
    pos, neg = positive.correct, negative.correct
    if pos:
        return "UR" if neg else "UF"
    return "NR" if neg else "NF"


def _by_content(records: Sequence[ScoredRecord]) -> tuple[list[Pair], list[str]]:
    groups: dict[str, list[ScoredRecord]] = {}
    for record in records:
        groups.setdefault(record.group, []).append(record)
    pairs: list[Pair] = []
    problems: list[str] = []
    for group in sorted(groups):
        members = groups[group]
        pos = [r for r in members if r.polarity == "positive"]
        neg = [r for r in members if r.polarity == "negative"]
        if len(pos) != 1 or len(neg) != 1 or len(members) != 2:
            problems.append(
                f"{group}: {len(pos)} positive and {len(neg)} negative records; not scored as a pair"
            )
            continue
        category = pos[0].category or neg[0].category or "Uncategorised"
        pairs.append(Pair(group, category, pos[0], neg[0], _outcome(pos[0], neg[0])))
    return pairs, problems


def _by_position(records: Sequence[ScoredRecord]) -> tuple[list[Pair], list[str]]:
    """The reference's pairing: records 0-1, 2-3, ... in file order, its UF rule."""
    ordered = sorted(records, key=lambda r: int(r.meta["record_index"]))
    pairs: list[Pair] = []
    problems: list[str] = []
    for first, second in zip(ordered[::2], ordered[1::2], strict=False):
        labels = (
            str(first.meta.get("question_type", "")),
            str(second.meta.get("question_type", "")),
        )
        outcome = mmr_pair_outcome(first.correct, second.correct, *labels)
        if first.group != second.group:
            problems.append(
                f"records {first.meta['record_index']} ({first.group}) and "
                f"{second.meta['record_index']} ({second.group}) are paired by file position, "
                "as the reference does, although their ids differ"
            )
        pos, neg = (second, first) if labels == ("NEG", "POS") else (first, second)
        category = (
            first.category or "Uncategorised"
        )  # the reference files a pair under its first id
        pairs.append(Pair(first.group, category, pos, neg, outcome))
    if len(ordered) % 2:
        last = ordered[-1]
        problems.append(
            f"record {last.meta['record_index']} ({last.group}) has no partner in file order; "
            "not scored (the reference script fails on an odd count)"
        )
    return pairs, problems


def pair_records(
    records: Iterable[ScoredRecord], *, pairing: PairingRule = "content"
) -> tuple[list[Pair], list[str]]:
    """Group MMR records into pairs; return ``(pairs, problems)``, pairs sorted by group.

    ``content`` (default): the two records sharing ``group`` (the MMR ``id``),
    one ``positive`` and one ``negative`` by ``polarity`` (the loader resolves
    the released file's mislabelled pair by content, see
    :mod:`mmrobust.datasets.mmr`). A group that is not one positive plus one
    negative record is described in ``problems`` and left out. The result does
    not depend on the order of ``records``.

    ``position``: the reference's rule (``calculation.py`` of the MMR
    repository, commit b85b573): records in file order (``meta["record_index"]``)
    are paired 0-1, 2-3, ..., and :func:`mmrobust.official.mmr_pair_outcome`
    decides, so the ``POS``/``POS`` pair counts both mixed outcomes as ``UF``.
    Falls back to ``content`` (with a problem line) when records carry no
    ``record_index``.

    ``records`` are one family's (``compute_metrics`` passes only those).
    """
    mmr = list(records)
    if pairing == "position":
        if all("record_index" in r.meta for r in mmr):
            pairs, problems = _by_position(mmr)
            return sorted(pairs, key=lambda p: p.group), problems
        pairs, problems = _by_content(mmr)
        return pairs, [
            "pairing by file position needs each record's index in the file; paired by id",
            *problems,
        ]
    if pairing != "content":
        raise ValueError(f"unknown pairing {pairing!r}; expected one of {PAIRING_RULES}")
    return _by_content(mmr)


def _pct(num: float, den: float) -> float | None:
    return None if den == 0 else round(100.0 * num / den, 2)


def _frac(num: int, den: int) -> float:
    return 0.0 if den == 0 else round(num / den, 4)


def summarize(pairs: Sequence[Pair]) -> dict[str, Any]:
    """Counts and rates of a set of pairs.

    Returns:
        ``pairs, UR, UF, NR, NF``; ``RA, MR, positive_accuracy, negative_accuracy``
        in percent, 2 decimals (``None`` when the denominator is 0);
        ``parse_fail_rate``, ``error_rate``: fractions (0-1, 4 decimals) of the
        ``2 * pairs`` questions, the unit every benchmark uses for these two keys.
    """
    counts = dict.fromkeys(OUTCOMES, 0)
    for pair in pairs:
        counts[pair.outcome] += 1
    n = len(pairs)
    questions = [r for p in pairs for r in (p.positive, p.negative)]
    return {
        "pairs": n,
        **counts,
        "RA": _pct(counts["UR"], n),
        "MR": _pct(counts["UF"], counts["UR"] + counts["UF"]),
        "positive_accuracy": _pct(sum(p.positive.correct for p in pairs), n),
        "negative_accuracy": _pct(sum(p.negative.correct for p in pairs), n),
        "parse_fail_rate": _frac(sum(r.status is Status.PARSE_FAIL for r in questions), 2 * n),
        "error_rate": _frac(sum(r.status.is_error for r in questions), 2 * n),
    }


def bootstrap_ci(
    pairs: Sequence[Pair], *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> dict[str, Any]:
    """Percentile bootstrap CIs of RA and MR, resampling pairs with replacement.

    Pairs are put in a canonical order (by group id) before resampling, so the
    interval depends only on the pairs and the seed, never on the order the
    rows were stored in (worker count, resume).

    Args:
        pairs: the scored pairs (the resampling unit: one image, two questions).
        n_boot: bootstrap replicates.
        seed: seed of ``numpy.random.default_rng``.
        level: two-sided confidence level.

    Returns:
        ``{"RA": [lo, hi], "MR": [lo, hi] or None, "level", "n_boot", "seed"}`` in percent,
        2 decimals; replicates with ``UR + UF == 0`` are left out of the MR interval.
    """
    n = len(pairs)
    out: dict[str, Any] = {"level": level, "n_boot": n_boot, "seed": seed, "RA": None, "MR": None}
    if n == 0 or n_boot <= 0:
        return out
    ordered = sorted(pairs, key=lambda p: (p.group, p.positive.sample_id))
    codes = np.array([OUTCOMES.index(p.outcome) for p in ordered], dtype=np.int64)
    rng = np.random.default_rng(seed)
    sample = codes[rng.integers(0, n, size=(n_boot, n))]
    ur = (sample == 0).sum(axis=1)
    uf = (sample == 1).sum(axis=1)
    alpha = (1.0 - level) / 2.0
    ra = 100.0 * ur / n
    out["RA"] = [round(float(v), 2) for v in np.quantile(ra, [alpha, 1.0 - alpha])]
    valid = (ur + uf) > 0
    if valid.any():
        mr = 100.0 * uf[valid] / (ur[valid] + uf[valid])
        out["MR"] = [round(float(v), 2) for v in np.quantile(mr, [alpha, 1.0 - alpha])]
    return out


def _category_sort_key(name: str) -> tuple[int, str]:
    return (
        _CATEGORY_ORDER.index(name) if name in _CATEGORY_ORDER else len(_CATEGORY_ORDER),
        name,
    )


def mmr_metrics(
    records: Iterable[ScoredRecord],
    *,
    defects: Sequence[str] = (),
    n_boot: int = 1000,
    seed: int = 0,
    pairing: PairingRule = "content",
) -> dict[str, Any]:
    """All MMR figures for ``metrics.json`` (benchmark ``"mmr"``).

    Args:
        records: scored rows; non-MMR rows are ignored.
        defects: data defects reported by the loader (listed verbatim, first).
        n_boot: bootstrap replicates for ``ci`` (0 disables it).
        seed: bootstrap seed.
        pairing: ``content`` (by id and polarity; default) or ``position`` (the
            reference's file-position pairing and its UF rule; see :func:`pair_records`).

    Returns:
        ``benchmark, pairs, UR, UF, NR, NF, RA, MR, positive_accuracy,
        negative_accuracy, parse_fail_rate, error_rate`` over all pairs;
        ``categories`` {display name: the same keys} in Table 2 order;
        ``category_mean`` {``RA``, ``MR``}: unweighted mean of the category values
        (categories with undefined MR left out); ``ci`` (bootstrap over pairs);
        ``unpaired`` (groups with a record in no scored pair);
        ``defects`` (loader defects, then pairing problems); ``pairing``.
    """
    records = list(records)
    pairs, problems = pair_records(records, pairing=pairing)
    paired = {r.sample_id for p in pairs for r in (p.positive, p.negative)}
    unpaired = {r.group for r in records if r.sample_id not in paired}
    by_category: dict[str, list[Pair]] = {}
    for pair in pairs:
        by_category.setdefault(pair.category, []).append(pair)
    categories = {
        name: summarize(by_category[name]) for name in sorted(by_category, key=_category_sort_key)
    }
    ra_values = [c["RA"] for c in categories.values() if c["RA"] is not None]
    mr_values = [c["MR"] for c in categories.values() if c["MR"] is not None]
    return {
        "benchmark": "mmr",
        **summarize(pairs),
        "categories": categories,
        "category_mean": {
            "RA": round(float(np.mean(ra_values)), 2) if ra_values else None,
            "MR": round(float(np.mean(mr_values)), 2) if mr_values else None,
        },
        "ci": bootstrap_ci(pairs, n_boot=n_boot, seed=seed),
        "unpaired": len(unpaired),
        "defects": [*defects, *problems],
        "pairing": pairing,
    }


def outcome_counts(metrics: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """``(UR, UF, NR, NF)`` of a metrics dict (overall or one category)."""
    return (metrics["UR"], metrics["UF"], metrics["NR"], metrics["NF"])


__all__ = [
    "OUTCOMES",
    "PAIRING_RULES",
    "Pair",
    "PairingRule",
    "bootstrap_ci",
    "mmr_metrics",
    "outcome_counts",
    "pair_records",
    "summarize",
]
