"""Grouping (``average_by``), tie calibration (``KendallWithTiesOpt``) and the pairs permutation test against
Google's mt-metrics-eval, run (``exports/metaeval/reference/make_grouped_fixtures.py``) on an EvalSet the platform
wrote (``tests/fixtures/mtme-grouped/``, from ``make_grouped_evalset``): values to 1e-12, thresholds exactly,
p-value matrices and clusters exactly under the same seed."""

import filecmp
import json
import os
from pathlib import Path

import numpy as np
import pytest

from exports.metaeval import evalset, statistics
from exports.metaeval.reference import make_grouped_evalset
from tests.support.asserts import every

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "mtme-grouped"
EXPECTED = json.loads((ROOT / "expected.json").read_text())


@pytest.fixture(scope="module")
def evs():
    return evalset.read(str(ROOT), EXPECTED["evalset"], EXPECTED["lp"])


def _grouped(evs, average_by):
    systems = EXPECTED["systems"]
    gold = [evs.human[(EXPECTED["gold"], "seg")][s] for s in systems]
    metrics = {m: [evs.metrics[(m, "seg")][s] for s in systems] for m in EXPECTED["metrics"]}
    return statistics.group_scores(gold, metrics, average_by)


def test_the_writer_writes_the_evalset_the_fixtures_were_computed_on(tmp_path):
    written = evalset.write(make_grouped_evalset.build(), str(tmp_path))
    for folder, _, files in os.walk(written):
        for name in files:
            path = Path(folder) / name
            assert filecmp.cmp(path, ROOT / path.relative_to(tmp_path), shallow=False), path


def test_the_human_translation_is_left_out_as_mt_metrics_eval_leaves_it_out(evs):
    assert make_grouped_evalset.HUMAN in evs.outputs and make_grouped_evalset.HUMAN in evs.references
    assert EXPECTED["systems"] == sorted(s for s in evs.outputs if s not in evs.references)


@pytest.mark.parametrize("key", sorted(EXPECTED["values"]))
def test_grouped_values_equal_average_correlation(evs, key):
    average_by, nans = key.split("/")
    data = _grouped(evs, average_by)
    for metric, expected in EXPECTED["values"][key].items():
        for name, value in expected.items():
            got = statistics.average_correlation(
                name, data.gold, data.metrics[metric], data.bounds, replace_nans_with_zeros=nans == "zeros"
            )
            assert got == pytest.approx(value, abs=1e-12), (metric, name)


def test_the_fixture_has_nans_that_the_options_treat_differently():
    """A group whose gold is constant (Pearson NaN there): dropping and zero-filling must give different means."""
    drop, zeros = EXPECTED["values"]["item/drop"], EXPECTED["values"]["item/zeros"]
    assert any(drop[m]["pearson"] != zeros[m]["pearson"] for m in drop)


@pytest.mark.parametrize("average_by", ["none", "item", "sys"])
def test_tie_calibration_equals_kendall_with_ties_opt(evs, average_by):
    data = _grouped(evs, average_by)
    for metric, per_variant in EXPECTED["calibration"][average_by].items():
        for variant, expected in per_variant.items():
            got = statistics.tie_calibration(data.gold, data.metrics[metric], data.bounds, variant)
            assert got.epsilon == expected["epsilon"], (metric, variant)
            assert got.value == pytest.approx(expected["value"], abs=1e-12), (metric, variant)
    assert any(e["acc23"]["epsilon"] > 0 for e in EXPECTED["calibration"][average_by].values())


@pytest.mark.parametrize(
    "case", EXPECTED["compare"], ids=lambda c: f"{c['statistic']}-{c['average_by']}-{c['perm_test']}-{c['block_size']}"
)
def test_permutation_clusters_equal_compare_metrics_under_the_same_seed(evs, case):
    data = _grouped(evs, case["average_by"])
    result = statistics.permutation_significance(
        case["statistic"],
        data.gold,
        data.metrics,
        data.bounds,
        resamples=EXPECTED["resamples"],
        seed=EXPECTED["seed"],
        alpha=EXPECTED["alpha"],
        block_size=case["block_size"],
        replace_nans_with_zeros=case["replace_nans_with_zeros"],
        test=case["perm_test"],
        average_by=case["average_by"],
    )
    assert result.metrics == case["order"]
    np.testing.assert_allclose(result.values, case["values"], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.triu(result.p_values, 1), np.triu(np.array(case["p_values"]), 1))
    assert result.ranks == case["ranks"]
    assert result.as_dict()["parameters"]["perm_test"] == case["perm_test"]


def test_some_p_value_is_decided_by_the_draws():
    assert every(any(0 < p < 1 for row in c["p_values"] for p in row) for c in EXPECTED["compare"])


def _complete_segments(evs):
    systems, segments = EXPECTED["systems"], EXPECTED["pce_segments"]
    gold = [evs.human[(EXPECTED["gold"], "seg")][s][k] for s in systems for k in segments]
    metrics = {m: [evs.metrics[(m, "seg")][s][k] for s in systems for k in segments] for m in EXPECTED["metrics"]}
    return gold, metrics, len(systems)


def test_soft_pairwise_accuracy_and_its_clusters_equal_mt_metrics_eval(evs):
    gold, metrics, systems = _complete_segments(evs)
    for metric, value in EXPECTED["pce"].items():
        got = statistics.average_correlation("pce", gold, metrics[metric], systems=systems)
        assert got == pytest.approx(value, abs=1e-12), metric
    result = statistics.permutation_significance(
        "pce", gold, metrics, resamples=EXPECTED["resamples"], seed=EXPECTED["seed"], systems=systems
    )
    expected = EXPECTED["pce_compare"]
    assert result.metrics == expected["order"] and result.ranks == expected["ranks"]
    np.testing.assert_array_equal(np.triu(result.p_values, 1), np.triu(np.array(expected["p_values"]), 1))
    assert any(0 < p < 1 for row in expected["p_values"] for p in row)


def test_pce_drops_unrated_segments_before_splitting_by_system(evs):
    """NaN human scores are dropped first, then the vectors are split by system (``PairwiseConfidenceError``):
    a count that does not split evenly is refused with a clear error."""
    gold, metrics, systems = _complete_segments(evs)
    with_gaps = [np.nan, *gold]
    padded = {m: [0.0, *v] for m, v in metrics.items()}
    assert statistics.average_correlation("pce", with_gaps, padded["good-refA"], systems=systems) == pytest.approx(
        EXPECTED["pce"]["good-refA"], abs=1e-12
    )
    with pytest.raises(ValueError, match="split evenly"):
        statistics.average_correlation("pce", gold[1:], metrics["good-refA"][1:], systems=systems)
    with pytest.raises(ValueError, match="number of systems"):
        statistics.average_correlation("pce", gold, metrics["good-refA"])
