"""On the released XQ-MEval en-de candidates: imported final decisions are not raters; gold items planted
from them carry the right known answers; live reviews on top give the expected agreement."""

from __future__ import annotations

import random

import pytest

from annotation.agreement import selectors as sel
from annotation.agreement.domain import statistics as ag
from annotation.models import ReviewDecision, ReviewRound
from annotation.review import gold
from core.domain.units import diff_edit
from injection.models import Candidate

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]


@pytest.fixture
def xq_de(shared_data, db):
    from annotation.review.xqmeval_import.services import xqmeval_directory_read, xqmeval_import

    files = [f for f in xqmeval_directory_read(directory=shared_data) if f[0].startswith("en-de-")]
    lines = (shared_data / "decisions.csv").read_text(encoding="utf-8").splitlines(True)
    decisions = "".join(line for i, line in enumerate(lines) if i == 0 or line.startswith("de,")).encode()
    result = xqmeval_import(project_name="xq", files=files, decisions=("decisions.csv", decisions))
    assert result.candidates_created == 816
    from core.models import Project

    return Project.objects.get(name="xq")


def test_imported_decisions_give_no_agreement(xq_de):
    report = sel.project_report(xq_de, use_cache=False)
    assert ReviewDecision.objects.filter(source="imported").count() == 816
    assert report["languages"] == [] and report["annotators"] == [] and report["reviewer_pairs"] == []


def test_gold_from_real_candidates_and_live_reviews(xq_de, annotator_de):
    from core.services import user_create

    result = gold.plant_gold(xq_de, 0.1, seed=42)
    assert result.total == round(0.1 * 816) and not result.skipped
    for g in Candidate.objects.filter(is_gold=True).select_related("segment"):
        if g.gold_answer == "reject":
            assert g.text == g.segment.reference
        else:
            edit = diff_edit(g.segment.reference, g.text, "de")
            assert edit is not None and (edit.start, edit.end) == (g.span_start, g.span_end)
            source = Candidate.objects.get(pk=int(g.external_id.rsplit(" ", 1)[1]))
            assert source.status == Candidate.Status.ACCEPTED and not source.flags and source.text == g.text
    # two reviewers: ben follows the released decision; anna flips one in ten
    ben = user_create(username="ben_de", password="ben-pass-123", languages=["de"])
    round1 = ReviewRound.objects.create(project=xq_de, number=1)
    rng = random.Random(5)
    pairs = []
    for c in Candidate.objects.filter(segment__project=xq_de, is_gold=False).order_by("id")[:200]:
        truth = "accept" if c.status == Candidate.Status.ACCEPTED else "reject"
        other = truth if rng.random() > 0.1 else ("reject" if truth == "accept" else "accept")
        ReviewDecision.objects.create(candidate=c, reviewer=ben, round=round1, decision=truth)
        ReviewDecision.objects.create(candidate=c, reviewer=annotator_de, round=round1, decision=other)
        pairs.append((truth, other))
    report = sel.project_report(xq_de, use_cache=False)
    de = report["languages"][0]
    assert de["units"] == 200
    assert de["percent_agreement"] == pytest.approx(sum(a == b for a, b in pairs) / 200, abs=1e-12)
    assert de["krippendorff_alpha"] == pytest.approx(
        ag.krippendorff_alpha([[a for a, _ in pairs], [b for _, b in pairs]], "nominal"), abs=1e-9
    )
