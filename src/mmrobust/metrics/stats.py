"""Statistics shared by the metric families: cluster bootstrap and McNemar's exact test.

Pure functions over NumPy arrays; SciPy provides the test distribution.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0


def cluster_bootstrap(
    cluster_counts: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile confidence interval of a statistic of summed per-cluster counts.

    Clusters (source videos, MMR pairs) are resampled with replacement; the
    statistic is computed on the counts summed over the drawn clusters. All
    resamples are evaluated at once: ``weights @ cluster_counts``.

    Args:
        cluster_counts: ``(C, ...)`` float/int array, the additive counts of each of
            ``C`` clusters (e.g. ``(C, K, 4)`` confusion counts for ``K`` types).
        statistic: maps summed counts ``(R, ...)`` to values ``(R, M)`` (or ``(R,)``).
        n_resamples: number of bootstrap draws ``R``.
        seed: seed of the NumPy generator (results are reproducible).
        level: coverage of the interval.

    Returns:
        ``(low, high)`` arrays shaped like one statistic value (``(M,)`` or ``()``).

    Raises:
        ValueError: no clusters.
    """
    c = cluster_counts.shape[0]
    if c == 0:
        raise ValueError("cluster_bootstrap needs at least one cluster")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, c, size=(n_resamples, c))
    weights = np.zeros((n_resamples, c), dtype=np.float64)
    np.add.at(weights, (np.repeat(np.arange(n_resamples), c), draws.ravel()), 1.0)
    flat = cluster_counts.reshape(c, -1).astype(np.float64)
    summed = (weights @ flat).reshape((n_resamples, *cluster_counts.shape[1:]))
    values = np.asarray(statistic(summed), dtype=np.float64)
    alpha = (1.0 - level) / 2.0
    low = np.nanquantile(values, alpha, axis=0)
    high = np.nanquantile(values, 1.0 - alpha, axis=0)
    return low, high


@dataclass(frozen=True)
class McNemarResult:
    """Paired comparison of two runs on the same samples.

    Attributes:
        n: samples compared (both runs have a row).
        both_correct, a_only, b_only, both_wrong: the 2x2 table.
        p_value: two-sided exact McNemar p-value (binomial test on the
            discordant pairs, p = 0.5); 1.0 when there are no discordant pairs.
    """

    n: int
    both_correct: int
    a_only: int
    b_only: int
    both_wrong: int
    p_value: float


def mcnemar_exact(a_correct: Sequence[bool], b_correct: Sequence[bool]) -> McNemarResult:
    """McNemar's exact test on paired correctness vectors.

    Args:
        a_correct: per-sample correctness of run A.
        b_correct: per-sample correctness of run B, same samples and order.

    Raises:
        ValueError: the vectors differ in length.
    """
    if len(a_correct) != len(b_correct):
        raise ValueError("paired vectors differ in length")
    a = np.asarray(a_correct, dtype=bool)
    b = np.asarray(b_correct, dtype=bool)
    a_only = int(np.sum(a & ~b))
    b_only = int(np.sum(~a & b))
    discordant = a_only + b_only
    from scipy.stats import binomtest  # imported here: only `compare` needs SciPy

    p = 1.0 if discordant == 0 else float(binomtest(a_only, discordant, 0.5).pvalue)
    return McNemarResult(
        n=len(a),
        both_correct=int(np.sum(a & b)),
        a_only=a_only,
        b_only=b_only,
        both_wrong=int(np.sum(~a & ~b)),
        p_value=p,
    )


__all__ = ["DEFAULT_RESAMPLES", "McNemarResult", "cluster_bootstrap", "mcnemar_exact"]
