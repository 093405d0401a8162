"""The admin page's per-annotator statistics: one grouped query on PostgreSQL, equal to the Python
computation over every decision (``exact_annotator_stats``, the SQLite path)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import ReviewDecision
from annotation.review import selectors
from core.services import project_directions_add, project_ensure, user_create
from tests.annotation.review.factories import make_candidates

pytestmark = pytest.mark.django_db


def put(candidate, reviewer, decision, time_spent_ms, *, minutes_ago=0, source=ReviewDecision.Source.ANNOTATOR):
    d = ReviewDecision.objects.create(
        candidate=candidate,
        reviewer=reviewer,
        decision=decision,
        source=source,
        is_final=source != ReviewDecision.Source.ANNOTATOR,
        time_spent_ms=time_spent_ms,
    )
    ReviewDecision.objects.filter(pk=d.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))


def test_grouped_statistics_equal_the_computation_over_every_decision(project, languages, annotator_de):
    de = make_candidates(project, languages, "en-de")
    zh = make_candidates(project, languages, "en-zh")
    both = user_create(username="bo_de_zh", password="bo-pass-12345", languages=["de", "zh"])
    untimed = user_create(username="cy_de", password="cy-pass-12345", languages=["de"])
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
    other, _ = project_ensure(name="other")
    project_directions_add(project=other, codes=["en-de"])
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


# ---- the admin page's figures: live below the limit, what the refresh computed above it ----------------


@pytest.fixture
def large(settings):
    """Every project counts as large and workers refresh the figures (PostgreSQL only: elsewhere there is
    no O(1) change token and the page computes the figures on every view)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("SQLite computes the figures on every view")
    settings.REVIEW_FIGURES_LIVE_LIMIT = 1
    settings.CELERY_TASK_ALWAYS_EAGER = False


def test_a_small_project_computes_its_figures_on_every_view(project, languages, annotator_de):
    de = make_candidates(project, languages, "en-de")
    put(de[0], annotator_de, "accept", 4000)
    first = selectors.decision_figures(project)
    assert first.fresh and [a["decisions"] for a in first.annotators] == [1]
    put(de[1], annotator_de, "reject", 2000)  # a write the page has not seen
    second = selectors.decision_figures(project)
    assert second.fresh and [a["decisions"] for a in second.annotators] == [2]
    now = timezone.now()
    assert selectors.decision_figures(project, now=now).annotators == selectors.exact_annotator_stats(project, now=now)


def test_a_large_project_shows_the_last_computed_figures_with_a_live_last_hour(project, languages, annotator_de, large):
    de = make_candidates(project, languages, "en-de")
    put(de[0], annotator_de, "accept", 4000, minutes_ago=300)
    put(de[1], annotator_de, "reject", 4000, minutes_ago=300)
    computed = selectors.compute_decision_figures(project)  # what the refresh task does
    assert [a["decisions"] for a in computed.annotators] == [2] and computed.annotators[0]["last_hour"] == 0
    unchanged = selectors.decision_figures(project)
    assert unchanged.fresh and unchanged.computed_at == computed.computed_at
    put(de[2], annotator_de, "accept", 1000)  # now: not in the kept figures, but in the last hour
    stale = selectors.decision_figures(project)
    assert not stale.fresh and stale.computed_at == computed.computed_at
    assert [(a["decisions"], a["last_hour"]) for a in stale.annotators] == [(2, 1)]
    selectors.compute_decision_figures(project)
    again = selectors.decision_figures(project)
    assert again.fresh and [(a["decisions"], a["last_hour"]) for a in again.annotators] == [(3, 1)]


def test_changing_a_decision_makes_the_kept_figures_stale(project, languages, annotator_de, large):
    from annotation.review import services

    de = make_candidates(project, languages, "en-de")
    services.decision_submit(
        user=annotator_de, candidate_id=de[0].pk, decision="accept", idempotency_key="first", time_spent_ms=1000
    )
    selectors.compute_decision_figures(project)
    assert selectors.decision_figures(project).fresh
    services.decision_submit(
        user=annotator_de, candidate_id=de[0].pk, decision="reject", idempotency_key="second", time_spent_ms=1000
    )  # a change: no new row
    assert not selectors.decision_figures(project).fresh
    selectors.compute_decision_figures(project)
    figures = selectors.decision_figures(project)
    assert figures.fresh and figures.annotators[0]["accept_percent"] == 0


def test_deleting_decisions_makes_the_kept_figures_stale(project, languages, annotator_de, large):
    de = make_candidates(project, languages, "en-de")
    put(de[0], annotator_de, "accept", 4000)
    put(de[1], annotator_de, "accept", 4000)
    selectors.compute_decision_figures(project)
    assert selectors.decision_figures(project).fresh
    de[1].delete()  # its decision goes with it (cascade)
    assert not selectors.decision_figures(project).fresh


def test_without_workers_a_large_project_computes_its_figures_on_the_page(project, languages, annotator_de, settings):
    settings.REVIEW_FIGURES_LIVE_LIMIT = 1
    settings.CELERY_TASK_ALWAYS_EAGER = True  # no broker: nothing refreshes them in the background
    de = make_candidates(project, languages, "en-de")
    put(de[0], annotator_de, "accept", 4000)
    selectors.compute_decision_figures(project)
    put(de[1], annotator_de, "accept", 4000)
    figures = selectors.decision_figures(project)
    assert figures.fresh and [a["decisions"] for a in figures.annotators] == [2]


def test_the_admin_page_marks_kept_figures_with_their_time(project, languages, annotator_de, admin_user, large):
    from django.test import Client
    from django.urls import reverse

    admin_client = Client()
    admin_client.force_login(admin_user)
    de = make_candidates(project, languages, "en-de")
    put(de[0], annotator_de, "accept", 4000)
    url = reverse("review:manage", args=[project.name])
    page = admin_client.get(url)
    assert page.context["figures"].fresh and 'id="figures-as-of"' not in page.content.decode()
    put(de[1], annotator_de, "accept", 4000)
    page = admin_client.get(url)
    html = page.content.decode()
    assert 'id="figures-as-of"' in html and page.context["annotators"][0]["decisions"] == 1
    assert page.context["annotators"][0]["last_hour"] == 2  # live
