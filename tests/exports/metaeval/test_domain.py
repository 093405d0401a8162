"""exports.metaeval.domain against scipy and hand-computed cases."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from exports.metaeval.domain import (
    average_over_directions,
    coefficient_of_variation,
    cross_lingual_cv,
    kendall_tau,
    lgn_normalisers,
    paired_t_test,
    parse_statistic,
    tau_statistic,
)


def brute_force_23(metric, human, eps=0.0):
    c = d = th = tm = tb = 0
    for i, j in itertools.combinations(range(len(metric)), 2):
        dm, dh = metric[i] - metric[j], human[i] - human[j]
        tie_m, tie_h = abs(dm) <= eps, dh == 0
        if tie_m and tie_h:
            tb += 1
        elif tie_h:
            th += 1
        elif tie_m:
            tm += 1
        elif (dm > 0) == (dh > 0):
            c += 1
        else:
            d += 1
    total = c + d + th + tm + tb
    return (c + tb - d - th - tm) / total, (c + tb) / total


def test_tau_b_and_c_match_scipy():
    human = [-25, -20, -20, -10, -5, 0, 0]
    metric = [10.0, 30.0, 25.0, 40.0, 42.0, 60.0, 58.0]
    assert kendall_tau(metric, human, "b").value == pytest.approx(
        stats.kendalltau(metric, human, variant="b").statistic, abs=1e-12
    )
    assert kendall_tau(metric, human, "c").value == pytest.approx(
        stats.kendalltau(metric, human, variant="c").statistic, abs=1e-12
    )


def test_tau_23_and_acc23_on_a_hand_computed_case():
    # pairs: (0,1) h tie, m differ → tm? no: human tied, metric not → th; (0,2) concordant; (1,2) concordant
    human = [0, 0, 5]
    metric = [1.0, 2.0, 3.0]
    # c=2, d=0, th=1, tm=0, tb=0 → τ23 = (2-1)/3, acc23 = 2/3
    assert kendall_tau(metric, human, "23").value == pytest.approx(1 / 3)
    assert kendall_tau(metric, human, "acc23").value == pytest.approx(2 / 3)


def test_tie_calibration_rewards_predicting_human_ties():
    human = [0, 0, 5]
    metric = [1.0, 1.1, 3.0]
    plain = kendall_tau(metric, human, "acc23")
    calibrated = kendall_tau(metric, human, "acc23", calibrate_ties=True)
    assert plain.value == pytest.approx(2 / 3)
    assert calibrated.value == pytest.approx(1.0)
    assert calibrated.epsilon == pytest.approx(0.1)
    assert "tie-calibrated" in calibrated.describe()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 0), st.integers(0, 6)), min_size=2, max_size=14))
def test_tau_23_matches_brute_force(pairs):
    human = [5 * h for h, _ in pairs]
    metric = [float(m) for _, m in pairs]
    tau, acc = brute_force_23(metric, human)
    assert kendall_tau(metric, human, "23").value == pytest.approx(tau, abs=1e-12)
    assert kendall_tau(metric, human, "acc23").value == pytest.approx(acc, abs=1e-12)
    assert -1 <= tau <= 1 and 0 <= acc <= 1


def exhaustive_calibration(metric, human):
    """Every candidate threshold (0 and each |Δmetric|) scored on its own with all five counts; the best
    acc23 and τ_23, the smallest threshold winning among equals (as mt-metrics-eval's argmax does).
    Missing values drop their item first. Independent of the sweep in exports.metaeval.domain."""
    keep = [
        k
        for k in range(len(metric))
        if metric[k] is not None and human[k] is not None and not np.isnan(metric[k]) and not np.isnan(human[k])
    ]
    m = np.array([metric[k] for k in keep], dtype=float)
    h = np.array([human[k] for k in keep], dtype=float)
    if len(m) < 2:
        return {}, len(m)
    i, j = np.triu_indices(len(m), k=1)
    dm, dh = m[i] - m[j], h[i] - h[j]
    thresholds = np.array(sorted({0.0, *np.abs(dm).tolist()}))
    best = {}
    for lo in range(0, len(thresholds), 256):  # thresholds × pairs, in blocks
        t = thresholds[lo : lo + 256, None]
        tie_m = np.abs(dm)[None, :] <= t
        tie_h = (dh == 0)[None, :]
        tb = (tie_m & tie_h).sum(1)
        th = (~tie_m & tie_h).sum(1)
        tm = (tie_m & ~tie_h).sum(1)
        c = (~tie_m & ~tie_h & (np.sign(dm) == np.sign(dh))[None, :]).sum(1)
        d = (~tie_m & ~tie_h & (np.sign(dm) != np.sign(dh))[None, :]).sum(1)
        total = c + d + th + tm + tb
        for name, values in (("acc23", (c + tb) / total), ("23", (c + tb - d - th - tm) / total)):
            k = int(np.argmax(values))
            if name not in best or values[k] > best[name][0]:
                best[name] = (float(values[k]), float(thresholds[lo + k]))
    return best, len(m)


def _random_case(rng, n):
    """Scores with many ties in both vectors and a few missing values (None and NaN)."""
    if rng.random() < 0.5:
        metric = list(rng.integers(0, int(rng.integers(2, 30)), n) / 7.0)
    else:
        metric = list(np.round(rng.normal(size=n), int(rng.integers(1, 4))))
    human = list(rng.integers(-5, 1, n) * 5.0)
    for _ in range(int(rng.integers(0, 4))):
        side = metric if rng.random() < 0.5 else human
        side[int(rng.integers(0, n))] = None if rng.random() < 0.5 else float("nan")
    return metric, human


@pytest.mark.parametrize("seed", range(8))
def test_tie_calibration_equals_exhaustive_search_up_to_150_items(seed):
    rng = np.random.default_rng(seed)
    for n in [2, 3, 5, 12, 40, int(rng.integers(60, 150)), 150]:
        metric, human = _random_case(rng, n)
        best, kept = exhaustive_calibration(metric, human)
        if kept < 2:
            continue
        for variant in ("acc23", "23"):
            result = kendall_tau(metric, human, variant, calibrate_ties=True)
            assert result.n == kept
            assert result.value == pytest.approx(best[variant][0], abs=1e-12), (seed, n, variant)
            assert result.epsilon == best[variant][1], "ε must be the smallest best threshold, an actual |Δmetric|"


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 0), st.one_of(st.none(), st.integers(0, 5))), min_size=2, max_size=12))
def test_tie_calibration_equals_exhaustive_search_small(pairs):
    human = [5.0 * h for h, _ in pairs]
    metric = [None if m is None else m / 3.0 for _, m in pairs]
    best, kept = exhaustive_calibration(metric, human)
    if kept < 2:
        with pytest.raises(ValueError, match="at least two items with both scores"):
            kendall_tau(metric, human, "acc23", calibrate_ties=True)
        return
    for variant in ("acc23", "23"):
        result = kendall_tau(metric, human, variant, calibrate_ties=True)
        assert (result.value, result.epsilon) == (pytest.approx(best[variant][0], abs=1e-12), best[variant][1])


def test_missing_values_drop_their_pairs_for_every_variant():
    # mt-metrics-eval drops the item (and so each of its pairs): 4 items, 6 pairs, 1 concordant → acc23 1/6.
    metric, human = [1, 2, None, 4, 3], [0, 0, -5, -5, -10]
    kept_m, kept_h = [1, 2, 4, 3], [0, 0, -5, -10]
    assert kendall_tau(metric, human, "acc23").value == pytest.approx(1 / 6)
    assert kendall_tau(metric, human, "acc23").n == 4
    for variant in ("b", "c", "23", "acc23"):
        assert kendall_tau(metric, human, variant).value == pytest.approx(
            kendall_tau(kept_m, kept_h, variant).value, abs=1e-15
        )
        nan_metric = [float("nan") if v is None else v for v in metric]
        assert kendall_tau(nan_metric, human, variant).value == pytest.approx(
            kendall_tau(kept_m, kept_h, variant).value, abs=1e-15
        )
    assert kendall_tau([1.0, 2.0, 3.0], [0.0, None, 5.0], "b").value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least two items with both scores, got 1"):
        kendall_tau([1.0, None, 3.0], [0.0, 1.0, None], "b")


def test_statistics_offered_name_the_calibrated_variants():
    assert parse_statistic("acc23-tc") == ("acc23", True) and parse_statistic("23") == ("23", False)
    metric, human = [1.0, 1.1, 3.0], [0, 0, 5]
    assert tau_statistic(metric, human, "acc23-tc") == kendall_tau(metric, human, "acc23", calibrate_ties=True)
    with pytest.raises(ValueError, match="unknown τ statistic"):
        parse_statistic("b-tc")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown τ variant"):
        kendall_tau([1, 2], [1, 2], "a")
    with pytest.raises(ValueError, match="equal length"):
        kendall_tau([1, 2, 3], [1, 2], "b")
    with pytest.raises(ValueError, match="τ_23 and acc23 only"):
        kendall_tau([1, 2], [1, 2], "b", calibrate_ties=True)


def test_coefficient_of_variation_sample_and_population():
    x = [80.0, 82.0, 90.0]
    assert coefficient_of_variation(x) == pytest.approx(np.std(x, ddof=1) / np.mean(x))
    assert coefficient_of_variation(x, sample=False) == pytest.approx(np.std(x) / np.mean(x))
    cv = cross_lingual_cv({"en-de": {0: 80.0, 1: 70.0}, "en-zh": {0: 82.0, 1: 60.0}, "en-ja": {0: 90.0, 1: 65.0}})
    assert cv[0] == pytest.approx(coefficient_of_variation([80, 82, 90]))
    assert cv[1] == pytest.approx(coefficient_of_variation([70, 60, 65]))


def test_lgn_removes_a_language_specific_offset_and_scale():
    rng = np.random.default_rng(0)
    base = rng.normal(size=600)
    base = (base - base.mean()) / base.std()
    scores = {"en-de": 80 + 5 * base, "en-zh": 60 + 10 * base}
    norm = lgn_normalisers(scores)
    assert norm["en-de"](scores["en-de"]).mean() == pytest.approx(0, abs=1e-12)
    assert np.allclose(norm["en-de"](scores["en-de"]), norm["en-zh"](scores["en-zh"]))
    # Same raw-quality system in both languages: plain averaging mixes scales, LGN gives one z.
    assert average_over_directions({"en-de": 85.0, "en-zh": 70.0}, norm) == pytest.approx(1.0)
    assert average_over_directions({"en-de": 85.0, "en-zh": 70.0}) == pytest.approx(77.5)
    with pytest.raises(ValueError, match="en-ja: LGN needs"):
        lgn_normalisers({"en-ja": [1.0, 1.0, 1.0]})


def test_paired_t_test_matches_scipy():
    a = [0.81, 0.84, 0.79, 0.86, 0.83]
    b = [0.74, 0.78, 0.75, 0.77, 0.76]
    result = paired_t_test(a, b)
    reference = stats.ttest_rel(a, b)
    assert result.statistic == pytest.approx(reference.statistic) and result.pvalue == pytest.approx(reference.pvalue)
    assert result.mean_difference == pytest.approx(np.mean(np.subtract(a, b)))


# ---- pseudo systems ----------------------------------------------------------------------------------

from exports.metaeval.domain import (  # noqa: E402
    SystemSample,
    lgn_from_systems,
    monolingual_system_tau,
    multilingual_study,
    system_score,
)


def biased_world(repetitions=4, per_level=6):
    """Two directions whose metric sees the same quality (score = 80 − 8k + noise) on different scales:
    en-zh scores are compressed and shifted (0.5·x − 10), a cross-lingual bias that LGN should remove."""
    rng = np.random.default_rng(7)
    scores, mono, multi = {}, [], []
    for r in range(repetitions):
        ids = {}
        for d in ("en-de", "en-zh"):
            for k in range(6):
                ids[(d, k)] = []
                for i in range(per_level):
                    tid = f"{d}/{r}-{k}-{i}/x"
                    base = 80 - 8 * k + rng.normal(0, 2)
                    scores[tid] = base if d == "en-de" else 0.5 * base - 10
                    ids[(d, k)].append(tid)
                mono.append(SystemSample(f"mono/{d}/k{k}/r{r}", r, -5.0 * k, ids[(d, k)], d, k))
        # Multilingual systems whose levels differ by direction: with en-zh on a compressed scale, plain
        # averaging misorders (0,3) [human −7.5, raw 49] and (2,0) [human −5, raw 47]; LGN does not.
        for s, (kde, kzh) in enumerate([(0, 3), (2, 0), (1, 5), (4, 1), (3, 5), (5, 4)]):
            human = -5.0 * (kde + kzh) / 2
            multi.append(SystemSample(f"multi/s{s}/r{r}", r, human, ids[("en-de", kde)] + ids[("en-zh", kzh)]))
    return scores, mono, multi


def test_system_score_averages_directions_then_lgn():
    scores = {"en-de/1/a": 80.0, "en-de/2/a": 70.0, "en-zh/1/a": 30.0}
    system = SystemSample("s", 0, -5.0, list(scores))
    assert system_score(system, scores) == pytest.approx((75.0 + 30.0) / 2)
    with pytest.raises(ValueError, match="triplet en-de/9/a has no score"):
        system_score(SystemSample("s", 0, 0.0, ["en-de/9/a"]), scores)


def test_monolingual_system_tau_is_perfect_for_a_monotone_metric():
    scores, mono, _ = biased_world()
    taus = monolingual_system_tau(mono, scores, "b")
    assert taus == {"en-de": pytest.approx(1.0), "en-zh": pytest.approx(1.0)}


def test_lgn_removes_cross_lingual_bias_in_the_multilingual_study():
    scores, mono, multi = biased_world()
    normalisers = lgn_from_systems(mono, scores)
    assert normalisers["en-zh"].std == pytest.approx(0.5 * normalisers["en-de"].std, rel=0.05)
    study = multilingual_study(multi, scores, normalisers, "b")
    assert study.repetitions == 4
    # Plain averaging weighs en-de's wider scale more: systems (0,1)/(1,0) etc. are mis-ordered.
    assert study.tau_lgn > study.tau_plain
    assert study.tau_lgn == pytest.approx(1.0, abs=0.15)
    # LGN wins by the same margin in every repetition here: no variance, so no t statistic.
    assert study.test is None


def test_paired_test_is_reported_when_the_gain_varies_over_repetitions():
    scores, mono, multi = biased_world(repetitions=6)
    # Make repetition 0 unbiased (en-zh on en-de's scale): there LGN gains nothing.
    for tid in [t for s in multi if s.repetition == 0 for t in s.triplet_ids if t.startswith("en-zh")]:
        scores[tid] = (scores[tid] + 10) / 0.5
    study = multilingual_study(multi, scores, lgn_from_systems(mono, scores), "b")
    assert study.test is not None and study.test.n == 6 and study.test.mean_difference > 0
