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

import functools
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

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


# ---- pair counts in O(n log n) ------------------------------------------------------------------------------


# Groups up to this size count their pairs from pair-sign arrays (vectorised over groups and resamples); larger
# ones by sorting (``kendall_counts``), one resample at a time.
_SMALL_GROUP = 64


def _tied_pairs(sorted_values: np.ndarray) -> int:
    """Pairs of equal values in a sorted vector: the sum of c(c-1)/2 over its runs of equal values."""
    if len(sorted_values) < 2:
        return 0
    edges = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1], True])
    runs = np.diff(edges)
    return int(np.sum(runs * (runs - 1) // 2))


def kendall_counts(gold, metric) -> tuple[int, int, int, int, int]:
    """(concordant, discordant, tied in gold only, tied in the metric only, tied in both) over the pairs of two
    vectors, in O(n log n): the ties from sorting, concordant minus discordant from scipy's ``kendalltau``
    (a merge-count, exact as an integer once multiplied back: its relative error is a few ulp, far under 1/2
    for any n below 10^7). These are mt-metrics-eval's ``_FenwickTreeSufficientStatistics``."""
    from scipy.stats import kendalltau

    g, m = np.asarray(gold, dtype=float), np.asarray(metric, dtype=float)
    n = len(g)
    total = n * (n - 1) // 2
    if n < 2:
        return 0, 0, 0, 0, 0
    if n <= _SMALL_GROUP:  # a few pairs: count them (scipy's variance term divides by n - 2)
        i, j = np.triu_indices(n, k=1)
        sg, sm = np.sign(g[i] - g[j]), np.sign(m[i] - m[j])
        tg, tm = sg == 0, sm == 0
        return (
            int(np.sum(sg * sm > 0)),
            int(np.sum(sg * sm < 0)),
            int(np.sum(tg & ~tm)),
            int(np.sum(tm & ~tg)),
            int(np.sum(tg & tm)),
        )
    order = np.lexsort((m, g))
    gs, ms = g[order], m[order]
    tie_g = _tied_pairs(gs)
    tie_m = _tied_pairs(np.sort(m))
    joint = np.flatnonzero(np.r_[True, (gs[1:] != gs[:-1]) | (ms[1:] != ms[:-1]), True])
    runs = np.diff(joint)
    tie_both = int(np.sum(runs * (runs - 1) // 2))
    untied = total - tie_g - tie_m + tie_both
    if tie_g == total or tie_m == total:
        s = 0
    else:
        tau = kendalltau(g, m, method="asymptotic").statistic
        s = int(round(float(tau) * np.sqrt(total - tie_g) * np.sqrt(total - tie_m)))
    if (untied + s) % 2:
        raise ArithmeticError(f"Kendall counts: concordance {s} and {untied} untied pairs disagree (n={n})")
    concordant, discordant = (untied + s) // 2, (untied - s) // 2
    return concordant, discordant, tie_g - tie_both, tie_m - tie_both, tie_both


def _group_pair_counts(
    g: np.ndarray, m: np.ndarray, bounds: Sequence[tuple[int, int]], large: bool = True
) -> np.ndarray:
    """``(5, R, G)`` pair counts (as ``kendall_counts``) of every group of every row (``large`` False: of the
    groups of up to ``_SMALL_GROUP`` items only, zeros elsewhere)."""
    rows, groups = m.shape[0], len(bounds)
    counts = np.zeros((5, rows, groups), dtype=np.int64)
    small = [k for k, (b, e) in enumerate(bounds) if 2 <= e - b <= _SMALL_GROUP]
    if small:
        i, j, label = _pair_index([bounds[k] for k in small])
        step = max(1, _PAIR_BLOCK // max(len(i), 1))
        starts = np.flatnonzero(np.r_[True, label[1:] != label[:-1]])
        for r0 in range(0, rows, step):
            rs = slice(r0, r0 + step)
            gb = g[rs] if g.shape[0] > 1 else g
            sg, sm = np.sign(gb[:, i] - gb[:, j]), np.sign(m[rs, i] - m[rs, j])
            sg = np.broadcast_to(sg, sm.shape)
            product = sg * sm
            tg, tm = sg == 0, sm == 0
            for c, mask in enumerate((product > 0, product < 0, tg & ~tm, tm & ~tg, tg & tm)):
                counts[c, rs][:, small] = np.add.reduceat(mask.astype(np.int64), starts, axis=1)
    for k, (b, e) in enumerate(bounds):
        if large and e - b > _SMALL_GROUP:
            for r in range(rows):
                counts[:, r, k] = kendall_counts(g[r if g.shape[0] > 1 else 0, b:e], m[r, b:e])
    return counts


def _pair_index(bounds: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair i < j within each group, groups in order and pairs in ``triu_indices`` order (the order
    mt-metrics-eval's nested loops enumerate them), with the index of its group. One ``triu_indices`` per
    distinct group size, laid out for all the groups of that size at once (a task has thousands of groups)."""
    sizes = np.array([e - b for b, e in bounds], dtype=np.intp).reshape(-1)
    starts = np.array([b for b, _ in bounds], dtype=np.intp).reshape(-1)
    offsets = np.r_[0, np.cumsum(sizes * (sizes - 1) // 2)].astype(np.intp)
    i, j, label = (np.empty(offsets[-1], dtype=np.intp) for _ in range(3))
    for size in np.unique(sizes[sizes >= 2]):
        groups = np.flatnonzero(sizes == size)
        ti, tj = np.triu_indices(size, k=1)
        at = (offsets[groups][:, None] + np.arange(len(ti))).ravel()
        i[at] = (starts[groups][:, None] + ti).ravel()
        j[at] = (starts[groups][:, None] + tj).ravel()
        label[at] = np.repeat(groups, len(ti))
    return i, j, label


def _group_sums(x: np.ndarray, bounds: Sequence[tuple[int, int]]) -> np.ndarray:
    """Row-wise sums of ``x`` (R, n) over each group; bounds are consecutive."""
    return np.add.reduceat(x, [b for b, _ in bounds], axis=1)


def _contiguous(bounds: Sequence[tuple[int, int]], n: int) -> bool:
    return (
        bool(bounds)
        and bounds[0][0] == 0
        and bounds[-1][1] == n
        and all(e > b and e == nb for (b, e), (nb, _) in zip(bounds, list(bounds[1:]) + [(n, n)]))
    )


def _pearson_groups(g: np.ndarray, m: np.ndarray, bounds) -> np.ndarray:
    """``(R, G)`` Pearson r per group: centred sums, NaN where a group's gold or metric is constant or it has
    fewer than two items (scipy's ``pearsonr`` as ``AverageCorrelation`` calls it)."""
    g, m = np.broadcast_arrays(g, m)
    sizes = np.array([e - b for b, e in bounds], dtype=float)
    label = np.repeat(np.arange(len(bounds)), sizes.astype(int))
    gc = g - (_group_sums(g, bounds) / sizes)[:, label]
    mc = m - (_group_sums(m, bounds) / sizes)[:, label]
    with np.errstate(invalid="ignore", divide="ignore"):
        r = _group_sums(gc * mc, bounds) / np.sqrt(_group_sums(gc * gc, bounds) * _group_sums(mc * mc, bounds))
    r = np.clip(r, -1.0, 1.0)
    starts = [b for b, _ in bounds]
    constant = (np.maximum.reduceat(g, starts, axis=1) == np.minimum.reduceat(g, starts, axis=1)) | (
        np.maximum.reduceat(m, starts, axis=1) == np.minimum.reduceat(m, starts, axis=1)
    )
    r[constant] = np.nan
    return r


def _group_ranks(x: np.ndarray, bounds) -> np.ndarray:
    """Average ranks (1-based, scipy's ``rankdata``) of each row's values within each group."""
    rows, n = x.shape
    label = np.repeat(np.arange(len(bounds)), [e - b for b, e in bounds])
    order = np.lexsort((x, np.broadcast_to(label, x.shape)), axis=-1)
    xs = np.take_along_axis(x, order, axis=1)
    new = np.ones((rows, n), dtype=bool)
    new[:, 1:] = (xs[:, 1:] != xs[:, :-1]) | (label[1:] != label[:-1])
    position = np.broadcast_to(np.arange(n), (rows, n))
    first = np.maximum.accumulate(np.where(new, position, 0), axis=1)
    ends = np.ones((rows, n), dtype=bool)
    ends[:, :-1] = new[:, 1:]
    last = np.minimum.accumulate(np.where(ends, position, n)[:, ::-1], axis=1)[:, ::-1]
    start = np.array([b for b, _ in bounds])[label]
    ranks = np.empty((rows, n))
    np.put_along_axis(ranks, order, (first + last) / 2.0 - start + 1.0, axis=1)
    return ranks


def _spearman_groups(g: np.ndarray, m: np.ndarray, bounds) -> np.ndarray:
    g, m = np.broadcast_arrays(g, m)
    return _pearson_groups(_group_ranks(np.ascontiguousarray(g), bounds), _group_ranks(m, bounds), bounds)


def _kendall_b_groups(g, m, bounds) -> np.ndarray:
    """τ_b per group: small groups from their pair counts, larger ones by scipy's ``kendalltau`` itself (what
    ``stats.Correlation.Kendall`` calls; O(n log n), and no sorting beyond its own)."""
    from scipy.stats import kendalltau

    con, dis, tg, tm, tb = _group_pair_counts(g, m, bounds, large=False)
    total = con + dis + tg + tm + tb
    xtie, ytie = tm + tb, tg + tb  # x: the metric, y: gold (scipy's and mt-metrics-eval's names)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (con - dis) / np.sqrt(total - xtie) / np.sqrt(total - ytie)
    tau[(xtie == total) | (ytie == total)] = np.nan
    for k, (b, e) in enumerate(bounds):
        if e - b > _SMALL_GROUP:
            for r in range(m.shape[0]):
                gold = g[r if g.shape[0] > 1 else 0, b:e]
                tau[r, k] = kendalltau(gold, m[r, b:e], method="asymptotic").statistic
    return tau


def _acc23_groups(g, m, bounds) -> np.ndarray:
    con, dis, tg, tm, tb = _group_pair_counts(g, m, bounds)
    total = con + dis + tg + tm + tb
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (con + tb) / np.maximum(total, 1), np.nan)


def _single(groups: Callable) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The statistic of one group (every item of a row), from its grouped form."""

    def compute(gold, metric) -> np.ndarray:
        g, m = _as_2d(gold), _as_2d(metric)
        n = np.broadcast_shapes(g.shape, m.shape)[1]
        return groups(g, np.broadcast_to(m, np.broadcast_shapes(g.shape, m.shape)), [(0, n)])[:, 0]

    return compute


def agreements(gold, metric) -> tuple[np.ndarray, int]:
    """Per row: pairs whose gold and metric differences have the same sign (ties agree only with ties), and the
    number of pairs (``stats.Agreement``), in O(n log n)."""
    g, m = np.broadcast_arrays(_as_2d(gold), _as_2d(metric))
    n = g.shape[1]
    con, _, _, _, tb = _group_pair_counts(g[:1] if np.all(g == g[:1]) else g, m, [(0, n)])
    return (con + tb)[:, 0], n * (n - 1) // 2


def accuracy(gold, metric) -> np.ndarray:
    """Pairwise accuracy of one group."""
    agree, pairs = agreements(gold, metric)
    return agree / pairs if pairs else np.full(len(agree), np.nan)


kendall_b = _single(_kendall_b_groups)
acc23 = _single(_acc23_groups)


# ---- tie calibration: KendallWithTiesOpt ------------------------------------------------------------------

# The most within-group pairs tie calibration enumerates (it is O(P log P) in them): 60 M pairs, about 3 GB.
MAX_CALIBRATION_PAIRS = 60_000_000


@dataclass(frozen=True)
class TieCalibration:
    value: float
    epsilon: float
    variant: str


def _calibration_value(correct: np.ndarray, pairs: np.ndarray, variant: str) -> np.ndarray:
    return correct / pairs if variant == "acc23" else (2 * correct - pairs) / pairs


@dataclass(frozen=True)
class GoldPairs:
    """The human side of tie calibration and of the pairs test, the same for every metric of a task: the groups
    with at least one pair, their pairs (``_pair_index``) and each pair's gold sign."""

    bounds: list[tuple[int, int]]
    i: np.ndarray
    j: np.ndarray
    label: np.ndarray
    per_group: np.ndarray  # pairs per group
    gold_sign: np.ndarray
    gold_tie: np.ndarray


def gold_pairs(gold, bounds: Sequence[tuple[int, int]] | None = None) -> GoldPairs:
    """The within-group pairs of ``gold`` over the groups ``bounds`` (default one), groups of fewer than two items
    left out; at most ``MAX_CALIBRATION_PAIRS`` of them."""
    g = np.asarray(gold, dtype=float)
    bounds = [(b, e) for b, e in (bounds or [(0, len(g))]) if e - b >= 2]
    pairs_total = sum((e - b) * (e - b - 1) // 2 for b, e in bounds)
    if pairs_total > MAX_CALIBRATION_PAIRS:
        raise ValueError(
            f"tie calibration over {pairs_total:,} pairs (more than {MAX_CALIBRATION_PAIRS:,}): "
            "group the items (average_by item) or use a statistic without calibration"
        )
    i, j, label = _pair_index(bounds)
    per_group = np.array([(e - b) * (e - b - 1) // 2 for b, e in bounds], dtype=np.int64)
    dg = g[j] - g[i]
    return GoldPairs(bounds, i, j, label, per_group, np.sign(dg), dg == 0)


def _correct_pairs(pairs: GoldPairs, m, epsilon: float) -> np.ndarray:
    """Per pair: the metric's sign, a tie when ``|Δm| <= epsilon``, equals the gold's sign."""
    dm = m[pairs.j] - m[pairs.i]
    sm = np.where(np.abs(dm) <= epsilon, 0.0, np.sign(dm))
    return sm == pairs.gold_sign


def tie_calibration(gold, metric, bounds: Sequence[tuple[int, int]] | None = None, variant: str = "acc23"):
    """mt-metrics-eval's ``KendallWithTiesOpt`` with ``sample_rate=1`` (``tau_optimization``): one threshold ε
    for every group, the one that maximises the mean over groups (with at least one pair) of acc23 (or τ_23),
    where a pair counts as a metric tie when ``|Δm| <= ε``. O(P log P) in the P within-group pairs: quadratic in
    the items of a group, so ungrouped it is bounded by ``MAX_CALIBRATION_PAIRS``. Several metrics against one
    gold: ``gold_pairs`` once, then ``calibrate`` each."""
    _check_variant(variant)
    return calibrate(gold_pairs(gold, bounds), metric, variant)


def _check_variant(variant: str) -> None:
    if variant not in ("acc23", "23"):
        raise ValueError("tie calibration applies to acc23 and 23 only")


def calibrate(pairs: GoldPairs, metric, variant: str = "acc23") -> TieCalibration:
    """``tie_calibration`` of one metric against the gold's pairs. The candidate thresholds are 0 and every
    pair's ``|Δm|``, visited in ascending order (pairs with equal differences in enumeration order, as its stable
    sort leaves them); the running mean is accumulated as the reference accumulates it (one subtraction and one
    addition per pair, in order, from Python's sum of the groups' starting values), so that among thresholds that
    tie in exact arithmetic the same one wins (``nanargmax``: the first)."""
    if not pairs.bounds:
        return TieCalibration(float("nan"), 0.0, variant)
    m = np.asarray(metric, dtype=float)
    dm = m[pairs.j] - m[pairs.i]
    diff = np.abs(dm)
    correct0 = np.sign(dm) == pairs.gold_sign  # a metric tie (sign 0) is right exactly when gold ties
    # Turning a pair into a metric tie: a gold-tied pair becomes right, a pair right and untied becomes wrong.
    change = pairs.gold_tie.astype(np.int64) - correct0
    start = np.bincount(pairs.label, weights=correct0, minlength=len(pairs.bounds)).astype(np.int64)
    order = _stable_argsort(diff)
    sorted_label, sorted_change = pairs.label[order], change[order]
    running = start[sorted_label] + _running_in_group(sorted_label, sorted_change, pairs.per_group)
    totals, total0 = _running_totals(
        running - sorted_change, running, pairs.per_group[sorted_label], start, pairs.per_group, variant
    )
    sorted_diff = diff[order]
    last_of_each = np.r_[sorted_diff[1:] != sorted_diff[:-1], True]
    thresholds = sorted_diff[last_of_each]
    taus = totals[last_of_each]
    if len(thresholds) == 0 or thresholds[0] != 0.0:
        thresholds = np.r_[0.0, thresholds]
        taus = np.r_[total0 / len(pairs.bounds), taus]
    best = int(np.nanargmax(taus))
    return TieCalibration(float(taus[best]), float(thresholds[best]), variant)


def _stable_argsort(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` (equal values in index order, NaNs last) from numpy's unstable sort,
    about twice as fast on floats: the indices of each run of equal values put in order by a second sort on
    (run, index), whose keys are unique."""
    order = np.argsort(values)
    ordered = values[order]
    new_run = np.empty(len(values), dtype=bool)
    new_run[:1] = True
    new_run[1:] = (ordered[1:] != ordered[:-1]) & ~(np.isnan(ordered[1:]) & np.isnan(ordered[:-1]))
    run = np.cumsum(new_run) - 1
    return order[np.argsort(run * len(values) + order)]


def _running_in_group(label: np.ndarray, steps: np.ndarray, per_group: np.ndarray) -> np.ndarray:
    """Each entry's cumulative sum of ``steps`` over the entries of its group up to itself, in the order given.
    The stable sort by group is a radix sort when the group numbers fit 16 bits (a task's few thousand items)."""
    key = label.astype(np.uint16) if len(per_group) <= np.iinfo(np.uint16).max else label
    by_group = np.argsort(key, kind="stable")
    cum = np.cumsum(steps[by_group])
    ends = np.cumsum(per_group)  # by group, each group's pairs in a run of per_group entries
    before_group = np.r_[0, cum[ends[:-1] - 1]]
    running = np.empty(len(label), dtype=np.int64)
    running[by_group] = cum - np.repeat(before_group, per_group)
    return running


def _running_totals(before, after, pairs_of, start, per_group, variant: str) -> tuple[np.ndarray, float]:
    """The mean over groups of the statistic after each step (a pair turned into a metric tie, in order), from
    each step's group count ``before`` and ``after`` it, accumulated in floating point as the reference
    accumulates it: from Python's sum of the groups' starting values, minus the group's old value and plus its
    new one per step. Returns the means and the starting sum."""
    total0 = sum(float(v) for v in _calibration_value(start, per_group, variant))
    steps = np.empty(2 * len(before) + 1)
    steps[0] = total0
    steps[1::2] = -_calibration_value(before, pairs_of, variant)
    steps[2::2] = _calibration_value(after, pairs_of, variant)
    return np.cumsum(steps)[2::2] / len(per_group), total0


def _calibrated_rows(gold_rows: np.ndarray, m: np.ndarray, bounds, variant: str) -> np.ndarray:
    """``tie_calibration``'s value of each row of ``m``; one gold row is paired once for all of them."""
    if gold_rows.shape[0] == 1:
        _check_variant(variant)
        pairs = gold_pairs(gold_rows[0], bounds)
        return np.array([calibrate(pairs, row, variant).value for row in m])
    g, m = np.broadcast_arrays(gold_rows, m)
    return np.array([tie_calibration(g[r], m[r], bounds, variant).value for r in range(m.shape[0])])


def _tie_calibrated_groups(variant: str) -> Callable:
    def groups(g, m, bounds) -> np.ndarray:
        return _calibrated_rows(g, m, bounds, variant)[:, None]  # one value: the calibration averages the groups

    return groups


@dataclass(frozen=True)
class Statistic:
    name: str
    label: str
    reference: str  # the mt-metrics-eval function it equals
    groups: Callable[[np.ndarray, np.ndarray, Sequence[tuple[int, int]]], np.ndarray]  # (R, n) x2 -> (R, G)
    pooled: bool = False  # over groups: pairs summed (global accuracy) rather than a mean of group values
    pairwise: bool = False  # counts pairs: O(n log n) per resample, the command's (the pages offer the others)
    calibrated: str | None = None  # the tie-calibrated Kendall variant (KendallWithTiesOpt does its own averaging)
    cost: str = ""  # what it costs, per resample (docs/metaeval.md)
    by_system: bool = False  # PCE: system-major segment scores, reshaped by the number of systems

    def compute(self, gold, metric) -> np.ndarray:
        """The statistic of one group: gold and metric ``(R, n)`` (gold may be ``(1, n)``) -> R values."""
        g, m = _as_2d(gold), _as_2d(metric)
        m = np.broadcast_to(m, np.broadcast_shapes(g.shape, m.shape))
        return self.groups(g, np.ascontiguousarray(m), [(0, m.shape[1])])[:, 0]


STATISTICS: dict[str, Statistic] = {
    s.name: s
    for s in (
        Statistic(
            "pearson", "Pearson r", "stats.Correlation.Pearson (scipy.stats.pearsonr)", _pearson_groups, cost="O(n)"
        ),
        Statistic(
            "spearman",
            "Spearman ρ",
            "stats.Correlation.Spearman (scipy.stats.spearmanr)",
            _spearman_groups,
            cost="O(n log n)",
        ),
        Statistic(
            "kendall-b",
            "Kendall τ_b",
            "stats.Correlation.Kendall(variant='b')",
            _kendall_b_groups,
            pairwise=True,
            cost="O(n log n)",
        ),
        Statistic(
            "accuracy",
            "pairwise accuracy",
            "stats.Agreement; data.CompareMetricsWithGlobalAccuracy",
            _acc23_groups,
            pooled=True,
            pairwise=True,
            cost="O(n log n)",
        ),
        Statistic(
            "acc23",
            "acc23 (pairwise accuracy with ties, ε = 0)",
            "stats.KendallVariants(variant='acc23')",
            _acc23_groups,
            pairwise=True,
            cost="O(n log n)",
        ),
        Statistic(
            "acc23-tc",
            "acc23, tie-calibrated",
            "stats.KendallWithTiesOpt(variant='acc23', sample_rate=1)",
            _tie_calibrated_groups("acc23"),
            pairwise=True,
            calibrated="acc23",
            cost="O(P log P), P the pairs within groups: O(s² log s) per group of s items",
        ),
        Statistic(
            "tau23-tc",
            "τ_23, tie-calibrated",
            "stats.KendallWithTiesOpt(variant='23', sample_rate=1)",
            _tie_calibrated_groups("23"),
            pairwise=True,
            calibrated="23",
            cost="O(P log P), P the pairs within groups: O(s² log s) per group of s items",
        ),
        Statistic(
            "pce",
            "soft pairwise accuracy (1 − PCE)",
            "stats.PairwiseConfidenceError; data.CompareMetricsWithPairwiseConfidenceError",
            None,
            by_system=True,
            cost="O(p·n), p = 1,000 permutations of the n segments (a matrix product)",
        ),
    )
}

AVERAGE_BY = ("none", "item", "sys")
PERMUTATION_TESTS = ("scores", "pairs")


def get_statistic(name: str) -> Statistic:
    try:
        return STATISTICS[name]
    except KeyError:
        raise ValueError(f"unknown statistic {name!r}; choose one of {', '.join(STATISTICS)}") from None


# ---- grouping: mt-metrics-eval's average_by ---------------------------------------------------------------


@dataclass(frozen=True)
class Grouped:
    """Scores regrouped for ``average_by``: flat vectors whose consecutive ``bounds`` are the groups."""

    gold: np.ndarray
    metrics: dict[str, np.ndarray]
    bounds: list[tuple[int, int]]
    average_by: str


def group_scores(gold, metrics: dict[str, Sequence], average_by: str = "none") -> Grouped:
    """mt-metrics-eval's ``_Reshape`` + ``_ReshapeAndFilter``: gold ``(systems, items)`` with None or NaN where
    there is no human score, metrics ``{name: (systems, items)}``. ``none``: one group, system by system;
    ``sys``: a group per system (its items); ``item``: a group per item (its systems, in the order given).
    Within a group, items without a human score are dropped, and a group left empty is dropped."""
    if average_by not in AVERAGE_BY:
        raise ValueError(f"average_by {average_by!r}: choose one of {', '.join(AVERAGE_BY)}")
    g = np.array([[np.nan if v is None else v for v in row] for row in gold], dtype=float)
    if g.ndim != 2:
        raise ValueError("gold scores must be a (systems, items) matrix")
    scores = {}
    for name, values in metrics.items():
        a = np.asarray(values, dtype=float)
        if a.shape != g.shape:
            raise ValueError(f"metric {name}: scores shaped {a.shape} for gold shaped {g.shape}")
        if np.isnan(a).any():
            raise ValueError(f"metric {name}: a missing metric score (only human scores may be missing)")
        scores[name] = a

    def rows(a: np.ndarray) -> np.ndarray:
        return a.reshape(1, -1) if average_by == "none" else a if average_by == "sys" else a.T

    keep = ~np.isnan(rows(g))
    bounds, start = [], 0
    for count in keep.sum(axis=1):
        if count:
            bounds.append((start, start + int(count)))
            start += int(count)
    return Grouped(rows(g)[keep], {n: rows(a)[keep] for n, a in scores.items()}, bounds, average_by)


def group_values(statistic: Statistic, gold, metric, bounds: Sequence[tuple[int, int]]) -> np.ndarray:
    """``(R, G)``: the statistic of each group of each row (NaN where undefined)."""
    g, m = _as_2d(gold), _as_2d(metric)
    m = np.ascontiguousarray(np.broadcast_to(m, np.broadcast_shapes(g.shape, m.shape)))
    bounds = list(bounds)
    if _contiguous(bounds, m.shape[1]):
        return statistic.groups(g, m, bounds)
    return np.concatenate([statistic.groups(g[:, b:e], m[:, b:e], [(0, e - b)]) for b, e in bounds], axis=1)


def grouped(
    statistic: Statistic,
    gold,
    metric,
    bounds: Sequence[tuple[int, int]],
    replace_nans_with_zeros: bool = False,
    systems: int | None = None,
) -> np.ndarray:
    """The statistic over consecutive groups ``bounds`` of the items, per row: pooled accuracy sums agreements
    and pairs over groups (``CompareMetricsWithGlobalAccuracy``); a tie-calibrated statistic is
    ``KendallWithTiesOpt`` over the groups; every other statistic is the mean of the groups' values
    (``AverageCorrelation`` / ``PermutationSigDiff``'s ``_Corr``): a group of fewer than two items is left out,
    a NaN value (a constant vector) is left out, or counted as 0 with ``replace_nans_with_zeros``; 0 when no
    group is left."""
    gold_rows, m = _as_2d(gold), _as_2d(metric)
    if gold_rows.shape[0] != 1 and gold_rows.shape[0] == m.shape[0] and np.all(gold_rows == gold_rows[:1]):
        gold_rows = gold_rows[:1]  # one gold for every row: the pair counts take its signs once
    g, m = np.broadcast_arrays(gold_rows, m)
    bounds = list(bounds)
    if statistic.by_system:
        return _pce_rows(g[0], m, systems)
    if statistic.pooled:
        counts = _group_pair_counts(gold_rows, np.ascontiguousarray(m), bounds)
        agree = (counts[0] + counts[4]).sum(axis=1)
        pairs = sum((e - b) * (e - b - 1) // 2 for b, e in bounds)
        return agree / pairs if pairs else np.zeros(m.shape[0])
    if statistic.calibrated:
        return _calibrated_rows(gold_rows, m, bounds, statistic.calibrated)
    values = np.ascontiguousarray(group_values(statistic, gold_rows, m, bounds))
    sized = np.array([e - b >= 2 for b, e in bounds])[None, :]
    present = ~np.isnan(values) & sized
    if replace_nans_with_zeros:
        counted = np.broadcast_to(sized, values.shape)
        values = np.where(present, values, 0.0)
    else:
        counted = present
        values = np.where(present, values, 0.0)
    count = counted.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, values.sum(axis=1) / np.maximum(count, 1), 0.0)


def average_correlation(
    statistic_name: str,
    gold,
    metric,
    bounds: Sequence[tuple[int, int]] | None = None,
    *,
    replace_nans_with_zeros: bool = False,
    systems: int | None = None,
) -> float:
    """The value ``data.CompareMetrics`` ranks a metric by (``AverageCorrelation``; ``KendallWithTiesOpt`` for a
    tie-calibrated statistic), over the groups ``bounds`` (default: one). ``pce`` takes system-major segment
    scores of ``systems`` systems (NaN gold: unrated, dropped before the reshape, as
    ``PairwiseConfidenceError`` drops them)."""
    statistic = get_statistic(statistic_name)
    g, m = np.asarray(gold, dtype=float), np.asarray(metric, dtype=float)
    if statistic.by_system:
        g, m, systems = _by_system(g, {"metric": m}, bounds, systems)
        m = m["metric"]
    return float(grouped(statistic, g, m, bounds or [(0, len(g))], replace_nans_with_zeros, systems)[0])


def _by_system(gold: np.ndarray, metrics: dict[str, np.ndarray], bounds, systems: int | None):
    """PCE's inputs: the rated entries of system-major vectors, which must still split evenly by system."""
    if not systems or systems < 2:
        raise ValueError("pce needs the number of systems (systems=), at least two")
    if bounds and len(list(bounds)) > 1:
        raise ValueError("pce takes one group (average_by none)")
    rated = ~np.isnan(gold)
    if rated.sum() % systems:
        raise ValueError(f"pce: {int(rated.sum())} rated segment scores do not split evenly over {systems} systems")
    return gold[rated], {name: v[rated] for name, v in metrics.items()}, systems


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


@functools.lru_cache(maxsize=4)
def _pce_signs(permutations: int, segments: int, seed: int) -> np.ndarray:
    signs = np.random.default_rng(seed).random(size=(permutations, segments), dtype=np.float32)
    np.rint(signs, out=signs, casting="same_kind")
    signs *= 2.0
    signs -= 1.0
    signs.flags.writeable = False
    return signs


def _p_value_rows(scores: np.ndarray, permutations: int = 1000, seed: int = 4) -> np.ndarray:
    """``pce.compute_pairwise_p_values`` of each ``(systems, segments)`` matrix of ``scores`` ``(R, S, N)``: the
    upper triangle, row-major, ``(R, S(S-1)/2)``. One batched float32 product, each matrix multiplied as the
    reference multiplies it; then per matrix, every system pair's null differences at once, from its null sums
    laid out system by system (a row's few hundred kB stay in cache, where a pair at a time across all rows
    reads the whole block twice per pair)."""
    x = np.ascontiguousarray(scores, dtype=np.float32)
    signs = _pce_signs(permutations, x.shape[2], seed)
    totals = np.sum(x, axis=2)  # (R, S)
    partial = np.matmul(signs, x.transpose(0, 2, 1))  # (R, permutations, S)
    by_system = np.ascontiguousarray(partial.transpose(0, 2, 1))  # (R, S, permutations)
    i, j = np.triu_indices(x.shape[1], k=1)
    observed = totals[:, i] - totals[:, j]
    out = np.empty((x.shape[0], len(i)))
    for r, null in enumerate(by_system):
        out[r] = np.count_nonzero(null[i] - null[j] >= observed[r][:, None], axis=1) / permutations
    return out


def _human_p_values(gold: np.ndarray, systems: int | None) -> np.ndarray:
    """The human side of PCE: the gold's pairwise p-values, the same for every metric of a task."""
    if not systems:
        raise ValueError("pce needs the number of systems (systems=)")
    return _p_value_rows(gold.reshape(1, systems, -1))


def _pce_rows(gold: np.ndarray, metric: np.ndarray, systems: int | None, human: np.ndarray | None = None) -> np.ndarray:
    """1 − PCE of each row of ``metric`` (rated entries, system-major) against ``gold`` (``pce.py``); ``human``:
    the gold's ``_human_p_values`` when the caller has them already."""
    human = _human_p_values(gold, systems) if human is None else human
    p = _p_value_rows(metric.reshape(metric.shape[0], systems, -1))
    return 1.0 - _row_means(np.abs(human - p))


# ---- permutation significance and WMT's ranked clusters ---------------------------------------------------


_TESTS = {
    "scores": "paired permutation (PERM-BOTH) of z-scored metric scores, mt-metrics-eval PermutationSigDiff",
    "pairs": "paired permutation of pairwise comparisons under each metric's calibrated tie threshold, "
    "mt-metrics-eval PairwisePermutationSigDiff",
}


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
    test: str = "scores"
    average_by: str | None = None  # what the caller grouped by (a label: the groups are the bounds)
    replace_nans_with_zeros: bool = False
    epsilons: dict[str, float] | None = None  # the pairs test: each metric's calibrated tie threshold

    def as_dict(self) -> dict:
        n = len(self.metrics)
        result = {
            "statistic": self.statistic,
            "test": _TESTS[self.test],
            "parameters": {
                "resamples": self.resamples,
                "seed": self.seed,
                "block_size": self.block_size,
                "early_min": self.early_min,
                "early_max": self.early_max,
                "alpha": self.alpha,
                "perm_test": self.test,
                "average_by": self.average_by,
                "replace_nans_with_zeros": self.replace_nans_with_zeros,
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
        if self.epsilons is not None:
            for row in result["ranking"]:
                row["epsilon"] = self.epsilons[row["metric"]]
        return result


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
    replace_nans_with_zeros: bool = False,
    systems: int | None = None,
) -> tuple[float, int]:
    """p-value for "``better`` is not better than ``worse``": the share of draws, each swapping the two metrics'
    z-scored scores item by item with probability ½, whose difference is at least the observed one. Drawn a
    block at a time (the same stream as one draw per resample), stopping early at a block boundary when p is
    below ``early_min`` or above ``early_max``. Memory: at most ``_DRAW_BLOCK`` draws at a time, whatever the
    number of resamples."""
    a, b = _zscore(better), _zscore(worse)
    observed = grouped(statistic, gold, a, bounds, replace_nans_with_zeros, systems) - grouped(
        statistic, gold, b, bounds, replace_nans_with_zeros, systems
    )
    rows_at_once = max(1, _DRAW_BLOCK // max(len(a), 1))  # bounds memory; row by row, the stream is the same
    large, used = 0, 0
    while used < resamples:
        size = min(block_size, resamples - used)
        for start in range(0, size, rows_at_once):
            w = rng.random_sample((min(rows_at_once, size - start), len(a))) > 0.5  # = binomial(1, 0.5)
            hybrid_worse = np.where(w, b, a)  # the reference's m1 = w·worse + (1 − w)·better
            hybrid_better = np.where(w, a, b)
            diff = grouped(statistic, gold, hybrid_better, bounds, replace_nans_with_zeros, systems) - grouped(
                statistic, gold, hybrid_worse, bounds, replace_nans_with_zeros, systems
            )
            large += int(np.sum(diff >= observed[0]))
            del w, hybrid_worse, hybrid_better, diff  # one block's arrays alive at a time: memory flat in R
        used += size
        if used % block_size == 0:
            p = large / used
            if p < early_min or p > early_max:
                break
    return large / used, used


def _row_means(values: np.ndarray) -> np.ndarray:
    """Each row's mean summed as numpy sums one row on its own (pairwise): a fancy-indexed array can be laid out
    column-first, and a mean across it then sums in another order, which moves a difference that ties the
    observed one in exact arithmetic by an ulp."""
    return np.mean(np.ascontiguousarray(values), axis=1)


@dataclass(frozen=True)
class PairsLayout:
    """What the pairs test needs of the gold, the same for every pair of metrics of a task: the within-group pairs
    and where each pair's coin lies in a draw. The reference draws an n × n block of coins per group of n items
    (every group, in order, even those of one item) and reads pair (i, j)'s at row i, column j."""

    pairs: GoldPairs
    position: np.ndarray
    per_draw: int
    variant: str


def pairs_layout(pairs: GoldPairs, bounds: Sequence[tuple[int, int]], variant: str) -> PairsLayout:
    """The pairs test's layout for the gold's ``pairs`` over every group of ``bounds`` (those of one item too)."""
    sizes = np.array([e - b for b, e in bounds], dtype=np.int64)
    offsets = np.r_[0, np.cumsum(sizes * sizes)]
    if not len(pairs.label):
        return PairsLayout(pairs, pairs.label, int(offsets[-1]), variant)
    paired = np.array([k for k, (b, e) in enumerate(bounds) if e - b >= 2], dtype=np.int64)
    group_index = paired[pairs.label]
    starts = np.array([b for b, _ in pairs.bounds], dtype=np.int64)[pairs.label]
    position = offsets[group_index] + (pairs.i - starts) * sizes[group_index] + (pairs.j - starts)
    return PairsLayout(pairs, position, int(offsets[-1]), variant)


def pairs_p_value(
    layout: PairsLayout,
    better: np.ndarray,
    worse: np.ndarray,
    rng: np.random.RandomState,
    resamples: int,
    block_size: int,
    early_min: float,
    early_max: float,
    epsilons: tuple[float, float],
) -> tuple[float, int]:
    """mt-metrics-eval's ``PairwisePermutationSigDiff``: each metric's pairs are judged once, under its own
    calibrated tie threshold (``epsilons`` = (better's, worse's), ``tie_calibration`` on the data); a draw
    gives every within-group pair a coin that says which metric's judgement each hybrid takes, and the
    p-value is the share of draws whose hybrid difference (mean over groups of acc23 or τ_23) is at least
    the observed one. The coins are the reference's: per resample and group of n items, an n × n block of
    ``binomial(1, ½)`` draws (of which the upper triangle is used), from the legacy stream. Only the pairs the
    two metrics judge differently change a hybrid, so a draw costs its n² coins plus those pairs."""
    pairs, variant = layout.pairs, layout.variant
    right_better = _correct_pairs(pairs, better, epsilons[0])
    right_worse = _correct_pairs(pairs, worse, epsilons[1])
    groups = len(pairs.bounds)
    count_better = np.bincount(pairs.label, weights=right_better, minlength=groups).astype(np.int64)
    count_worse = np.bincount(pairs.label, weights=right_worse, minlength=groups).astype(np.int64)
    observed = np.mean(_calibration_value(count_better, pairs.per_group, variant)) - np.mean(
        _calibration_value(count_worse, pairs.per_group, variant)
    )
    differ = np.flatnonzero(right_better != right_worse)
    d = right_better[differ].astype(np.int64) - right_worse[differ].astype(np.int64)
    edges = np.searchsorted(pairs.label[differ], np.arange(groups + 1))  # the differing pairs of each group

    def differences(coins: np.ndarray) -> np.ndarray:
        gained = np.cumsum(np.where(coins, d, 0), axis=1)
        gained = np.concatenate([np.zeros((len(coins), 1), dtype=np.int64), gained], axis=1)
        # the hybrid that takes the better metric's judgement where the coin says 1, and the other
        hybrid_better = count_worse + gained[:, edges[1:]] - gained[:, edges[:-1]]
        hybrid_worse = count_better + count_worse - hybrid_better
        return _row_means(_calibration_value(hybrid_better, pairs.per_group, variant)) - _row_means(
            _calibration_value(hybrid_worse, pairs.per_group, variant)
        )

    draws = _CoinDraws(rng, layout.per_draw, layout.position[differ], resamples, block_size, early_min, early_max)
    return draws.p_value(differences, observed)


@dataclass(frozen=True)
class _CoinDraws:
    """The pairs test's draws: ``per_draw`` coins a resample from the legacy stream, of which those at
    ``position`` are read; drawn a block at a time (at most ``_DRAW_BLOCK`` numbers held), stopping early as
    the reference does: at a block boundary, only on a draw whose difference was at least the observed one, when
    p is below ``early_min`` or above ``early_max``."""

    rng: np.random.RandomState
    per_draw: int
    position: np.ndarray
    resamples: int
    block_size: int
    early_min: float
    early_max: float

    def p_value(self, differences: Callable[[np.ndarray], np.ndarray], observed: float) -> tuple[float, int]:
        rows_at_once = max(1, _DRAW_BLOCK // max(self.per_draw, 1))
        large, used = 0, 0
        while used < self.resamples:
            size = min(self.block_size, self.resamples - used)
            last_large = False
            for start in range(0, size, rows_at_once):
                draws = self.rng.random_sample((min(rows_at_once, size - start), self.per_draw))
                hits = differences(draws[:, self.position] > 0.5) >= observed
                large += int(np.sum(hits))
                last_large = bool(hits[-1])
                del draws, hits  # one block's arrays alive at a time: memory flat in the resamples
            used += size
            if used % self.block_size == 0 and last_large:
                p = large / used
                if p < self.early_min or p > self.early_max:
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


def _metric_values(
    statistic: Statistic, g: np.ndarray, scores: dict[str, np.ndarray], bounds, replace_nans_with_zeros, systems
):
    """Each metric's value against one gold, the human side computed once (tie calibration's pairs, PCE's
    p-values): (values, each metric's calibrated threshold or None, the gold's pairs or None)."""
    if statistic.calibrated:
        pairs = gold_pairs(g, bounds)
        calibrations = {name: calibrate(pairs, v, statistic.calibrated) for name, v in scores.items()}
        return {n: c.value for n, c in calibrations.items()}, {n: c.epsilon for n, c in calibrations.items()}, pairs
    if statistic.by_system:
        human = _human_p_values(g, systems)
        return {name: float(_pce_rows(g, _as_2d(v), systems, human)[0]) for name, v in scores.items()}, None, None
    values = {
        name: float(grouped(statistic, g, v, bounds, replace_nans_with_zeros, systems)[0]) for name, v in scores.items()
    }
    return values, None, None


def average_correlations(
    statistic_name: str,
    gold,
    metrics: dict[str, Sequence[float]],
    bounds: Sequence[tuple[int, int]] | None = None,
    *,
    replace_nans_with_zeros: bool = False,
    systems: int | None = None,
) -> dict[str, float]:
    """``average_correlation`` of each metric against the same gold, the gold's side computed once."""
    statistic = get_statistic(statistic_name)
    g = np.asarray(gold, dtype=float)
    scores = {name: np.asarray(v, dtype=float) for name, v in metrics.items()}
    if statistic.by_system:
        g, scores, systems = _by_system(g, scores, bounds, systems)
    return _metric_values(statistic, g, scores, bounds or [(0, len(g))], replace_nans_with_zeros, systems)[0]


def _significance_inputs(statistic: Statistic, test: str | None, gold, metrics, bounds, systems, draws: dict, alpha):
    """``permutation_significance``'s inputs checked and as arrays: (test, gold, metric vectors, groups, systems),
    PCE's rated entries only."""
    test = test or ("pairs" if statistic.calibrated else "scores")
    if test not in PERMUTATION_TESTS:
        raise ValueError(f"permutation test {test!r}: choose one of {', '.join(PERMUTATION_TESTS)}")
    if test == "pairs" and not statistic.calibrated:
        raise ValueError("the pairs test compares tie-calibrated statistics (acc23-tc, tau23-tc)")
    g = np.asarray(gold, dtype=float)
    bounds = list(bounds) if bounds else [(0, len(g))]
    if not metrics:
        raise ValueError("no metrics to compare")
    scores = {name: np.asarray(v, dtype=float) for name, v in metrics.items()}
    for name, v in scores.items():
        if v.shape != g.shape:
            raise ValueError(f"metric {name}: {v.shape[0]} scores for {g.shape[0]} human scores")
    if draws["resamples"] < 1 or draws["block_size"] < 1 or not 0 < alpha < 1:
        raise ValueError("resamples and block size must be positive and alpha in (0, 1)")
    if statistic.by_system:
        g, scores, systems = _by_system(g, scores, bounds if bounds != [(0, len(g))] else None, systems)
        bounds = [(0, len(g))]
    return test, g, scores, bounds, systems


def _pair_test(
    test: str, statistic: Statistic, g, scores, bounds, rng, draws: dict, calibration, options: dict
) -> Callable[[str, str], tuple[float, int]]:
    """The p-value (and draws used) of "metric a is not better than metric b" by the test asked for, every call
    drawing from ``rng``. ``calibration``: the pairs test's (each metric's threshold, the gold's pairs)."""
    if test == "pairs":
        epsilons, pairs = calibration
        layout = pairs_layout(pairs, bounds, statistic.calibrated)

        def p_value(a: str, b: str) -> tuple[float, int]:
            return pairs_p_value(layout, scores[a], scores[b], rng, epsilons=(epsilons[a], epsilons[b]), **draws)

        return p_value

    def p_value(a: str, b: str) -> tuple[float, int]:
        return permutation_p_value(statistic, g, scores[a], scores[b], bounds, rng, **draws, **options)

    return p_value


def permutation_significance(
    statistic_name: str,
    gold,
    metrics: dict[str, Sequence[float]],
    bounds: Sequence[tuple[int, int]] | None = None,
    *,
    resamples: int = 1000,
    seed: int | None = 0,
    rng: np.random.RandomState | None = None,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
    alpha: float = 0.05,
    replace_nans_with_zeros: bool = False,
    test: str | None = None,
    average_by: str | None = None,
    systems: int | None = None,
) -> Significance:
    """``data.CompareMetrics``: every pair of metrics compared by a permutation test (one shared draw stream,
    pairs in the order ``data.ComputeSigMatrix`` takes them) and ranked into clusters. Metrics are sorted by
    decreasing value, name breaking ties. ``bounds``: consecutive item groups (language pairs, or the groups
    of ``group_scores``); default one group. ``test``: ``scores`` (``PermutationSigDiff``) or ``pairs``
    (``PairwisePermutationSigDiff``, tie-calibrated statistics only); default ``pairs`` for those, else
    ``scores``. ``average_by`` only labels the result. ``pce`` (``CompareMetricsWithPairwiseConfidenceError``)
    takes system-major segment scores of ``systems`` systems, NaN gold dropped first. The draws come from
    ``RandomState(seed)``, or from ``rng`` when given (a stream shared with other tests, as ``TaskSet.Run``
    shares numpy's global one; ``seed`` then only labels the result)."""
    statistic = get_statistic(statistic_name)
    draws = {"resamples": resamples, "block_size": block_size, "early_min": early_min, "early_max": early_max}
    test, g, scores, bounds, systems = _significance_inputs(
        statistic, test, gold, metrics, bounds, systems, draws, alpha
    )
    values, epsilons, pairs = _metric_values(statistic, g, scores, bounds, replace_nans_with_zeros, systems)
    order = sorted(values, key=lambda name: (-values[name], name))
    rng = np.random.RandomState(seed) if rng is None else rng
    options = {"replace_nans_with_zeros": replace_nans_with_zeros, "systems": systems}
    p_value = _pair_test(test, statistic, g, scores, bounds, rng, draws, (epsilons, pairs), options)
    p, used = _significance_matrix(order, p_value)
    return Significance(
        statistic.name,
        order,
        [values[m] for m in order],
        p,
        ranked_clusters(p, alpha),
        resamples_used=used,
        seed=seed,
        alpha=alpha,
        test=test,
        average_by=average_by,
        replace_nans_with_zeros=replace_nans_with_zeros,
        epsilons=epsilons,
        **draws,
    )


def _significance_matrix(order: list[str], p_value: Callable[[str, str], tuple[float, int]]):
    """``data.ComputeSigMatrix``: the p-value of every pair of metrics (row i better than column j > i), in row
    order, one draw stream for all; and the draws each used."""
    n = len(order)
    p, used = np.zeros((n, n)), np.zeros((n, n), dtype=int)
    for i in range(n):
        for j in range(i + 1, n):
            p[i, j], used[i, j] = p_value(order[i], order[j])
    return p, used


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
        """The estimate and its bounds, then how they were drawn under ``parameters``."""
        figures = asdict(self)
        drawn = {name: figures.pop(name) for name in ("resamples", "seed", "alpha")}
        return {**figures, "parameters": {**drawn, "method": "percentile bootstrap over segments"}}


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
