"""The field's meta-evaluation statistics, named and defined as Google's mt-metrics-eval defines them, vectorised
over resamples. Pure numpy/scipy (no Django).

Every statistic takes gold (human) and metric scores shaped ``(R, n)`` (``R`` resamples of ``n`` items; gold may
be ``(1, n)`` and broadcast) and returns ``R`` values, so a bootstrap or a permutation test is one array operation
per block of resamples instead of a Python loop per resample.

What matches what in mt-metrics-eval (``stats.py``, ``pce.py``, ``data.py``):

- ``pearson``, ``spearman``: ``scipy.stats.pearsonr`` / ``spearmanr`` as ``stats.Correlation.Pearson`` /
  ``Spearman`` (``average_by='none'``): NaN when either vector is constant.
- ``kendall-b``: ``stats.Correlation.Kendall(variant='b')`` (scipy's τ_b).
- ``accuracy``: pairwise accuracy, ``stats.Agreement`` over the pairs of a group; pooled over groups (language
  pairs) as ``data.CompareMetricsWithGlobalAccuracy`` pools it (agreements summed, then divided by pairs summed).
- ``soft_pairwise_accuracy``: ``stats.PairwiseConfidenceError`` (1 − PCE, ``pce.py``), its permutation draws
  reproduced for a seed.
- ``permutation_significance``: ``stats.PermutationSigDiff`` (PERM-BOTH, z-scored metric scores, early stopping
  at block boundaries) for every pair of metrics in decreasing order, as ``data.ComputeSigMatrix``; the draws
  are the legacy ``numpy.random`` stream, so a seed gives mt-metrics-eval's own draws.
- ``ranked_clusters``: ``data.AssignRanks``, WMT's greedy significance clusters.
- ``bootstrap_interval``: segments resampled with replacement (percentile interval). mt-metrics-eval has no
  bootstrap; its functions run on the same resamples give the same interval (``reference/make_fixtures.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# Most pair-sign matrices held at once (floats): bounds memory whatever the number of resamples.
_PAIR_BLOCK = 4_000_000
# Most permutation draws held at once (items x resamples): a few tens of MB whatever the items.
_DRAW_BLOCK = 2_000_000


def _as_2d(x) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[None, :] if a.ndim == 1 else a


def _constant(a: np.ndarray) -> np.ndarray:
    return np.all(a == a[:, :1], axis=1)


def pearson(gold, metric) -> np.ndarray:
    """Row-wise Pearson r; NaN where either row is constant (mt-metrics-eval's rule since scipy 1.4)."""
    g, m = np.broadcast_arrays(_as_2d(gold), _as_2d(metric))
    gc = g - g.mean(axis=1, keepdims=True)
    mc = m - m.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sum(gc * mc, axis=1) / np.sqrt(np.sum(gc * gc, axis=1) * np.sum(mc * mc, axis=1))
    r = np.clip(r, -1.0, 1.0)
    r[_constant(g) | _constant(m)] = np.nan
    return r


def spearman(gold, metric) -> np.ndarray:
    """Row-wise Spearman ρ: Pearson of average ranks (scipy's ``spearmanr``); NaN where a row is constant."""
    from scipy.stats import rankdata

    g, m = np.broadcast_arrays(_as_2d(gold), _as_2d(metric))
    return pearson(rankdata(g, axis=1), rankdata(m, axis=1))


def _pair_signs(g: np.ndarray, m: np.ndarray, rows: slice, i: np.ndarray, j: np.ndarray):
    return np.sign(g[rows, i] - g[rows, j]), np.sign(m[rows, i] - m[rows, j])


def _pairwise(gold, metric, reduce: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    g, m = np.broadcast_arrays(_as_2d(gold), _as_2d(metric))
    i, j = np.triu_indices(g.shape[1], k=1)
    step = max(1, _PAIR_BLOCK // max(len(i), 1))
    out = np.empty(g.shape[0])
    for start in range(0, g.shape[0], step):
        rows = slice(start, start + step)
        out[rows] = reduce(*_pair_signs(g, m, rows, i, j))
    return out


def agreements(gold, metric) -> tuple[np.ndarray, int]:
    """Per row: pairs whose gold and metric differences have the same sign (ties agree only with ties), and the
    number of pairs (``stats.Agreement``)."""
    n = _as_2d(gold).shape[1]
    return _pairwise(gold, metric, lambda sg, sm: np.sum(sg == sm, axis=1)), n * (n - 1) // 2


def accuracy(gold, metric) -> np.ndarray:
    """Pairwise accuracy of one group."""
    agree, pairs = agreements(gold, metric)
    return agree / pairs if pairs else np.full(len(agree), np.nan)


def kendall_b(gold, metric) -> np.ndarray:
    """Row-wise Kendall τ_b from the pairs' signs (scipy's ``kendalltau(variant='b')``)."""

    def reduce(sg, sm):
        concordance = np.sum(sg * sm, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return concordance / np.sqrt(np.sum(sg != 0, axis=1) * np.sum(sm != 0, axis=1))

    return _pairwise(gold, metric, reduce)


@dataclass(frozen=True)
class Statistic:
    name: str
    label: str
    reference: str  # the mt-metrics-eval function it equals
    compute: Callable[[np.ndarray, np.ndarray], np.ndarray]
    pooled: bool = False  # over groups: pairs summed (global accuracy) rather than a mean of group values
    pairwise: bool = False  # O(n²) in the items: for systems, or triplets offline (the pages offer the others)


STATISTICS: dict[str, Statistic] = {
    s.name: s
    for s in (
        Statistic("pearson", "Pearson r", "stats.Correlation.Pearson (scipy.stats.pearsonr)", pearson),
        Statistic("spearman", "Spearman ρ", "stats.Correlation.Spearman (scipy.stats.spearmanr)", spearman),
        Statistic("kendall-b", "Kendall τ_b", "stats.Correlation.Kendall(variant='b')", kendall_b, pairwise=True),
        Statistic(
            "accuracy",
            "pairwise accuracy",
            "stats.Agreement; data.CompareMetricsWithGlobalAccuracy",
            accuracy,
            pooled=True,
            pairwise=True,
        ),
    )
}


def get_statistic(name: str) -> Statistic:
    try:
        return STATISTICS[name]
    except KeyError:
        raise ValueError(f"unknown statistic {name!r}; choose one of {', '.join(STATISTICS)}") from None


def grouped(statistic: Statistic, gold, metric, bounds: Sequence[tuple[int, int]]) -> np.ndarray:
    """The statistic over consecutive groups ``bounds`` of the items (language pairs): pooled accuracy sums
    agreements and pairs over groups; every other statistic is the mean of the groups' non-NaN values, 0 when
    none (``stats.PermutationSigDiff``'s ``_Corr``)."""
    g, m = np.broadcast_arrays(_as_2d(gold), _as_2d(metric))
    if statistic.pooled:
        agree, pairs = np.zeros(g.shape[0]), 0
        for b, e in bounds:
            a, p = agreements(g[:, b:e], m[:, b:e])
            agree, pairs = agree + a, pairs + p
        return agree / pairs if pairs else np.zeros(g.shape[0])
    values = np.stack([statistic.compute(g[:, b:e], m[:, b:e]) for b, e in bounds], axis=1)
    present = ~np.isnan(values)
    total = np.where(present, values, 0.0).sum(axis=1)
    count = present.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), 0.0)


# ---- soft pairwise accuracy (Thompson et al. 2024) ------------------------------------------------------


def pairwise_p_values(seg_scores, permutations: int = 1000, seed: int = 4) -> np.ndarray:
    """``(systems, segments)`` → upper triangle of p-values that system i beats system j by a paired permutation
    test over segments, with the draws of ``pce.compute_pairwise_p_values`` for the same seed (a float32 sign
    matrix from ``default_rng(seed).random``)."""
    scores = np.asarray(seg_scores, dtype=np.float32)
    systems, segments = scores.shape
    signs = np.random.default_rng(seed).random(size=(permutations, segments), dtype=np.float32)
    np.rint(signs, out=signs, casting="same_kind")
    signs *= 2.0
    signs -= 1.0
    totals = np.sum(scores, axis=1)
    null = np.matmul(signs, scores.T)  # (permutations, systems)
    p = np.full((systems, systems), np.nan)
    i, j = np.triu_indices(systems, k=1)
    p[i, j] = np.sum((null[:, i] - null[:, j]) >= (totals[i] - totals[j]), axis=0) / permutations
    return p


def soft_pairwise_accuracy(gold_seg, metric_seg, permutations: int = 1000, seed: int = 4) -> float:
    """1 − PCE: one minus the mean absolute difference between the human and the metric p-values over system
    pairs (``stats.PairwiseConfidenceError``); both matrices are ``(systems, segments)``."""
    human = pairwise_p_values(gold_seg, permutations, seed)
    metric = pairwise_p_values(metric_seg, permutations, seed)
    i, j = np.triu_indices(human.shape[0], k=1)
    return float(1.0 - np.mean(np.abs(human[i, j] - metric[i, j])))


# ---- permutation significance and WMT's ranked clusters ---------------------------------------------------


@dataclass(frozen=True)
class Significance:
    """Metrics in decreasing order of the statistic, the p-value matrix (``p[i, j]``, j > i: the null hypothesis
    that metric j is at least as good as metric i), their clusters, and every parameter used."""

    statistic: str
    metrics: list[str]
    values: list[float]
    p_values: np.ndarray
    ranks: list[int]
    resamples: int
    resamples_used: np.ndarray  # per pair, after early stopping
    seed: int | None
    block_size: int
    early_min: float
    early_max: float
    alpha: float

    def as_dict(self) -> dict:
        n = len(self.metrics)
        return {
            "statistic": self.statistic,
            "test": "paired permutation (PERM-BOTH) of z-scored metric scores, mt-metrics-eval PermutationSigDiff",
            "parameters": {
                "resamples": self.resamples,
                "seed": self.seed,
                "block_size": self.block_size,
                "early_min": self.early_min,
                "early_max": self.early_max,
                "alpha": self.alpha,
            },
            "ranking": [
                {"metric": m, "value": v, "cluster": r} for m, v, r in zip(self.metrics, self.values, self.ranks)
            ],
            "p_values": {
                f"{self.metrics[i]} > {self.metrics[j]}": float(self.p_values[i, j])
                for i in range(n)
                for j in range(i + 1, n)
            },
        }


def _zscore(x: np.ndarray) -> np.ndarray:
    std = np.std(x)
    return (x - np.mean(x)) / std  # scipy.stats.zscore (ddof 0); a constant vector gives NaN there too


def permutation_p_value(
    statistic: Statistic,
    gold: np.ndarray,
    better: np.ndarray,
    worse: np.ndarray,
    bounds: Sequence[tuple[int, int]],
    rng: np.random.RandomState,
    resamples: int,
    block_size: int,
    early_min: float,
    early_max: float,
) -> tuple[float, int]:
    """p-value for "``better`` is not better than ``worse``": the share of draws, each swapping the two metrics'
    z-scored scores item by item with probability ½, whose difference is at least the observed one. Drawn a
    block at a time (the same stream as one draw per resample), stopping early at a block boundary when p is
    below ``early_min`` or above ``early_max``."""
    a, b = _zscore(better), _zscore(worse)
    observed = grouped(statistic, gold, a, bounds) - grouped(statistic, gold, b, bounds)
    rows_at_once = max(1, _DRAW_BLOCK // max(len(a), 1))  # bounds memory; row by row, the stream is the same
    large, used = 0, 0
    while used < resamples:
        size = min(block_size, resamples - used)
        for start in range(0, size, rows_at_once):
            w = rng.binomial(1, 0.5, (min(rows_at_once, size - start), len(a)))
            hybrid_worse = w * b + (1 - w) * a
            hybrid_better = (1 - w) * b + w * a
            diff = grouped(statistic, gold, hybrid_better, bounds) - grouped(statistic, gold, hybrid_worse, bounds)
            large += int(np.sum(diff >= observed[0]))
        used += size
        if used % block_size == 0:
            p = large / used
            if p < early_min or p > early_max:
                break
    return large / used, used


def ranked_clusters(p_values: np.ndarray, alpha: float) -> list[int]:
    """WMT's greedy clusters over metrics sorted best first: a metric starts a new cluster when a metric of the
    current cluster above it beats it with p ≤ alpha (``data.AssignRanks``)."""
    ranks, current, start = [], 1, 0
    for i in range(p_values.shape[0]):
        if np.any(p_values[start:i, i] <= alpha):
            current, start = current + 1, i
        ranks.append(current)
    return ranks


def permutation_significance(
    statistic_name: str,
    gold,
    metrics: dict[str, Sequence[float]],
    bounds: Sequence[tuple[int, int]] | None = None,
    *,
    resamples: int = 1000,
    seed: int | None = 0,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
    alpha: float = 0.05,
) -> Significance:
    """Every pair of metrics compared by ``permutation_p_value`` (one shared draw stream, pairs in the order
    ``data.ComputeSigMatrix`` takes them) and ranked into clusters. Metrics are sorted by decreasing value,
    name breaking ties. ``bounds``: consecutive item groups (language pairs); default one group."""
    statistic = get_statistic(statistic_name)
    g = np.asarray(gold, dtype=float)
    bounds = list(bounds) if bounds else [(0, len(g))]
    if not metrics:
        raise ValueError("no metrics to compare")
    scores = {name: np.asarray(v, dtype=float) for name, v in metrics.items()}
    for name, v in scores.items():
        if v.shape != g.shape:
            raise ValueError(f"metric {name}: {v.shape[0]} scores for {g.shape[0]} human scores")
    if resamples < 1 or block_size < 1 or not 0 < alpha < 1:
        raise ValueError("resamples and block size must be positive and alpha in (0, 1)")
    values = {name: float(grouped(statistic, g, v, bounds)[0]) for name, v in scores.items()}
    order = sorted(values, key=lambda name: (-values[name], name))
    n = len(order)
    p, used = np.zeros((n, n)), np.zeros((n, n), dtype=int)
    rng = np.random.RandomState(seed)
    for i in range(n):
        for j in range(i + 1, n):
            p[i, j], used[i, j] = permutation_p_value(
                statistic,
                g,
                scores[order[i]],
                scores[order[j]],
                bounds,
                rng,
                resamples,
                block_size,
                early_min,
                early_max,
            )
    return Significance(
        statistic.name,
        order,
        [values[m] for m in order],
        p,
        ranked_clusters(p, alpha),
        resamples,
        used,
        seed,
        block_size,
        early_min,
        early_max,
        alpha,
    )


# ---- bootstrap confidence intervals over segments -------------------------------------------------------


def bootstrap_indices(items: int, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, items)`` indices drawn with replacement: ``default_rng(seed).integers(0, items, ...)``."""
    return np.random.default_rng(seed).integers(0, items, size=(resamples, items))


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float
    resamples: int
    seed: int
    alpha: float

    def as_dict(self) -> dict:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "parameters": {
                "resamples": self.resamples,
                "seed": self.seed,
                "alpha": self.alpha,
                "method": "percentile bootstrap over segments",
            },
        }


def bootstrap_interval(
    statistic_name: str, gold, metric, *, resamples: int = 1000, seed: int = 0, alpha: float = 0.05
) -> Interval:
    """Percentile interval of the statistic over items (triplets) resampled with replacement."""
    statistic = get_statistic(statistic_name)
    g, m = np.asarray(gold, dtype=float), np.asarray(metric, dtype=float)
    idx = bootstrap_indices(len(g), resamples, seed)
    values = np.concatenate(
        [statistic.compute(g[idx[s : s + 100]], m[idx[s : s + 100]]) for s in range(0, resamples, 100)]
    )
    low, high = np.nanpercentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return Interval(float(statistic.compute(g, m)[0]), float(low), float(high), resamples, seed, alpha)


def system_bootstrap_interval(
    statistic_name: str, gold_seg, metric_seg, *, resamples: int = 1000, seed: int = 0, alpha: float = 0.05
) -> Interval:
    """System level: segments (columns of the ``(systems, segments)`` matrices) resampled with replacement, each
    system's score the mean of its resampled segments, the statistic over systems. A resample is a count per
    segment, so the system scores of every resample are one matrix product."""
    statistic = get_statistic(statistic_name)
    g, m = np.asarray(gold_seg, dtype=float), np.asarray(metric_seg, dtype=float)
    segments = g.shape[1]
    idx = bootstrap_indices(segments, resamples, seed)
    counts = np.zeros((resamples, segments))
    np.add.at(counts, (np.repeat(np.arange(resamples), segments), idx.ravel()), 1.0)
    values = statistic.compute((counts @ g.T) / segments, (counts @ m.T) / segments)
    low, high = np.nanpercentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    point = statistic.compute(g.mean(axis=1), m.mean(axis=1))[0]
    return Interval(float(point), float(low), float(high), resamples, seed, alpha)
