"""The pure statistics against published values, independent implementations and hand computations."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from annotation.agreement.domain import statistics as ag

TOL = 1e-9

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", reliability data with missing values:
# 4 observers × 12 units. Published: nominal .743, ordinal .815, interval .849, ratio .797.
K_DATA = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def reference_alpha(data, level):
    """Independent implementation of α from the coincidence matrix (Krippendorff 2011, §§A–D)."""
    values = sorted({x for row in data for x in row if x is not None})
    idx = {v: i for i, v in enumerate(values)}
    k = len(values)
    o = np.zeros((k, k))
    for u in range(len(data[0])):
        col = [row[u] for row in data if row[u] is not None]
        m = len(col)
        if m < 2:
            continue
        for i in range(m):
            for j in range(m):
                if i != j:
                    o[idx[col[i]], idx[col[j]]] += 1.0 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    delta = np.zeros((k, k))
    for c in range(k):
        for d in range(k):
            vc, vd = values[c], values[d]
            if level == "nominal":
                delta[c, d] = 0.0 if c == d else 1.0
            elif level == "interval":
                delta[c, d] = (vc - vd) ** 2
            elif level == "ratio":
                delta[c, d] = ((vc - vd) / (vc + vd)) ** 2 if vc + vd else 0.0
            elif level == "ordinal":
                lo, hi = min(c, d), max(c, d)
                delta[c, d] = (n_c[lo : hi + 1].sum() - (n_c[c] + n_c[d]) / 2.0) ** 2
    d_o = (o * delta).sum() / n
    d_e = (np.outer(n_c, n_c) * delta).sum() / (n * (n - 1))
    return 1.0 - d_o / d_e


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_krippendorff_published_example(level, published):
    alpha = ag.krippendorff_alpha(K_DATA, level)
    assert alpha == pytest.approx(published, abs=5e-4)
    assert alpha == pytest.approx(reference_alpha(K_DATA, level), abs=TOL)


def test_krippendorff_nominal_exact_fraction():
    # From the paper's coincidence matrix (n = 40 pairable values) the nominal value is exactly 113/152.
    assert ag.krippendorff_alpha(K_DATA, "nominal") == pytest.approx(113 / 152, abs=TOL)


def test_krippendorff_undefined_without_variation():
    assert ag.krippendorff_alpha([[3, 3, 3], [3, 3, None]], "ordinal") is None
    assert ag.krippendorff_alpha([["accept", "accept"], ["accept", "accept"]], "nominal") is None
    # variation only in an unpairable unit does not count
    assert ag.krippendorff_alpha([[1, 1, 2], [1, 1, None]], "nominal") is None
    assert ag.krippendorff_alpha([[1, None], [None, 2]], "nominal") is None
    assert ag.krippendorff_alpha([], "nominal") is None


def test_krippendorff_string_labels_match_codes():
    a = [["accept", "reject", "accept", None], ["accept", "reject", "reject", "accept"]]
    coded = [[{"accept": 1, "reject": 2}.get(x) for x in row] for row in a]
    assert ag.krippendorff_alpha(a, "nominal") == pytest.approx(reference_alpha(coded, "nominal"), abs=TOL)


def test_krippendorff_value_domain_and_errors():
    # Unobserved scale points change nothing for the ordinal level (zero marginals).
    data = [[1, 2, 3, 3], [1, 2, 2, 3]]
    assert ag.krippendorff_alpha(data, "ordinal", value_domain=range(1, 6)) == pytest.approx(
        reference_alpha(data, "ordinal"), abs=TOL
    )
    with pytest.raises(ValueError, match="not in value_domain"):
        ag.krippendorff_alpha([[1, 6], [1, 2]], "ordinal", value_domain=range(1, 6))
    with pytest.raises(ValueError, match="level"):
        ag.krippendorff_alpha(data, "cardinal")
    with pytest.raises(ValueError, match="rectangular"):
        ag.krippendorff_alpha([[1, 2], [1]], "nominal")


# ---- Cohen's kappa vs scikit-learn ---------------------------------------------------------------


def cohen_kappa_score(*args, **kwargs):
    """scikit-learn's, imported on first use: its import (about 1 s) is then paid by the xdist worker that runs
    these tests, not by every worker's collection."""
    from sklearn.metrics import cohen_kappa_score as sklearn_cohen_kappa_score

    return sklearn_cohen_kappa_score(*args, **kwargs)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_matches_sklearn_fixed(weights):
    a = [1, 2, 3, 4, 5, 3, 2, 4, 5, 1, 3, 3]
    b = [1, 3, 3, 4, 4, 3, 1, 5, 5, 2, 3, 2]
    assert ag.cohen_kappa(a, b, weights, labels=[1, 2, 3, 4, 5]) == pytest.approx(
        cohen_kappa_score(a, b, weights=weights, labels=[1, 2, 3, 4, 5]), abs=TOL
    )


