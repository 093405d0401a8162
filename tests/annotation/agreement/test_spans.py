"""Span agreement (annotation.agreement.domain.spans) against hand-worked cases and independent computations: the
``krippendorff`` package on the raters × characters label matrix, and set arithmetic over annotator pairs."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import krippendorff
import numpy as np
import pytest

from annotation.agreement.domain import spans as sp
from annotation.agreement.domain import statistics
from tests.support.asserts import every

S = sp.Span


def test_character_labels_take_the_most_severe_span_and_put_the_source_after_the_translation():
    item = sp.Item("i", mt_length=10, src_length=4)
    labels = sp.character_labels(
        item, [S(2, 5, "minor"), S(4, 7, "major"), S(9, 9, "major"), S(1, 3, "minor", "source")]
    )
    assert labels.tolist() == [0, 0, 1, 1, 2, 2, 2, 0, 0, 0] + [0, 1, 1, 0]


@pytest.mark.parametrize(
    ("span", "message"),
    [
        (S(3, 11, "minor"), r"\[3, 11\) lies outside the target text of 10"),
        (S(0, 5, "minor", "source"), r"\[0, 5\) lies outside the source text of 4"),
        (S(5, 4, "minor"), r"\[5, 4\) lies outside"),
        (S(0, 1, "severe"), "severity 'severe'"),
        (S(0, 1, "minor", "ref"), "side 'ref'"),
    ],
)
def test_a_bad_span_is_named(span, message):
    with pytest.raises(ValueError, match=message):
        sp.character_labels(sp.Item("i", 10, 4), [span], "ann1")


def test_character_f1_hand_worked():
    items = [sp.Item("i", 10)]
    two = [sp.Annotation("i", "a", [S(0, 4, "minor")]), sp.Annotation("i", "b", [S(2, 6, "major")])]
    assert sp.character_f1(items, two) == pytest.approx(0.5)  # 2·2 / (4 + 4)
    assert sp.character_f1(items, two, severity=True) == 0.0  # the shared characters differ in severity
    same = [sp.Annotation("i", "a", [S(0, 4, "major")]), sp.Annotation("i", "b", [S(2, 6, "major")])]
    assert sp.character_f1(items, same, severity=True) == pytest.approx(0.5)
    # a third annotator who marks nothing: pairs ab (2 shared, 8 marked), ac (0, 4), bc (0, 4) -> 4/16
    three = two + [sp.Annotation("i", "c", [])]
    assert sp.character_f1(items, three) == pytest.approx(0.25)
    # nobody marked anything: undefined, not 1
    assert sp.character_f1(items, [sp.Annotation("i", "a"), sp.Annotation("i", "b")]) is None


def test_character_alpha_hand_worked():
    # A labels [0,1,1,0], B [0,1,0,0]: coincidences o00 = 4, o11 = 2, o01 = o10 = 1; n0 = 5, n1 = 3, n = 8.
    # D_o = 2/8, D_e = 2·5·3/(8·7) = 30/56, α = 1 − (2/8)/(30/56) = 8/15.
    items = [sp.Item("i", 4)]
    annotations = [sp.Annotation("i", "a", [S(1, 3, "minor")]), sp.Annotation("i", "b", [S(1, 2, "minor")])]
    assert sp.character_alpha(items, annotations) == pytest.approx(float(Fraction(8, 15)), abs=1e-12)
    # one label throughout: no variation, undefined
    assert sp.character_alpha(items, [sp.Annotation("i", "a"), sp.Annotation("i", "b")]) is None


def test_injected_agreement_hand_worked():
    items = [sp.Item("i", 10, injected=[(2, 4), (7, 9)], errors=2), sp.Item("ref", 5, injected=[], errors=0)]
    annotations = [sp.Annotation("i", "a", [S(3, 5, "major")]), sp.Annotation("ref", "a", [S(0, 2, "minor")])]
    result = sp.injected_agreement(items, annotations, resamples=0)
    assert result["precision"].estimate == pytest.approx(1 / 4)  # char 3 of 2 + 2 marked
    assert result["recall"].estimate == pytest.approx(1 / 4)  # char 3 of the 4 injected
    assert result["f1"].estimate == pytest.approx(2 / 8)
    assert result["found"].estimate == pytest.approx(1 / 2)  # the first error touched, the second not


def test_score_by_errors_hand_worked():
    items = [sp.Item("a", 3, errors=0), sp.Item("b", 3, errors=0), sp.Item("c", 3, errors=2), sp.Item("d", 3)]
    annotations = [
        sp.Annotation("a", "x", score=90),
        sp.Annotation("a", "y", score=100),
        sp.Annotation("b", "x", score=80),
        sp.Annotation("c", "x", score=40),
        sp.Annotation("d", "x", score=10),  # no known errors: not in the table
    ]
    rows = sp.score_by_errors(items, annotations, resamples=0)
    assert [(r["errors"], r["items"], r["scores"], r["estimate"]) for r in rows] == [(0, 2, 3, 90.0), (2, 1, 1, 40.0)]


def test_an_annotation_of_an_unknown_item_or_a_second_by_one_annotator_is_refused():
    with pytest.raises(ValueError, match="item 'x' is not among the items"):
        sp.character_f1([sp.Item("i", 3)], [sp.Annotation("x", "a")])
    with pytest.raises(ValueError, match="annotator 'a' annotated it twice"):
        sp.character_f1([sp.Item("i", 3)], [sp.Annotation("i", "a"), sp.Annotation("i", "a")])


# ---- against independent computations on random data ----------------------------------------------------


def _random_campaign(seed: int, n_items: int = 40):
    rng = np.random.default_rng(seed)
    items, annotations = [], []
    for i in range(n_items):
        mt, src = int(rng.integers(8, 60)), int(rng.integers(0, 30))
        injected = [(a, a + int(rng.integers(1, 5))) for a in sorted(rng.choice(mt - 5, 2, replace=False))]
        items.append(sp.Item(i, mt, src, injected=injected[: i % 3], errors=i % 3))
        for annotator in range(int(rng.integers(1, 5))):  # 1 to 4 annotators: some items not pairable
            spans = []
            for _ in range(int(rng.integers(0, 4))):
                side = "source" if src and rng.random() < 0.2 else "target"
                size = src if side == "source" else mt
                a = int(rng.integers(0, size))
                spans.append(S(a, min(size, a + int(rng.integers(0, 8))), str(rng.choice(["minor", "major"])), side))
            annotations.append(sp.Annotation(i, annotator, spans, float(rng.integers(0, 101))))
    return items, annotations


def _reliability_data(items, annotations):
    """Raters × every character of every item, NaN where a rater did not annotate the item (the package's input)."""
    width = sum(it.mt_length + it.src_length for it in items)
    data = np.full((4, width), np.nan)
    offset = 0
    for it in items:
        length = it.mt_length + it.src_length
        for a in annotations:
            if a.item == it.id:
                data[a.annotator, offset : offset + length] = sp.character_labels(it, a.spans)
        offset += length
    return data


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_character_alpha_equals_krippendorff_on_the_character_label_vectors(seed, level):
    items, annotations = _random_campaign(seed)
    expected = krippendorff.alpha(reliability_data=_reliability_data(items, annotations), level_of_measurement=level)
    assert sp.character_alpha(items, annotations, level) == pytest.approx(expected, abs=1e-12)


def test_character_alpha_interval_equals_krippendorff_on_each_resample_of_items():
    items, annotations = _random_campaign(4, n_items=25)
    resamples, seed = 60, 11
    got = sp.character_alpha_ci(items, annotations, resamples=resamples, seed=seed)
    pairable = [it for it in items if sum(a.item == it.id for a in annotations) >= 2]
    counts = statistics.resample_counts(len(pairable), resamples, seed)
    values = []
    for row in counts:
        picked = [(copy, it) for it, c in zip(pairable, row) for copy in range(int(c))]
        clones = [sp.Item((copy, it.id), it.mt_length, it.src_length) for copy, it in picked]
        cloned = [
            sp.Annotation((copy, it.id), a.annotator, a.spans)
            for copy, it in picked
            for a in annotations
            if a.item == it.id
        ]
        values.append(
            krippendorff.alpha(reliability_data=_reliability_data(clones, cloned), level_of_measurement="nominal")
        )
    low, high = np.quantile(values, [0.025, 0.975])
    assert (got.low, got.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert got.defined == resamples


def _pairwise_f1(items, annotations, severity=False):
    shared = marked = 0
    for it in items:
        sets = []
        for a in annotations:
            if a.item == it.id:
                labels = sp.character_labels(it, a.spans)
                sets.append({(i, int(v) if severity else 1) for i, v in enumerate(labels) if v})
        for x, y in combinations(sets, 2):
            shared += 2 * len(x & y)
            marked += len(x) + len(y)
    return shared / marked if marked else None


@pytest.mark.parametrize("severity", [False, True])
def test_character_f1_and_its_interval_equal_set_arithmetic_over_annotator_pairs(severity):
    items, annotations = _random_campaign(5, n_items=30)
    got = sp.character_f1_ci(items, annotations, severity=severity, resamples=80, seed=3)
    assert got.estimate == pytest.approx(_pairwise_f1(items, annotations, severity), abs=1e-12)
    pairable = [it for it in items if sum(a.item == it.id for a in annotations) >= 2]

    def f1(picked):
        clones = [sp.Item((n, it.id), it.mt_length, it.src_length) for n, it in enumerate(picked)]
        cloned = [
            sp.Annotation((n, it.id), a.annotator, a.spans)
            for n, it in enumerate(picked)
            for a in annotations
            if a.item == it.id
        ]
        return _pairwise_f1(clones, cloned, severity)

    brute = statistics.bootstrap_ci(pairable, f1, resamples=80, seed=3)
    assert (got.low, got.high) == (pytest.approx(brute.low, abs=1e-12), pytest.approx(brute.high, abs=1e-12))


def test_score_alpha_equals_krippendorff_interval():
    items, annotations = _random_campaign(6)
    data = np.full((4, len(items)), np.nan)
    for a in annotations:
        data[a.annotator, a.item] = a.score
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert sp.score_alpha_ci(items, annotations, resamples=0).estimate == pytest.approx(expected, abs=1e-12)
    # the interval from sums of squares is the coincidence matrices' interval on the same resamples
    got = sp.score_alpha_ci(items, annotations, resamples=200, seed=5)
    units = [[a.score for a in annotations if a.item == it.id] for it in items]
    reference = statistics.krippendorff_alpha_units_ci(units, "interval", resamples=200, seed=5)
    assert (got.low, got.high) == (pytest.approx(reference.low, abs=1e-9), pytest.approx(reference.high, abs=1e-9))


def test_injected_agreement_equals_set_arithmetic():
    items, annotations = _random_campaign(7)
    both = marked = injected = found = errors = 0
    for it in items:
        truth = {i for a, b in it.injected for i in range(a, b)}
        for a in annotations:
            if a.item == it.id:
                mine = {i for s in a.spans if s.side == "target" for i in range(s.start, s.end)}
                both, marked, injected = both + len(mine & truth), marked + len(mine), injected + len(truth)
                found += sum(1 for x, y in it.injected if mine & set(range(x, y)))
                errors += len(it.injected)
    got = sp.injected_agreement(items, annotations, resamples=50)
    assert got["precision"].estimate == pytest.approx(both / marked)
    assert got["recall"].estimate == pytest.approx(both / injected)
    assert got["f1"].estimate == pytest.approx(2 * both / (marked + injected))
    assert got["found"].estimate == pytest.approx(found / errors)
    assert every(i.low <= i.estimate <= i.high for i in got.values())


def test_the_report_holds_every_statistic_with_an_interval():
    items, annotations = _random_campaign(8)
    report = sp.report(items, annotations, resamples=50)
    for name in ("character_f1", "character_f1_severity", "character_alpha", "score_alpha"):
        value = report[name]
        assert value["low"] <= value["estimate"] <= value["high"], name
    assert report["items"] == 40 and report["annotations"] == len(annotations)
    assert [r["errors"] for r in report["score_by_errors"]] == [0, 1, 2]
    assert not math.isnan(report["injected"]["found"]["estimate"])
