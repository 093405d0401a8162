"""Gold items: planting at a rate, their known answers, idempotence, and per-annotator scores."""

from __future__ import annotations

import math

import pytest

from annotation.agreement import selectors as sel
from annotation.models import ReviewDecision
from annotation.review import gold
from core.domain.units import diff_edit
from injection.models import Candidate, InjectionRun


@pytest.mark.parametrize("rate", [0, -0.1, 0.51, math.nan, "0.1"])
def test_bad_rate_writes_nothing(world, rate):
    with pytest.raises(ValueError, match="rate"):
        gold.plant_gold(world.project, rate)
    assert not InjectionRun.objects.filter(name=gold.GOLD_RUN_NAME).exists()
    assert not Candidate.objects.filter(is_gold=True).exists()


def test_plant_gold_known_answers_and_idempotence(world):
    result = gold.plant_gold(world.project, 0.5, seed=1)
    golds = list(Candidate.objects.filter(is_gold=True).select_related("segment__direction__target", "run"))
    assert result.total == len(golds) == 6 + 4  # half of 12 de and 8 zh candidates
    assert {g.run.backend for g in golds} == {"gold"}
    for g in golds:
        language = g.segment.direction.target.code
        if g.gold_answer == "reject":
            assert g.text == g.segment.reference and g.span_start == g.span_end and g.edit_text == ""
        else:
            assert g.gold_answer == "accept"
            edit = diff_edit(g.segment.reference, g.text, language)
            assert edit is not None, "an accept gold item must change the reference"
            # the stored span is the real edit of the copied candidate
            assert (g.span_start, g.span_end, g.edit_text) == (
                edit.start,
                edit.end,
                " ".join(edit.replacement) if language == "de" else "".join(edit.replacement),
            )
            assert g.external_id.startswith("gold:copy of accepted candidate")
    assert sorted(g.gold_answer for g in golds).count("reject") == 5
    again = gold.plant_gold(world.project, 0.5, seed=1)
    assert again.total == 0 and Candidate.objects.filter(is_gold=True).count() == 10


def test_omission_fallback_when_nothing_accepted(world):
    Candidate.objects.filter(is_gold=False).update(status=Candidate.Status.PENDING)
    gold.plant_gold(world.project, 0.25, directions=["en-de"])
    accept = Candidate.objects.get(is_gold=True, gold_answer="accept")
    ref = accept.segment.reference  # "Das ist ein kleiner Test Satz hier": 7 tokens, second half = 4 tokens from 3
    assert accept.error_type == "Omission" and accept.text == "Das ist ein"
    assert (accept.span_start, accept.span_end, accept.edit_text) == (3, 7, "")
    assert diff_edit(ref, accept.text, "de").start == 3


def test_gold_is_scored_and_kept_out_of_agreement(world):
    before = sel.project_report(world.project, use_cache=False)
    gold.plant_gold(world.project, 0.5, seed=2)
    anna = world.users["anna_de"]
    de_golds = list(Candidate.objects.filter(is_gold=True, segment__direction__code="en-de").order_by("id"))
    # anna answers the first five wrongly, the sixth rightly
    for i, g in enumerate(de_golds):
        wrong = "accept" if g.gold_answer == "reject" else "reject"
        ReviewDecision.objects.create(
            candidate=g, reviewer=anna, round=world.rounds[1], decision=wrong if i < 5 else g.gold_answer
        )
        ReviewDecision.objects.create(
            candidate=g, reviewer=world.users["ben_de"], round=world.rounds[1], decision=g.gold_answer
        )
    after = sel.project_report(world.project, use_cache=False)
    assert after["languages"] == before["languages"]
    assert after["error_types"] == before["error_types"]
    row = next(r for r in after["annotators"] if r["annotator"] == "anna_de")
    assert (row["gold_items"], row["gold_correct"]) == (6, 1)
    assert row["gold_score"] == pytest.approx(1 / 6)
    assert "gold_failures" in row["flags"].split(";")
    assert row["accept_rate"] == next(r for r in before["annotators"] if r["annotator"] == "anna_de")["accept_rate"]
    ben = next(r for r in after["annotators"] if r["annotator"] == "ben_de")
    assert ben["gold_score"] == 1.0 and "gold_failures" not in ben["flags"]
    overview = {(r["direction"], r["gold_answer"]): r for r in gold.gold_overview(world.project)}
    total = sum(r["decisions"] for r in overview.values())
    assert total == 12 and sum(r["correct"] for r in overview.values()) == 7


def test_outlier_rules():
    base = {
        "decisions": 20,
        "accept_rate": 0.95,
        "peer_accept_rate": 0.6,
        "pairs_with_others": 20,
        "agreement_with_others": 0.5,
        "adjudicated_items": 5,
        "agreement_with_adjudication": 0.4,
        "timed_decisions": 20,
        "median_seconds_per_item": 1.5,
        "gold_items": 5,
        "gold_score": 0.6,
    }
    assert [r.name for r in sel.OUTLIER_RULES if r.applies(base)] == [
        "accept_rate_vs_peers",
        "low_agreement",
        "disagrees_with_adjudication",
        "too_fast",
        "gold_failures",
    ]
    few = {
        **base,
        "decisions": 3,
        "pairs_with_others": 3,
        "adjudicated_items": 1,
        "timed_decisions": 2,
        "gold_items": 2,
    }
    assert [r.name for r in sel.OUTLIER_RULES if r.applies(few)] == []  # too little evidence to flag anyone
    fine = {
        **base,
        "accept_rate": 0.65,
        "agreement_with_others": 0.9,
        "agreement_with_adjudication": 0.9,
        "median_seconds_per_item": 8,
        "gold_score": 1.0,
    }
    assert [r.name for r in sel.OUTLIER_RULES if r.applies(fine)] == []