def test_cohen_kappa_hand_computed_and_undefined():
    # 2×2: agree on 3 of 4; marginals a=(3 accept,1 reject), b=(2,2): p_o=.75, p_e=.5·.75+.5·.25=.5 → κ=.5
    a = ["accept", "accept", "accept", "reject"]
    b = ["accept", "accept", "reject", "reject"]
    assert ag.cohen_kappa(a, b) == pytest.approx(0.5, abs=TOL)
    assert ag.cohen_kappa(["accept"] * 3, ["accept"] * 3) is None  # no variation: undefined, not 1
    assert ag.cohen_kappa([None, "a"], ["a", None]) is None
    # missing pairs are dropped
    assert ag.cohen_kappa(a + [None], b + ["accept"]) == pytest.approx(0.5, abs=TOL)
    with pytest.raises(ValueError, match="same units"):
        ag.cohen_kappa([1, 2], [1])
    with pytest.raises(ValueError, match="weights"):
        ag.cohen_kappa([1, 2], [1, 2], weights="cubic")
    with pytest.raises(ValueError, match="not in the given label set"):
        ag.cohen_kappa([1, 7], [1, 2], labels=[1, 2, 3])


label_lists = st.integers(min_value=2, max_value=60).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 5), min_size=n, max_size=n), st.lists(st.integers(1, 5), min_size=n, max_size=n)
    )
)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@settings(max_examples=150, deadline=None)
@given(label_lists, st.sampled_from([None, "linear", "quadratic"]))
def test_cohen_kappa_matches_sklearn_property(ab, weights):
    a, b = ab
    ours = ag.cohen_kappa(a, b, weights, labels=[1, 2, 3, 4, 5])
    with np.errstate(all="ignore"):
        theirs = cohen_kappa_score(a, b, weights=weights, labels=[1, 2, 3, 4, 5])
    if ours is None:
        assert math.isnan(theirs) or len(set(a) | set(b)) == 1
    else:
        assert ours == pytest.approx(theirs, abs=TOL)
        assert ours <= 1 + TOL
        assert ag.cohen_kappa(b, a, weights, labels=[1, 2, 3, 4, 5]) == pytest.approx(ours, abs=TOL)  # symmetric


@settings(max_examples=80, deadline=None)
@given(label_lists, st.permutations([1, 2, 3, 4, 5]))
def test_unweighted_kappa_invariant_under_relabelling(ab, perm):
    a, b = ab
    rename = dict(zip([1, 2, 3, 4, 5], perm))
    before = ag.cohen_kappa(a, b)
    after = ag.cohen_kappa([rename[x] for x in a], [rename[x] for x in b])
    assert (before is None and after is None) or before == pytest.approx(after, abs=TOL)


# ---- Fleiss' kappa vs statsmodels ----------------------------------------------------------------


def test_fleiss_kappa_fleiss_1971_example_matches_statsmodels():
    # The Wikipedia/Fleiss (1971) worked example: 10 subjects, 14 raters, 5 categories, κ = 0.210.
    table = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    units = [[c for c, n in enumerate(row, start=1) for _ in range(n)] for row in table]
    ours = ag.fleiss_kappa(units, categories=[1, 2, 3, 4, 5])
    assert ours == pytest.approx(sm_fleiss_kappa(table, method="fleiss"), abs=TOL)
    assert ours == pytest.approx(0.20993070442195522, abs=TOL)


