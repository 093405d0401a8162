"""The admin page's per-annotator statistics: one grouped query on PostgreSQL, equal to the Python
computation over every decision (``exact_annotator_stats``, the SQLite path)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import ReviewDecision
from annotation.review import selectors
from core.services import add_directions, create_user, ensure_project
from tests.review.factories import make_candidates

pytestmark = pytest.mark.django_db


def put(candidate, reviewer, decision, time_spent_ms, *, minutes_ago=0, source=ReviewDecision.Source.ANNOTATOR):
    d = ReviewDecision.objects.create(candidate=candidate, reviewer=reviewer, decision=decision, source=source,
                                      is_final=source != ReviewDecision.Source.ANNOTATOR, time_spent_ms=time_spent_ms)
    ReviewDecision.objects.filter(pk=d.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))


def test_grouped_statistics_equal_the_computation_over_every_decision(project, languages, annotator_de):
    de = make_candidates(project, languages, "en-de")
    zh = make_candidates(project, languages, "en-zh")
    both = create_user("bo_de_zh", "bo-pass-12345", languages=["de", "zh"])
    untimed = create_user("cy_de", "cy-pass-12345", languages=["de"])
    # anna: an even number of timed decisions (the median is the mean of the middle two), one untimed, one old
    put(de[0], annotator_de, "accept", 4000)
    put(de[1], annotator_de, "reject", 6000, minutes_ago=30)
    put(de[2], annotator_de, "accept", None)
    put(de[3], annotator_de, "accept", 1000, minutes_ago=90)
    put(de[4], annotator_de, "reject", 9000, minutes_ago=61)
    # bo: two languages, an odd count, a zero time (not a measurement)
    put(de[0], both, "reject", 2500)
    put(zh[0], both, "accept", 0)
    put(zh[1], both, "accept", 3500, minutes_ago=5)
    put(de[2], both, "accept", 1234)
    # cy: never timed
    put(de[1], untimed, "accept", None)
    # neither an imported decision nor another project's decisions count
    put(de[5], None, "accept", 777, source=ReviewDecision.Source.IMPORTED)
    other, _ = ensure_project("other")
    add_directions(other, ["en-de"])
    put(make_candidates(other, languages, "en-de", count=1)[0], annotator_de, "reject", 100000)

    now = timezone.now()
    stats = selectors.annotator_stats(project, now=now)
    assert stats == selectors.exact_annotator_stats(project, now=now)
    by = {r["username"]: r for r in stats}
    assert list(by) == ["anna_de", "bo_de_zh", "cy_de"]
    assert by["anna_de"]["decisions"] == 5 and by["anna_de"]["accept_percent"] == 60
    assert by["anna_de"]["median_seconds"] == 5.0  # 1000, 4000, 6000, 9000
    assert by["anna_de"]["per_hour"] == pytest.approx(5 / (20000 / 3_600_000))
    assert by["anna_de"]["last_hour"] == 3
    assert by["bo_de_zh"]["languages"] == "de, zh" and by["bo_de_zh"]["median_seconds"] == 2.5  # 1234, 2500, 3500
    assert by["cy_de"]["median_seconds"] is None and by["cy_de"]["per_hour"] is None
