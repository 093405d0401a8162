"""The platform's statistics against Google's mt-metrics-eval, run (``exports/metaeval/reference/make_fixtures.py``)
on an EvalSet the platform's exporter wrote (``tests/fixtures/mtme/``). Deterministic statistics to 1e-12 (one
floating-point computation against another: scipy there, vectorised numpy here); permutation p-values and clusters
exactly, drawn from the same seeded stream; bootstrap intervals on the same seeded resamples."""

import filecmp
import json
import os
from pathlib import Path

import numpy as np
import pytest

from exports.metaeval import evalset, statistics
from exports.metaeval.reference import make_evalset

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "mtme"
EXPECTED = json.loads((ROOT / "expected.json").read_text())
ALL = evalset.ALL_TRIPLETS


@pytest.fixture(scope="module")
def evs():
    return evalset.read(str(ROOT), EXPECTED["evalset"], EXPECTED["lp"])


def test_the_exporter_writes_the_evalset_the_fixtures_were_computed_on(tmp_path):
    written = evalset.write(make_evalset.build(), str(tmp_path))
    for folder, _, files in os.walk(written):
        for name in files:
            path = Path(folder) / name
            committed = ROOT / path.relative_to(tmp_path)
            assert filecmp.cmp(path, committed, shallow=False), committed


def test_triplet_level_statistics_equal_mt_metrics_eval(evs):
    gold = evs.human[("xqm", "seg")][ALL]
    for metric, expected in EXPECTED["triplet"].items():
        scores = evs.metrics[(metric, "seg")][ALL]
        for name, value in expected.items():
            assert statistics.get_statistic(name).compute(gold, scores)[0] == pytest.approx(value, abs=1e-12), name


def _system_vectors(evs, metric):
    systems = EXPECTED["systems"]
    gold = [evs.human[("xqm", "sys")][s][0] for s in systems]
    return gold, [evs.metrics[(metric, "sys")][s][0] for s in systems]


def test_system_level_statistics_equal_mt_metrics_eval(evs):
    assert EXPECTED["systems"] == sorted(evs.outputs)
    for metric, expected in EXPECTED["system"].items():
        gold, scores = _system_vectors(evs, metric)
        for name, value in expected.items():
            assert statistics.get_statistic(name).compute(gold, scores)[0] == pytest.approx(value, abs=1e-12), name


def test_permutation_clusters_equal_mt_metrics_eval_under_the_same_seed(evs):
    gold = evs.human[("xqm", "seg")][ALL]
    metrics = {m: evs.metrics[(m, "seg")][ALL] for m in EXPECTED["metrics"]}
    result = statistics.permutation_significance(
        "pearson", gold, metrics, resamples=EXPECTED["resamples"], seed=EXPECTED["seed"], alpha=EXPECTED["alpha"]
    )
    expected = EXPECTED["triplet_clusters"]
    assert result.metrics == expected["order"]
    assert result.ranks == expected["ranks"]
    np.testing.assert_array_equal(np.triu(result.p_values, 1), np.triu(np.array(expected["p_values"]), 1))
    assert any(0 < p < 1 for row in expected["p_values"] for p in row)  # a p-value the draws decide


def test_draws_taken_a_few_rows_at_a_time_are_the_same_draws(evs, monkeypatch):
    """The memory bound on draws (``_DRAW_BLOCK``) changes how many rows are drawn at once, never the stream."""
    monkeypatch.setattr(statistics, "_DRAW_BLOCK", 7 * len(evs.sources))  # 7 resamples at a time
    gold = evs.human[("xqm", "seg")][ALL]
    metrics = {m: evs.metrics[(m, "seg")][ALL] for m in EXPECTED["metrics"]}
    result = statistics.permutation_significance(
        "pearson", gold, metrics, resamples=EXPECTED["resamples"], seed=EXPECTED["seed"], alpha=EXPECTED["alpha"]
    )
    expected = EXPECTED["triplet_clusters"]
    np.testing.assert_array_equal(np.triu(result.p_values, 1), np.triu(np.array(expected["p_values"]), 1))


def test_pooled_accuracy_clusters_equal_mt_metrics_eval(evs):
    systems = {m: _system_vectors(evs, m) for m in EXPECTED["metrics"]}
    gold = next(iter(systems.values()))[0]
    result = statistics.permutation_significance(
        "accuracy",
        gold,
        {"*" + m.rsplit("-", 1)[0]: v for m, (_, v) in systems.items()},
        resamples=EXPECTED["resamples"],
        seed=EXPECTED["seed"],
        alpha=EXPECTED["alpha"],
    )
    expected = EXPECTED["system_clusters"]
    assert result.metrics == expected["order"] and result.ranks == expected["ranks"]
    np.testing.assert_array_equal(np.triu(result.p_values, 1), np.triu(np.array(expected["p_values"]), 1))


def test_soft_pairwise_accuracy_equals_mt_metrics_eval(evs):
    systems = EXPECTED["spa_systems"]
    human = evs.human[("xqm", "seg")]
    gold = np.array([[v for v in human[s] if v is not None] for s in systems])
    for metric, value in EXPECTED["spa"].items():
        seg = evs.metrics[(metric, "seg")]
        scores = np.array([[v for v, g in zip(seg[s], human[s]) if g is not None] for s in systems])
        assert statistics.soft_pairwise_accuracy(gold, scores) == pytest.approx(value, abs=1e-12)


def test_bootstrap_interval_equals_mt_metrics_eval_on_the_same_resamples(evs):
    gold = evs.human[("xqm", "seg")][ALL]
    for metric, expected in EXPECTED["triplet_bootstrap"].items():
        interval = statistics.bootstrap_interval(
            "pearson", gold, evs.metrics[(metric, "seg")][ALL], resamples=EXPECTED["resamples"], seed=EXPECTED["seed"]
        )
        assert (interval.low, interval.high) == pytest.approx((expected["low"], expected["high"]), abs=1e-12)
        assert interval.as_dict()["parameters"] == {
            "resamples": EXPECTED["resamples"],
            "seed": EXPECTED["seed"],
            "alpha": 0.05,
            "method": "percentile bootstrap over segments",
        }


def test_a_bad_score_line_names_the_file_and_line(tmp_path):
    d = Path(evalset.write(make_evalset.build(), str(tmp_path)))
    path = d / "metric-scores" / "en-de" / "noise3-refA.seg.score"
    lines = path.read_text().splitlines()
    lines[4] = "triplets not-a-number"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(evalset.EvalSetError, match=r"noise3-refA\.seg\.score, line 5: 'not-a-number'"):
        evalset.read(str(tmp_path), "xqmeval-synthetic", "en-de")