@settings(max_examples=120, deadline=None)
@given(
    st.integers(2, 6).flatmap(
        lambda m: st.lists(st.lists(st.sampled_from(["a", "r", "s"]), min_size=m, max_size=m), min_size=1, max_size=40)
    )
)
def test_fleiss_kappa_matches_statsmodels_property(units):
    table, cats = ag.fleiss_table(units)
    ours = ag.fleiss_kappa(units)
    with np.errstate(all="ignore"):
        theirs = sm_fleiss_kappa(table, method="fleiss")
    if ours is None:
        assert len(cats) == 1 or math.isnan(theirs)
    else:
        assert ours == pytest.approx(theirs, abs=TOL)
        assert ours <= 1 + TOL


def test_fleiss_unequal_counts():
    units = [["a", "a"], ["a", "r"], ["a", "a", "r"], ["r", None], ["a"]]
    with pytest.raises(ValueError, match="unit 2 has 3"):
        ag.fleiss_kappa(units)
    # modal: the two-rating units are kept; the one-rating units never count
    assert ag.fleiss_kappa(units, unequal="modal") == pytest.approx(ag.fleiss_kappa([["a", "a"], ["a", "r"]]), abs=TOL)
    assert ag.fleiss_kappa([["a", "a"], ["a", "a"]]) is None


# ---- percent agreement ---------------------------------------------------------------------------


def test_percent_agreement_hand_computed():
    assert ag.percent_agreement([["a", "a"], ["a", "r"], ["r", "r"], ["a", None]]) == pytest.approx(2 / 3, abs=TOL)
    # three raters, 2 agree: 1 agreeing pair of 3
    assert ag.percent_agreement([["a", "a", "r"]]) == pytest.approx(1 / 3, abs=TOL)
    assert ag.percent_agreement([["a"], [None, "r"]]) is None


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["a", "r", None]), min_size=0, max_size=5), max_size=30),
    st.randoms(use_true_random=False),
)
def test_percent_agreement_bounds_and_invariances(units, rnd):
    value = ag.percent_agreement(units)
    if value is None:
        assert not [
            u for u in units if len([x for x in u if x is not None]) >= 2
        ]  # none has two ratings (or none at all)
        return
    assert -TOL <= value <= 1 + TOL
    shuffled = [rnd.sample(u, len(u)) for u in units]
    rnd.shuffle(shuffled)
    assert ag.percent_agreement(shuffled) == pytest.approx(value, abs=TOL)
    swapped = [[{"a": "r", "r": "a"}.get(x) for x in u] for u in units]
    assert ag.percent_agreement(swapped) == pytest.approx(value, abs=TOL)


# ---- Krippendorff properties against the independent implementation -------------------------------

reliability = st.integers(2, 5).flatmap(
    lambda raters: st.integers(1, 25).flatmap(
        lambda units: st.lists(
            st.lists(st.one_of(st.none(), st.integers(1, 5)), min_size=units, max_size=units),
            min_size=raters,
            max_size=raters,
        )
    )
)


@settings(max_examples=150, deadline=None)
@given(reliability, st.sampled_from(["nominal", "ordinal", "interval", "ratio"]))
def test_krippendorff_matches_reference_property(data, level):
    ours = ag.krippendorff_alpha(data, level)
    pairable = {x for u in zip(*data) for x in u if x is not None and sum(v is not None for v in u) >= 2}
    if len(pairable) < 2:
        assert ours is None
        return
    assert ours == pytest.approx(reference_alpha(data, level), abs=TOL)
    assert ours <= 1 + TOL
    # raters and units are exchangeable
    assert ag.krippendorff_alpha(data[::-1], level) == pytest.approx(ours, abs=TOL)
    assert ag.krippendorff_alpha([row[::-1] for row in data], level) == pytest.approx(ours, abs=TOL)
    if level == "interval":  # invariant under affine rescaling of the values
        scaled = [[None if x is None else 3 * x + 7 for x in row] for row in data]
        assert ag.krippendorff_alpha(scaled, level) == pytest.approx(ours, abs=1e-8)


# ---- rwg and rwg(j), hand-computed -----------------------------------------------------------------


def test_uniform_null_variance():
    assert ag.uniform_null_variance(5) == 2.0
    assert ag.uniform_null_variance(7) == 4.0
    with pytest.raises(ValueError):
        ag.uniform_null_variance(1)


