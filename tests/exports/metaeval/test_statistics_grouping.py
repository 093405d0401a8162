"""Edges of the grouped statistics that the mt-metrics-eval fixtures cannot show (the reference raises an error on
them) and the bounds on memory: values against scipy, streams against the unbounded computation."""

import numpy as np
import pytest
from scipy import stats

from exports.metaeval import statistics


def test_a_group_of_one_item_is_left_out_both_ways():
    """``AverageCorrelation`` skips a row of fewer than two scored items, whatever ``replace_nans_with_zeros``."""
    gold = [[1.0, 2.0, None], [2.0, 1.0, 5.0], [3.0, 3.0, None]]  # item 2 has one scored system
    metric = [[1.0, 1.5, 0.0], [2.5, 1.0, 9.0], [2.9, 3.5, 1.0]]
    grouped = statistics.group_scores(gold, {"m": metric}, "item")
    assert [e - b for b, e in grouped.bounds] == [3, 3, 1]
    expected = np.mean(
        [stats.pearsonr([1, 2, 3], [1.0, 2.5, 2.9]).statistic, stats.pearsonr([2, 1, 3], [1.5, 1.0, 3.5]).statistic]
    )
    for zeros in (False, True):
        value = statistics.average_correlation(
            "pearson", grouped.gold, grouped.metrics["m"], grouped.bounds, replace_nans_with_zeros=zeros
        )
        assert value == pytest.approx(expected, abs=1e-12)


def test_group_scores_orders_items_as_mt_metrics_eval_reshapes_them():
    gold = [[1.0, None, 3.0], [4.0, 5.0, 6.0]]
    metric = [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
    expected = {
        "none": ([1, 3, 4, 5, 6], [(0, 5)]),
        "sys": ([1, 3, 4, 5, 6], [(0, 2), (2, 5)]),
        "item": ([1, 4, 5, 3, 6], [(0, 2), (2, 3), (3, 5)]),
    }
    for average_by, (flat, bounds) in expected.items():
        grouped = statistics.group_scores(gold, {"m": metric}, average_by)
        assert grouped.gold.tolist() == flat and grouped.bounds == bounds
        assert grouped.metrics["m"].tolist() == pytest.approx([v / 10 for v in flat])
    with pytest.raises(ValueError, match="average_by"):
        statistics.group_scores(gold, {"m": metric}, "doc")
    with pytest.raises(ValueError, match="missing metric score"):
        statistics.group_scores(gold, {"m": [[0.1, None, 0.3], [0.4, 0.5, 0.6]]}, "none")


def test_kendall_counts_equal_scipy_on_ties():
    rng = np.random.default_rng(3)
    gold = rng.integers(0, 5, 3000).astype(float)
    metric = np.round(gold + rng.normal(0, 2, 3000))
    con, dis, tie_gold, tie_metric, tie_both = statistics.kendall_counts(gold, metric)
    assert con + dis + tie_gold + tie_metric + tie_both == 3000 * 2999 // 2
    tau = (con - dis) / np.sqrt((con + dis + tie_metric) * (con + dis + tie_gold))
    assert tau == pytest.approx(stats.kendalltau(gold, metric).statistic, abs=1e-12)
    x, y = gold[:400], metric[:400]
    i, j = np.triu_indices(400, 1)
    sg, sm = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])  # every pair, as a check of the counts
    assert statistics.kendall_counts(x, y) == (
        int(np.sum(sg * sm > 0)),
        int(np.sum(sg * sm < 0)),
        int(np.sum((sg == 0) & (sm != 0))),
        int(np.sum((sm == 0) & (sg != 0))),
        int(np.sum((sg == 0) & (sm == 0))),
    )


def test_ungrouped_tie_calibration_is_bounded(monkeypatch):
    monkeypatch.setattr(statistics, "MAX_CALIBRATION_PAIRS", 1000)
    with pytest.raises(ValueError, match="average_by item"):
        statistics.tie_calibration(np.arange(50.0), np.arange(50.0))
    assert statistics.tie_calibration(np.arange(50.0), np.arange(50.0), [(0, 25), (25, 50)]).value == 1.0


