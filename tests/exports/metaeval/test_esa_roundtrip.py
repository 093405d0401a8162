"""An export with people's scores and error spans round-trips: Google's mt-metrics-eval, from a checkout
(``exports/metaeval/reference/make_esa_fixtures.py``), loaded the ESA and MQM scores and ratings of an EvalSet the
platform's exporter wrote (``tests/fixtures/mtme-esa/``, from ``make_esa_evalset``); what it read and the
correlations it computed with ESA and MQM as the gold equal the platform's, deterministic statistics to 1e-12,
permutation p-values exactly."""

import filecmp
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from annotation.spans.domain import mqm_score
from exports.metaeval import evalset
from exports.metaeval.reference import make_esa_evalset, make_evalset

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "mtme-esa"
EXPECTED = json.loads((ROOT / "expected.json").read_text())
ALL = evalset.ALL_TRIPLETS


@pytest.fixture(scope="module")
def evs():
    return evalset.read(str(ROOT), EXPECTED["evalset"], EXPECTED["lp"])


def test_the_exporter_writes_the_evalset_the_fixtures_were_computed_on(tmp_path):
    written = evalset.write(make_esa_evalset.build(), str(tmp_path))
    names = set()
    for folder, _, files in os.walk(written):
        for name in files:
            path = Path(folder) / name
            names.add(str(path.relative_to(tmp_path)))
            assert filecmp.cmp(path, ROOT / path.relative_to(tmp_path), shallow=False), path
    assert {n for n in names if n.endswith(".rating")} == {
        f"xqmeval-esa/human-scores/en-de.{r}.seg.rating" for r in EXPECTED["rating_names"]
    }


def _values(result: dict) -> dict[str, float]:
    return {row["metric"]: row["value"] for row in result["ranking"]}


def test_mt_metrics_eval_reads_the_ratings_the_platform_wrote(evs):
    assert sorted(evs.ratings) == EXPECTED["rating_names"] == ["esa", "esa.2", "mqm", "mqm.2"]
    triplets, _, _ = make_evalset.synthetic()
    source = make_esa_evalset.ratings(triplets)
    row = {t.id: i for i, t in enumerate(triplets)}
    for name in EXPECTED["rating_names"]:
        assert evs.ratings[name][ALL] == EXPECTED["ratings"][name]
        assert evs.rater_ids[name][ALL] == EXPECTED["rater_ids"][name]
        for system, digest in EXPECTED["ratings_sha256"][name].items():
            text = json.dumps(evs.ratings[name][system], sort_keys=True)
            assert hashlib.sha256(text.encode()).hexdigest() == digest, (name, system)
    # and what mt-metrics-eval read is what the annotators marked: a triplet's raters in id order, slot by slot
    for protocol, ratings in source.items():
        by_triplet = {}
        for r in ratings:
            by_triplet.setdefault(r.triplet_id, []).append(r)
        for triplet_id, rs in by_triplet.items():
            for slot, r in enumerate(sorted(rs, key=lambda r: r.rater)):
                name = protocol if slot == 0 else f"{protocol}.{slot + 1}"
                assert EXPECTED["rater_ids"][name][row[triplet_id]] == r.rater
                assert EXPECTED["ratings"][name][row[triplet_id]] == {"errors": [e.as_dict() for e in r.errors]}
    assert sum(r is not None for r in EXPECTED["ratings"]["esa.2"]) > 20  # second raters do occur


def test_mqm_scores_follow_mt_metrics_eval_weights_with_the_floor(evs):
    for name, penalties in EXPECTED["mqm_penalties"].items():
        for rating, penalty in zip(evs.ratings[name][ALL], penalties):
            if rating is not None:
                assert mqm_score(e["severity"] for e in rating["errors"]) == max(-25.0, -penalty)
    assert any(p > 25 for ps in EXPECTED["mqm_penalties"].values() for p in ps if p is not None)  # the floor acts