@pytest.mark.parametrize(
    ("ratings", "expected"),
    [
        ([3, 3], 1.0),  # constant ratings: perfect agreement
        ([4, 4, 4, 4], 1.0),
        ([2, 3], 0.75),  # two raters: s² = .5 → 1 − .5/2
        ([1, 2, 3], 0.5),  # s² = 1
        ([4, 5, None, 5], 5 / 6),  # missing dropped: s² = 1/3
        ([1, 3], 0.0),  # s² = σ²_EU exactly: 0 without truncation
        ([1, 4], 0.0),  # s² = 4.5 > 2: truncated to 0 (untruncated would be −1.25)
        ([1, 5], 0.0),  # s² = 8: truncated
        ([1, 5, 1, 5], 0.0),
    ],
)
def test_rwg_hand_computed(ratings, expected):
    assert ag.rwg(ratings, 5) == pytest.approx(expected, abs=TOL)


def test_rwg_other_scales_and_undefined():
    assert ag.rwg([3, 5], 7) == pytest.approx(0.5, abs=TOL)  # σ² = 4, s² = 2
    assert ag.rwg([3], 5) is None
    assert ag.rwg([None, None], 5) is None
    with pytest.raises(ValueError, match="outside the 1–5 scale"):
        ag.rwg([0, 3], 5)


def test_rwg_j_hand_computed():
    # four dimensions × two raters: variances .5, 0, .5, .5 → s̄² = .375, ratio .1875 → 3.25/3.4375 = 52/55
    assert ag.rwg_j([[2, 3], [3, 3], [4, 5], [1, 2]], 5) == pytest.approx(52 / 55, abs=TOL)
    assert ag.rwg_j([[3, 3], [5, 5], [1, 1], [2, 2]], 5) == pytest.approx(1.0, abs=TOL)  # constant ratings
    assert ag.rwg_j([[1, 3], [2, 3]], 5) == pytest.approx(Fraction(6, 11), abs=TOL)  # s̄² = 1.25
    assert ag.rwg_j([[1, 3], [1, 3]], 5) == 0.0  # s̄² = σ²_EU
    assert ag.rwg_j([[1, 5], [1, 5], [3, 3]], 5) == 0.0  # s̄² = 16/3 > 2: truncated
    # missing: the item with one rating is left out, J = 2: s̄² = .25 → 1.75/1.875 = 14/15
    assert ag.rwg_j([[2, 3], [None, 4], [3, 3]], 5) == pytest.approx(14 / 15, abs=TOL)
    assert ag.rwg_j([[2], [None, 4]], 5) is None
    assert ag.rwg_j([], 5) is None


ratings5 = st.lists(st.integers(1, 5), min_size=2, max_size=8)


@settings(max_examples=200, deadline=None)
@given(ratings5, st.randoms(use_true_random=False))
def test_rwg_bounds_and_invariances(ratings, rnd):
    value = ag.rwg(ratings, 5)
    assert 0.0 <= value <= 1.0
    assert ag.rwg(rnd.sample(ratings, len(ratings)), 5) == pytest.approx(value, abs=TOL)
    assert ag.rwg([6 - x for x in ratings], 5) == pytest.approx(value, abs=TOL)  # reversing the scale
    assert ag.rwg_j([ratings], 5) == pytest.approx(value, abs=TOL)  # J = 1 reduces to rwg


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 6).flatmap(
        lambda k: st.lists(st.lists(st.integers(1, 5), min_size=k, max_size=k), min_size=1, max_size=6)
    )
)
def test_rwg_j_bounds_and_monotone_in_j(items):
    value = ag.rwg_j(items, 5)
    assert 0.0 <= value <= 1.0 + TOL
    # Repeating the same items (same s̄², larger J) never lowers rwg(j) (Spearman–Brown form).
    assert ag.rwg_j(items * 2, 5) >= value - TOL
    # rwg(j) is at least the rwg of the mean variance whenever that is positive
    s2 = sum(np.var(i, ddof=1) for i in items) / len(items)
    if s2 < 2:
        assert value >= 1 - s2 / 2 - TOL


# ---- round alignment and bootstrap ---------------------------------------------------------------


def test_round_alignment():
    first = {1: "accept", 2: "reject", 3: "accept", 4: "accept", 5: None}
    second = {1: "accept", 2: "accept", 3: "accept", 5: "accept", 6: "reject"}
    assert ag.round_alignment(first, second) == pytest.approx(2 / 3, abs=TOL)
    assert ag.alignment_counts(first, second) == ag.Alignment(items=3, same=2)
    assert ag.round_alignment({1: "a"}, {2: "a"}) is None


