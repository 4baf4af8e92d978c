"""Consistency metrics: does an answer survive a perturbation of the picture or the clip?

Pure functions over stored rows of a ``mmrobust perturb`` set (``benchmark`` ``consistency``).
Each perturbed row is paired with the clean row its ``meta["clean_id"]`` names; a pair is the
unit of every rate, a source (``group``: the clean sample's cluster) the unit of resampling.

Definitions (rates are fractions 0-1; a failed answer counts as wrong, and as an answer of its
own when comparing two answers):

* ``accuracy_clean``: right on the clean rows of the pairs' samples (each sample once);
  ``accuracy_perturbed``: right on the perturbed rows;
* ``accuracy_drop``: mean over pairs of clean right minus perturbed right, with a paired
  cluster-bootstrap CI (:func:`mmrobust.metrics.stats.cluster_bootstrap`) and McNemar's exact
  p on the discordant pairs (:func:`mmrobust.metrics.stats.mcnemar_exact`);
* ``flip_rate``: pairs whose answer changed (Lu et al.'s "answer consistency"; INFACT's
  temporal sensitivity is the flip rate of ``reverse``);
* ``resist_rate``: pairs right on clean and on perturbed, over pairs right on clean (INFACT's
  resist rate, arXiv:2510.xxxx; REVEAL reports the same ratio);
* ``attack_success_rate``: typographic pairs whose perturbed answer is the overlaid option
  (SCAM, Westerhoff et al. 2025); over all typographic pairs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mmrobust.metrics.chance import consistency_chance
from mmrobust.metrics.stats import cluster_bootstrap, mcnemar_exact
from mmrobust.records import ScoredRecord
from mmrobust.status import Status

CLEAN = "clean"
ATTACK_EFFECT = "typographic"


@dataclass(frozen=True)
class ConsistencyPair:
    """One (clean, perturbed) pair of rows of one question."""

    clean: ScoredRecord
    perturbed: ScoredRecord

    @property
    def effect(self) -> str:
        return str(self.perturbed.meta.get("effect"))

    @property
    def severity(self) -> int:
        return int(self.perturbed.meta.get("severity") or 0)

    @property
    def flipped(self) -> bool:
        """The answers differ (a failed answer is ``None``, an answer of its own)."""
        return _answer(self.clean) != _answer(self.perturbed)

    @property
    def attacked(self) -> bool | None:
        """Typographic: the perturbed answer is the overlaid option; else ``None``."""
        letter = self.perturbed.meta.get("overlay_option")
        if self.effect != ATTACK_EFFECT or not letter:
            return None
        return _answer(self.perturbed) == letter


def _answer(r: ScoredRecord) -> str | None:
    return r.predicted if r.status is Status.OK else None


def pair_consistency(
    records: Sequence[ScoredRecord],
) -> tuple[list[ConsistencyPair], list[ScoredRecord], list[str]]:
    """Pairs, the clean rows, and the ids of perturbed rows with no clean row (in row order)."""
    clean = {
        str(r.meta.get("clean_id", r.sample_id)): r
        for r in records
        if r.meta.get("effect", CLEAN) == CLEAN
    }
    pairs: list[ConsistencyPair] = []
    unpaired: list[str] = []
    for r in records:
        if r.meta.get("effect", CLEAN) == CLEAN:
            continue
        c = clean.get(str(r.meta.get("clean_id")))
        if c is None:
            unpaired.append(r.sample_id)
        else:
            pairs.append(ConsistencyPair(c, r))
    pairs.sort(key=lambda p: (p.clean.group, p.perturbed.sample_id))
    return pairs, list(clean.values()), unpaired


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


def _cluster_counts(pairs: Sequence[ConsistencyPair]) -> np.ndarray:
    """``(C, 5)``: per source: pairs, clean right, perturbed right, flips, both right."""
    by: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for p in pairs:
        row = by[p.clean.group or p.clean.sample_id]
        row[0] += 1
        row[1] += p.clean.correct
        row[2] += p.perturbed.correct
        row[3] += p.flipped
        row[4] += p.clean.correct and p.perturbed.correct
    return np.array([by[k] for k in sorted(by)], dtype=np.float64)


def _stat(summed: np.ndarray) -> np.ndarray:
    n, c, pc, flips, both = (summed[:, i] for i in range(5))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.stack([(c - pc) / n, flips / n, np.where(c > 0, both / c, np.nan)], axis=1)


def _interval(low: float, high: float) -> list[float] | None:
    return None if np.isnan(low) or np.isnan(high) else [float(low), float(high)]


def summarize_pairs(
    pairs: Sequence[ConsistencyPair], *, n_resamples: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """The consistency figures of a set of pairs (see the module docstring).

    Returns:
        ``pairs``, ``sources``, ``accuracy_clean``, ``accuracy_perturbed``,
        ``accuracy_drop`` (+ ``_ci``), ``flip_rate`` (+ ``_ci``), ``resist_rate`` (+ ``_ci``),
        ``mcnemar`` (``both_correct``, ``clean_only``, ``perturbed_only``, ``both_wrong``,
        ``p_value``), ``attack_pairs`` and ``attack_success_rate`` (``None`` without
        typographic pairs); rates are fractions, ``None`` where the denominator is 0.
    """
    n = len(pairs)
    clean_rows = {p.clean.sample_id: p.clean for p in pairs}
    clean_right = sum(p.clean.correct for p in pairs)
    pert_right = sum(p.perturbed.correct for p in pairs)
    both = sum(p.clean.correct and p.perturbed.correct for p in pairs)
    flips = sum(p.flipped for p in pairs)
    attacks = [a for a in (p.attacked for p in pairs) if a is not None]
    test = mcnemar_exact([p.clean.correct for p in pairs], [p.perturbed.correct for p in pairs])
    out: dict[str, Any] = {
        "pairs": n,
        "sources": len({p.clean.group or p.clean.sample_id for p in pairs}),
        "accuracy_clean": _ratio(sum(r.correct for r in clean_rows.values()), len(clean_rows)),
        "accuracy_perturbed": _ratio(pert_right, n),
        "accuracy_drop": _ratio(clean_right - pert_right, n),
        "flip_rate": _ratio(flips, n),
        "resist_rate": _ratio(both, clean_right),
        "flips": flips,
        "clean_right": clean_right,
        "both_right": both,
        "mcnemar": {
            "both_correct": test.both_correct,
            "clean_only": test.a_only,
            "perturbed_only": test.b_only,
            "both_wrong": test.both_wrong,
            "p_value": test.p_value,
        },
        "attack_pairs": len(attacks),
        "attack_success_rate": _ratio(sum(attacks), len(attacks)) if attacks else None,
        "accuracy_drop_ci": None,
        "flip_rate_ci": None,
        "resist_rate_ci": None,
    }
    if n and n_resamples > 0:
        low, high = cluster_bootstrap(
            _cluster_counts(pairs), _stat, n_resamples=n_resamples, seed=seed
        )
        for i, key in enumerate(("accuracy_drop", "flip_rate", "resist_rate")):
            out[f"{key}_ci"] = _interval(low[i], high[i])
    return out


def _groups(pairs: Iterable[ConsistencyPair], key: Any) -> dict[str, list[ConsistencyPair]]:
    out: dict[str, list[ConsistencyPair]] = defaultdict(list)
    for p in pairs:
        out[str(key(p))].append(p)
    return out


def consistency_metrics(
    records: Sequence[ScoredRecord], *, n_resamples: int = 1000, seed: int = 0, **_: Any
) -> dict[str, Any]:
    """``metrics.json`` of a consistency run: overall, ``per_effect`` (each with
    ``per_severity``), ``per_severity`` over all effects, and chance levels.

    Args:
        records: the stored rows (clean and perturbed).
        n_resamples: bootstrap resamples for the CIs (0: none). seed: bootstrap seed.

    Returns:
        :func:`summarize_pairs`'s keys over all pairs, plus ``benchmark``, ``n_samples``,
        ``n_clean``, ``n_perturbed``, ``unpaired``, ``per_effect``, ``per_severity``,
        ``chance`` (:func:`mmrobust.metrics.chance.consistency_chance`),
        ``parse_fail_rate``, ``error_rate``, ``status_counts``.
    """
    pairs, clean, unpaired = pair_consistency(records)
    n = len(records)
    kw = {"n_resamples": n_resamples, "seed": seed}
    per_effect: dict[str, Any] = {}
    for effect, group in sorted(_groups(pairs, lambda p: p.effect).items()):
        per_effect[effect] = summarize_pairs(group, **kw)
        per_effect[effect]["per_severity"] = {
            sev: summarize_pairs(g, **kw)
            for sev, g in sorted(_groups(group, lambda p: p.severity).items())
        }
    per_severity = {
        sev: summarize_pairs(g, **kw)
        for sev, g in sorted(_groups(pairs, lambda p: p.severity).items())
    }
    return {
        "benchmark": "consistency",
        "n_samples": n,
        "n_clean": len(clean),
        "n_perturbed": n - len(clean),
        "unpaired": len(unpaired),
        **summarize_pairs(pairs, **kw),
        "per_effect": per_effect,
        "per_severity": per_severity,
        "chance": consistency_chance(len(p.clean.options) for p in pairs),
        "parse_fail_rate": _ratio(sum(r.status is Status.PARSE_FAIL for r in records), n) or 0.0,
        "error_rate": _ratio(sum(r.status.is_error for r in records), n) or 0.0,
        "status_counts": dict(Counter(r.status.value for r in records)),
        "ci": {"level": 0.95, "n_resamples": n_resamples, "seed": seed, "unit": "source"},
    }


__all__ = [
    "ConsistencyPair",
    "consistency_metrics",
    "pair_consistency",
    "summarize_pairs",
]