@pytest.mark.parametrize("gold", ["esa", "mqm"])
def test_segment_and_system_correlations_against_people_equal_mt_metrics_eval(evs, gold):
    for metric, expected in EXPECTED[gold]["segment"].items():
        result = evalset.meta_evaluate(evs, gold, "seg", "pearson", resamples=10)
        assert result["n"] == expected["n"]
        assert _values(result)[metric] == pytest.approx(expected["pearson"], abs=1e-12)
        for name in ("spearman", "kendall-b"):
            result = evalset.meta_evaluate(evs, gold, "seg", name, resamples=10)
            assert _values(result)[metric] == pytest.approx(expected[name], abs=1e-12)
    for metric, expected in EXPECTED[gold]["system"].items():
        for name, value in expected.items():
            result = evalset.meta_evaluate(evs, gold, "sys", name, resamples=10)
            assert result["systems"] == len(EXPECTED["systems"])
            assert _values(result)[metric] == pytest.approx(value, abs=1e-12), name


@pytest.mark.parametrize("gold", ["esa", "mqm"])
def test_permutation_clusters_against_people_equal_mt_metrics_eval(evs, gold):
    result = evalset.meta_evaluate(
        evs, gold, "seg", "pearson", resamples=EXPECTED["resamples"], seed=EXPECTED["seed"], alpha=EXPECTED["alpha"]
    )
    expected = EXPECTED[gold]["segment_clusters"]
    assert [row["metric"] for row in result["ranking"]] == expected["order"]
    assert [row["cluster"] for row in result["ranking"]] == expected["ranks"]
    order = expected["order"]
    for i, j in zip(*np.triu_indices(len(order), 1)):
        assert result["p_values"][f"{order[i]} > {order[j]}"] == expected["p_values"][i][j]
    assert any(0 < p < 1 for row in expected["p_values"] for p in row)  # a p-value the draws decide


def test_a_bad_rating_line_names_the_file_and_line(tmp_path):
    d = Path(evalset.write(make_esa_evalset.build(), str(tmp_path)))
    path = d / "human-scores" / "en-de.esa.seg.rating"
    lines = path.read_text().splitlines()

    for bad, message in [
        ("triplets\t{not json", ": not JSON"),
        ('triplets\t{"errors": [{"start": "1", "end": 2}]}\tx', ", error 1: start must be int"),
        ('triplets\t{"errors": [{"start": 3, "end": 2}]}\tx', r", error 1: \[3, 2\) is not a span"),
        ('triplets\t{"spans": []}\tx', ": a rating is an object with one key, errors"),
        ("nobody\tNone", ": unknown system 'nobody'"),
    ]:
        lines[3] = bad
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(evalset.EvalSetError, match=rf"en-de\.esa\.seg\.rating, line 4{message}"):
            evalset.read(str(tmp_path), "xqmeval-esa", "en-de")


def test_a_rating_that_does_not_fit_its_triplet_is_refused():
    triplets, systems, scores = make_evalset.synthetic()
    t = triplets[0]
    cases = [
        (evalset.HumanRating(t.id, "ann1", 50, [evalset.RatingError(0, len(t.translation) + 1)]), "lies outside"),
        (evalset.HumanRating("nope", "ann1", 50), "triplet nope is not in the direction"),
        (evalset.HumanRating(t.id, "two words", 50), "must be one word"),
        (evalset.HumanRating(t.id, "ann1", float("nan")), "not finite"),
    ]
    for rating, message in cases:
        with pytest.raises(evalset.EvalSetError, match=message):
            evalset.from_triplets("x", "en-de", triplets, systems, scores, {"esa": [rating]})
    with pytest.raises(evalset.EvalSetError, match="rated twice by ann1"):
        evalset.from_triplets(
            "x", "en-de", triplets, systems, scores, {"esa": [evalset.HumanRating(t.id, "ann1", 1)] * 2}
        )
    with pytest.raises(evalset.EvalSetError, match="human scorer 'xqm'"):
        evalset.from_triplets("x", "en-de", triplets, systems, scores, {"xqm": []})