def test_bootstrap_is_seeded_and_ordered():
    units = [["a", "a"], ["a", "r"], ["r", "r"], ["a", "a"], ["r", "a"], ["a", "a"], ["r", "r"], ["a", "a"]]
    one = ag.percent_agreement_ci(units, resamples=300, seed=7)
    two = ag.percent_agreement_ci(units, resamples=300, seed=7)
    assert one == two
    assert one.estimate == pytest.approx(0.75, abs=TOL)
    assert 0 <= one.low <= one.estimate <= one.high <= 1
    assert one.defined == 300
    other = ag.percent_agreement_ci(units, resamples=300, seed=8)
    assert (other.low, other.high) != (None, None)


def test_bootstrap_each_statistic():
    a = ["accept", "accept", "reject", "accept", "reject", "reject", "accept", "accept", "reject", "accept"]
    b = ["accept", "reject", "reject", "accept", "reject", "accept", "accept", "accept", "reject", "accept"]
    kappa = ag.cohen_kappa_ci(a, b, resamples=200, seed=1)
    assert kappa.estimate == pytest.approx(cohen_kappa_score(a, b), abs=TOL)
    assert kappa.low <= kappa.high <= 1
    fleiss = ag.fleiss_kappa_ci([list(p) for p in zip(a, b)], resamples=200, seed=1)
    assert fleiss.low <= fleiss.high <= 1
    alpha = ag.krippendorff_alpha_ci(K_DATA, "interval", resamples=200, seed=1)
    assert alpha.estimate == pytest.approx(0.8491071428571428, abs=TOL)
    assert alpha.low <= alpha.high <= 1
    r = ag.rwg_ci([3, 4, 4, 5, 3, 4], 5, resamples=200, seed=1)
    assert 0 <= r.low <= r.high <= 1
    rj = ag.rwg_j_ci([[3, 4, 4], [4, 4, 5], [2, 3, 3], [5, 5, 4]], 5, resamples=200, seed=1)
    assert rj.estimate == pytest.approx(ag.rwg_j([[3, 4, 4], [4, 4, 5], [2, 3, 3], [5, 5, 4]], 5), abs=TOL)
    assert 0 <= rj.low <= rj.high <= 1
    m = ag.mean_rwg_ci([[3, 4], [4, 4], [1, 5], [2, 3]], 5, resamples=200, seed=1)
    assert m.estimate == pytest.approx((0.75 + 1 + 0 + 0.75) / 4, abs=TOL)
    mj = ag.mean_rwg_j_ci([[[3, 4], [4, 4]], [[1, 5], [2, 3]]], 5, resamples=200, seed=1)
    assert mj.estimate == pytest.approx(
        ag.mean_defined([ag.rwg_j([[3, 4], [4, 4]], 5), ag.rwg_j([[1, 5], [2, 3]], 5)]), abs=TOL
    )
    al = ag.round_alignment_ci(
        {i: "a" if i % 3 else "r" for i in range(30)}, {i: "a" for i in range(30)}, resamples=200, seed=1
    )
    assert al.estimate == pytest.approx(20 / 30, abs=TOL)
    assert al.low <= al.estimate <= al.high


def test_bootstrap_undefined_estimate():
    ci = ag.cohen_kappa_ci(["a", "a"], ["a", "a"], resamples=50)
    assert ci.estimate is None and ci.low is None and ci.high is None
    with pytest.raises(ValueError):
        ag.bootstrap_ci([1, 2], lambda xs: 0.0, confidence=1.5)


# ---- the vectorised bootstrap equals resampling with the point-estimate functions -------------------


def _same_interval(fast: ag.Interval, slow: ag.Interval) -> None:
    assert fast.defined == slow.defined
    for x, y in [(fast.estimate, slow.estimate), (fast.low, slow.low), (fast.high, slow.high)]:
        assert (x is None and y is None) or x == pytest.approx(y, abs=TOL)