def test_pairs_test_draws_a_few_rows_at_a_time_from_the_same_stream(monkeypatch):
    rng = np.random.default_rng(5)
    gold = np.tile([0.0, 1.0, 1.0, 2.0, 3.0, 5.0], 30)
    metrics = {m: np.round(gold + rng.normal(0, s, len(gold)), 1) for m, s in (("a", 1.0), ("b", 1.3), ("c", 3.0))}
    bounds = [(b, b + 6) for b in range(0, len(gold), 6)]

    def run():
        return statistics.permutation_significance("acc23-tc", gold, metrics, bounds, resamples=300, seed=2).p_values

    whole = run()
    monkeypatch.setattr(statistics, "_DRAW_BLOCK", 7 * 36 * 30)  # 7 resamples of 30 groups of 6 at a time
    np.testing.assert_array_equal(run(), whole)
    assert np.any((whole > 0) & (whole < 1))


def test_stable_argsort_is_numpys_stable_sort():
    """Equal values in index order, NaNs last: the order the tie calibration visits its thresholds in."""
    rng = np.random.default_rng(7)
    for size in (0, 1, 2, 50, 3000):
        values = np.abs(np.round(rng.normal(size=size), 1))
        values[rng.random(size) < 0.1] = np.nan
        values[rng.random(size) < 0.1] = np.inf
        np.testing.assert_array_equal(statistics._stable_argsort(values), np.argsort(values, kind="stable"))


def test_pair_index_lists_each_groups_pairs_in_order():
    sizes = [3, 0, 1, 5, 2, 3, 7, 5]
    starts = np.r_[0, np.cumsum(sizes)]
    bounds = [(int(b), int(b + s)) for b, s in zip(starts, sizes)][::-1][1:]  # out of order, one left out
    i, j, label = statistics._pair_index(bounds)
    expected = [(b + x, b + y, k) for k, (b, e) in enumerate(bounds) for x in range(e - b) for y in range(x + 1, e - b)]
    assert list(zip(i.tolist(), j.tolist(), label.tolist())) == expected


@pytest.mark.parametrize("name", ["acc23-tc", "tau23-tc", "pearson", "pce"])
def test_a_tasks_values_equal_each_metrics_own(name):
    """``average_correlations`` pairs the gold (or computes PCE's human p-values) once for every metric: the
    values are those of ``average_correlation`` one metric at a time, to the bit."""
    rng = np.random.default_rng(11)
    gold = np.round(rng.normal(size=(6, 40)) * 2) / 2
    metrics = {m: np.round(gold * w + rng.normal(size=gold.shape), 1) for m, w in (("a", 1.0), ("b", 0.3))}
    if name == "pce":  # system-major, every segment rated
        flat, vectors, bounds, options = gold.ravel(), {m: v.ravel() for m, v in metrics.items()}, None, {"systems": 6}
    else:
        gold[2, 5] = gold[4, 7] = np.nan  # two unrated segments
        data = statistics.group_scores(gold, metrics, "item")
        flat, vectors, bounds, options = data.gold, data.metrics, data.bounds, {}
    values = statistics.average_correlations(name, flat, vectors, bounds, **options)
    assert values == {m: statistics.average_correlation(name, flat, v, bounds, **options) for m, v in vectors.items()}


def test_a_shared_stream_gives_a_seeds_draws():
    """``rng``: the tests draw from the caller's stream (a task set's, one for all its tasks), as from ``seed``."""
    rng = np.random.default_rng(5)
    gold = np.tile([0.0, 1.0, 1.0, 2.0, 3.0, 5.0], 30)
    metrics = {m: np.round(gold + rng.normal(0, s, len(gold)), 1) for m, s in (("a", 1.0), ("b", 1.3), ("c", 3.0))}
    bounds = [(b, b + 6) for b in range(0, len(gold), 6)]
    seeded = statistics.permutation_significance("acc23-tc", gold, metrics, bounds, resamples=300, seed=2)
    stream = np.random.RandomState(2)
    shared = statistics.permutation_significance(
        "acc23-tc", gold, metrics, bounds, resamples=300, rng=stream, seed=None
    )
    np.testing.assert_array_equal(shared.p_values, seeded.p_values)
    assert shared.seed is None and np.any((shared.p_values > 0) & (shared.p_values < 1))
    assert stream.random_sample() != np.random.RandomState(2).random_sample()  # consumed: the next task goes on