@settings(max_examples=40, deadline=None)
@given(reliability, st.sampled_from(["nominal", "ordinal", "interval", "ratio"]), st.integers(0, 2**31))
def test_vectorised_alpha_bootstrap_equals_package_per_resample(data, level, seed):
    fast = ag.krippendorff_alpha_ci(data, level, range(1, 6), resamples=40, seed=seed)
    pairable = [col for col in zip(*data) if sum(x is not None for x in col) >= 2]
    slow = ag.bootstrap_ci(
        pairable,
        lambda cols: ag.krippendorff_alpha([list(r) for r in zip(*cols)], level, range(1, 6)) if cols else None,
        resamples=40,
        seed=seed,
    )
    _same_interval(fast, slow)


@settings(max_examples=40, deadline=None)
@given(label_lists, st.sampled_from([None, "linear", "quadratic"]), st.integers(0, 2**31))
def test_vectorised_kappa_bootstraps_equal_slow_ones(ab, weights, seed):
    a, b = ab
    labels = [1, 2, 3, 4, 5]
    fast = ag.cohen_kappa_ci(a, b, weights, labels, resamples=40, seed=seed)
    slow = ag.bootstrap_ci(
        list(zip(a, b)),
        lambda ps: ag.cohen_kappa([p[0] for p in ps], [p[1] for p in ps], weights, labels),
        resamples=40,
        seed=seed,
    )
    _same_interval(fast, slow)
    units = [list(p) for p in zip(a, b)]
    _same_interval(
        ag.fleiss_kappa_ci(units, labels, resamples=40, seed=seed),
        ag.bootstrap_ci(units, lambda us: ag.fleiss_kappa(us, labels), resamples=40, seed=seed),
    )
    _same_interval(
        ag.percent_agreement_ci(units, resamples=40, seed=seed),
        ag.bootstrap_ci(units, ag.percent_agreement, resamples=40, seed=seed),
    )
    _same_interval(
        ag.mean_rwg_ci(units, 5, resamples=40, seed=seed),
        ag.bootstrap_ci(units, lambda us: ag.mean_defined([ag.rwg(u, 5) for u in us]), resamples=40, seed=seed),
    )
    first, second = dict(enumerate(a)), dict(enumerate(b))
    _same_interval(
        ag.round_alignment_ci(first, second, resamples=40, seed=seed),
        ag.bootstrap_ci(list(zip(a, b)), lambda ps: sum(x == y for x, y in ps) / len(ps), resamples=40, seed=seed),
    )


@settings(max_examples=150, deadline=None)
@given(reliability, st.sampled_from(["nominal", "ordinal", "interval", "ratio"]), st.booleans())
def test_krippendorff_from_units_equals_the_matrix(data, level, with_domain):
    """The report computes α from each unit's ratings (no raters × units matrix): same value, same interval."""
    units = [list(column) for column in zip(*data)]
    domain = list(range(1, 6)) if with_domain else None
    dense = ag.krippendorff_alpha(data, level, domain)
    sparse = ag.krippendorff_alpha_units(units, level, domain)
    assert (dense is None) == (sparse is None)
    if dense is not None:
        assert sparse == pytest.approx(dense, abs=1e-12)
    boot = {"resamples": 50, "seed": 3}
    assert ag.krippendorff_alpha_units_ci(units, level, domain, **boot) == ag.krippendorff_alpha_ci(
        data, level, domain, **boot
    )
    # who gave a rating does not enter α: shuffling ratings between raters within each unit changes nothing
    assert ag.krippendorff_alpha_units([u[::-1] for u in units], level, domain) == sparse


def test_krippendorff_from_units_labels_and_errors():
    units = [["accept", "accept"], ["reject", "reject"], ["accept", "reject"], ["accept"], [None, "reject"]]
    matrix = [[u[i] if i < len(u) else None for u in units] for i in range(2)]
    assert ag.krippendorff_alpha_units(units, "nominal", ["accept", "reject"]) == pytest.approx(
        ag.krippendorff_alpha(matrix, "nominal", ["accept", "reject"]), abs=1e-12
    )
    assert ag.krippendorff_alpha_units([["accept", "accept"], ["accept"]], "nominal") is None  # no variation
    with pytest.raises(ValueError, match="not in value_domain"):
        ag.krippendorff_alpha_units([["accept", "maybe"]], "nominal", ["accept", "reject"])
    with pytest.raises(ValueError, match="level"):
        ag.krippendorff_alpha_units(units, "cardinal")
