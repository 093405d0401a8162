"""The review change log (PostgreSQL triggers, ``annotation.review.changes``): every write to a row the review
figures and the agreement report read changes its project's token, whoever writes it (services, the ORM,
``COPY``); writes that change nothing they read do not; a transaction that commits after a later one still
changes the token; and pages of a large project decide fresh or stale from the token alone, without
reading the decisions or ratings."""

from __future__ import annotations

import re
import uuid

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.agreement import selectors as sel
from annotation.agreement.tasks import refresh_agreement
from annotation.models import LikertRating, RatingItem, ReviewChange, ReviewDecision, ReviewRound
from annotation.review import changes, services
from core import bulk
from core.services import project_directions_add, project_ensure
from exports.models import BenchmarkChange
from injection.models import Candidate, FlagChange
from tests.annotation.review.factories import make_candidates
from tests.support.asserts import every


@pytest.fixture(autouse=True)
def postgresql_only(db):
    if not changes.available():
        pytest.skip("the change log is kept by PostgreSQL triggers; elsewhere the pages compare the rows")


@pytest.fixture
def other(languages):
    """A second project with a decision of its own: its token must not move with the first's writes."""
    project, _ = project_ensure(name="other")
    project_directions_add(project=project, codes=["en-de"])
    cand = make_candidates(project, languages, "en-de", count=1)[0]
    ReviewDecision.objects.create(candidate=cand, reviewer=None, decision="accept", source="imported", is_final=True)
    return project


def test_every_write_the_figures_read_moves_its_projects_token_and_nothing_else_does(world, other):
    project, anna = world.project, world.users["anna_de"]
    seen = [changes.token(project.pk)]
    other_token = changes.token(other.pk)

    def moved(write, *, everywhere=False):
        write()
        now = changes.token(project.pk)
        assert now not in seen, write.__doc__
        seen.append(now)
        assert (changes.token(other.pk) != other_token) is everywhere, write.__doc__

    def unmoved(write):
        before = changes.token(project.pk), changes.token(other.pk)
        write()
        assert (changes.token(project.pk), changes.token(other.pk)) == before, write.__doc__

    cand = world.de[0]

    def create():
        """a decision through the ORM"""
        ReviewDecision.objects.create(
            candidate=world.de[6], reviewer=world.users["li_zh"], round=world.rounds[1], decision="reject"
        )

    def update():
        """a decision's value changed in bulk"""
        ReviewDecision.objects.filter(candidate=cand, reviewer=anna, round=world.rounds[1]).update(decision="reject")

    def delete():
        """a decision deleted"""
        ReviewDecision.objects.filter(candidate=cand, reviewer=anna, round=world.rounds[1]).delete()

    def copied():
        """a decision written by COPY"""
        assert bulk.copy_supported()
        bulk.insert_dicts(
            ReviewDecision,
            [
                {
                    "candidate_id": world.de[7].pk,
                    "reviewer_id": world.users["li_zh"].pk,
                    "round_id": world.rounds[1].pk,
                    "decision": "accept",
                    "source": "annotator",
                }
            ],
        )

    def submitted():
        """a decision through the review service"""
        services.decision_submit(
            user=world.users["ben_de"],
            candidate_id=world.de[0].pk,
            decision="reject",
            idempotency_key=uuid.uuid4().hex,
            round_id=world.rounds[1].pk,
        )

    def rating_added():
        """a Likert rating added"""
        LikertRating.objects.create(
            item=world.items[3], rater=anna, informativeness=1, clarity=1, plausibility=1, faithfulness=1
        )

    def rating_changed():
        """a Likert rating changed"""
        LikertRating.objects.filter(item=world.items[0]).update(clarity=1)

    def rating_deleted():
        """a Likert rating deleted"""
        LikertRating.objects.filter(item=world.items[3], rater=anna).delete()

    def error_type():
        """a candidate's error type"""
        Candidate.objects.filter(pk=cand.pk).update(error_type="Omission")

    def gold():
        """a candidate made a gold item"""
        Candidate.objects.filter(pk=cand.pk).update(is_gold=True, gold_answer="reject")

    def round_number():
        """a round renumbered"""
        ReviewRound.objects.filter(pk=world.rounds[2].pk).update(number=3)

    def item():
        """a rating item's external id"""
        RatingItem.objects.filter(pk=world.items[0].pk).update(external_id="de-item-renamed")

    def renamed():
        """a user renamed (reported by name in every project)"""
        get_user_model().objects.filter(pk=anna.pk).update(username="anna_renamed")

    def status():
        """a candidate's status: not reported by the figures"""
        Candidate.objects.filter(pk=cand.pk).update(status=Candidate.Status.PENDING)

    def logged_in():
        """a login (last_login): not reported"""
        get_user_model().objects.filter(pk=anna.pk).update(last_login=timezone.now())

    def rating_text():
        """a rating item's text: not reported"""
        RatingItem.objects.filter(pk=world.items[0].pk).update(text="another output")

    def nothing():
        """an update that matches no row"""
        ReviewDecision.objects.filter(pk=-1).update(decision="accept")

    for write in (
        create,
        update,
        delete,
        copied,
        submitted,
        rating_added,
        rating_changed,
        rating_deleted,
        error_type,
        gold,
        round_number,
        item,
    ):
        moved(write)
    moved(renamed, everywhere=True)
    for write in (status, logged_in, rating_text, nothing):
        unmoved(write)


def test_prune_leaves_one_newer_row_so_no_later_token_equals_an_earlier_one(world, other):
    project = world.project
    before = changes.token(project.pk)
    assert ReviewChange.objects.filter(project_id=project.pk).count() > 1  # the fixture's writes
    other_rows = ReviewChange.objects.filter(project_id=other.pk).count()
    changes.prune(project.pk)
    pruned = changes.token(project.pk)
    assert ReviewChange.objects.filter(project_id=project.pk).count() == 1 and pruned[1] > before[1]
    changes.prune(project.pk)  # one row: nothing to prune, and the figures kept under its token stay current
    assert changes.token(project.pk) == pruned
    assert ReviewChange.objects.filter(project_id=other.pk).count() == other_rows  # another project's rows stay
    ReviewDecision.objects.filter(candidate=world.de[0]).update(decision="reject")
    assert changes.token(project.pk) not in (before, pruned)


@pytest.mark.django_db(transaction=True)
def test_a_transaction_that_commits_after_a_later_one_still_moves_the_token(languages, annotator_de):
    """The newest id alone would miss it: the earlier transaction's row has the smaller id."""
    project, _ = project_ensure(name="race")
    project_directions_add(project=project, codes=["en-de"])
    first, second = make_candidates(project, languages, "en-de", count=2)
    with psycopg.connect(**_params()) as early:
        with early.cursor() as cur:  # begins a transaction and holds it open
            cur.execute(
                "INSERT INTO annotation_reviewdecision (candidate_id, reviewer_id, decision, source, is_final, reason, comment, created_at, updated_at) "
                "VALUES (%s, %s, 'accept', 'annotator', false, '', '', now(), now())",
                [first.pk, annotator_de.pk],
            )
        ReviewDecision.objects.create(
            candidate=second, reviewer=annotator_de, decision="reject"
        )  # commits first, larger id
        read_before = changes.token(project.pk)
        early.commit()
    assert changes.token(project.pk) != read_before
    assert ReviewDecision.objects.filter(candidate=first).exists()


def test_a_deleted_projects_rows_leave_every_change_log_with_it(world, other):
    """Its cascade logs its decisions, candidates and segments as they go; the project's own deletion then
    deletes those rows and the earlier ones, in every log, and no other project's."""
    logs = (ReviewChange, FlagChange, BenchmarkChange)
    pk = world.project.pk
    assert every(log.objects.filter(project_id=pk).exists() for log in logs)  # the fixture's writes
    others = [sorted(log.objects.filter(project_id=other.pk).values_list("id", flat=True)) for log in logs]
    assert every(others)
    with CaptureQueriesContext(connection) as queries:
        world.project.delete()
    assert any('DELETE FROM "injection_candidate"' in q["sql"] for q in queries.captured_queries)  # a cascade
    assert [log.objects.filter(project_id=pk).count() for log in logs] == [0, 0, 0]
    assert [sorted(log.objects.filter(project_id=other.pk).values_list("id", flat=True)) for log in logs] == others


@pytest.mark.django_db(transaction=True)
def test_a_transaction_that_commits_after_a_prune_never_brings_back_an_earlier_token(languages, annotator_de):
    """A prune that kept the newest row failed here: the late row brought the count, and the token, back."""
    project, _ = project_ensure(name="race")
    project_directions_add(project=project, codes=["en-de"])
    first, second, third = make_candidates(project, languages, "en-de", count=3)
    ReviewDecision.objects.create(candidate=third, reviewer=annotator_de, decision="accept")  # a row the prune deletes
    with psycopg.connect(**_params()) as early:
        with early.cursor() as cur:  # draws the older id and holds its transaction open
            cur.execute(
                "INSERT INTO annotation_reviewdecision (candidate_id, reviewer_id, decision, source, is_final, reason, comment, created_at, updated_at) "
                "VALUES (%s, %s, 'accept', 'annotator', false, '', '', now(), now())",
                [first.pk, annotator_de.pk],
            )
        ReviewDecision.objects.create(candidate=second, reviewer=annotator_de, decision="reject")
        kept_with = changes.token(project.pk)  # a figure computed now misses the early decision
        changes.prune(project.pk)
        early.commit()
    assert ReviewDecision.objects.filter(candidate=first).exists()
    assert changes.token(project.pk) != kept_with


def _params() -> dict:
    """This test database, for a second connection of its own."""
    db = connection.settings_dict
    params = {
        "dbname": db["NAME"],
        "user": db["USER"],
        "host": db["HOST"],
        "port": db["PORT"] or 5432,
        "password": db["PASSWORD"] or None,
    }
    return {k: v for k, v in params.items() if v is not None}


# ---- the agreement pages of a large project ------------------------------------------------------------


def reads_rows(queries) -> list[str]:
    """The queries that read the report's input rows (every decision, every rating of the scope)."""
    return [
        q["sql"]
        for q in queries
        if re.search(
            r'"annotation_reviewdecision"\."time_spent_ms"|"annotation_likertrating"\."informativeness"', q["sql"]
        )
    ]


def page(client, user, name="dashboard"):
    client.force_login(user)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse(f"agreement:{name}", kwargs={"project": "demo"}))
    assert response.status_code == 200
    html = response.content.decode()
    return (
        re.search(r'id="refresh-state" data-state="(\w+)"', html).group(1),
        html,
        reads_rows(queries.captured_queries),
    )


def test_a_large_projects_pages_decide_fresh_or_stale_from_the_token_without_reading_rows(
    client, world, broker, settings, django_capture_on_commit_callbacks
):
    settings.REVIEW_FIGURES_LIVE_LIMIT = 1  # every project is large
    settings.CELERY_TASK_ALWAYS_EAGER = False  # what the pages read of the broker (the fixture sets Celery's own)
    project, admin, anna = world.project, world.users["admin"], world.users["anna_de"]
    assert refresh_agreement.apply(args=(project.pk,)).get()["computed"] == 3

    for user, name in [(admin, "dashboard"), (anna, "dashboard"), (admin, "annotators")]:
        state, _, read = page(client, user, name)
        assert state == "fresh" and read == [], (name, read)

    # a decision: shown as of the last computation, still without reading a row
    computed_at = cache_entry(project)["computed_at"]
    with django_capture_on_commit_callbacks(execute=True):
        services.decision_submit(
            user=anna,
            candidate_id=world.de[1].pk,
            decision="reject",
            idempotency_key=uuid.uuid4().hex,
            round_id=world.rounds[1].pk,
        )
    state, html, read = page(client, admin)
    assert state == "stale" and f"As of {timezone.localtime(computed_at):%Y-%m-%d %H:%M:%S %Z}" in html and read == []
    broker.run_next()  # the refresh the submission queued
    state, _, read = page(client, admin)
    assert state == "fresh" and read == []

    # the change undone: the refresh finds the report of those rows in the cache and marks it current
    with django_capture_on_commit_callbacks(execute=True):
        services.decision_submit(
            user=anna,
            candidate_id=world.de[1].pk,
            decision="accept",
            idempotency_key=uuid.uuid4().hex,
            round_id=world.rounds[1].pk,
        )
    assert page(client, admin)[0] == "stale"
    result = broker.run_next().get()
    assert result["hits"] >= 1
    assert page(client, admin)[0] == "fresh"

    # a write outside the services (no signal, no refresh queued): the token still sees it
    ReviewDecision.objects.filter(candidate=world.de[2], round=world.rounds[1]).update(decision="accept")
    state, _, read = page(client, admin)
    assert state == "stale" and read == []


def test_below_the_limit_a_stale_token_falls_back_to_the_rows(
    client, world, broker, settings, django_capture_on_commit_callbacks
):
    """A small project's page compares the rows' digest when the token moved: a change undone by hand
    (no refresh yet) reads as fresh again, as it always did."""
    settings.REVIEW_FIGURES_LIVE_LIMIT = 10**9
    settings.CELERY_TASK_ALWAYS_EAGER = False
    project, admin = world.project, world.users["admin"]
    refresh_agreement.apply(args=(project.pk,))
    assert page(client, admin)[:1] == ("fresh",)
    rows = ReviewDecision.objects.filter(candidate=world.de[3], round=world.rounds[1])
    rows.update(decision="reject")
    state, _, read = page(client, admin)
    assert state == "stale" and read  # it read the rows to find out
    rows.update(decision="accept")
    state, _, read = page(client, admin)
    assert state == "fresh" and read


def cache_entry(project):
    from django.core.cache import cache

    return cache.get(sel.report_cache_key(project))


def test_without_workers_a_large_projects_page_computes_on_a_miss_then_reads_no_rows(client, world, settings):
    """No broker: the dashboard's miss runs the refresh in its request and looks again through the log."""
    settings.REVIEW_FIGURES_LIVE_LIMIT = 1
    assert settings.CELERY_TASK_ALWAYS_EAGER
    admin = world.users["admin"]
    state, _, read = page(client, admin)
    assert state == "fresh" and read  # the refresh ran here, reading the rows once
    state, _, read = page(client, admin)
    assert state == "fresh" and read == []
    ReviewDecision.objects.filter(candidate=world.de[2], round=world.rounds[1]).update(decision="accept")
    state, _, read = page(client, admin)
    assert state == "fresh" and read  # stale by the log: computed again in the request


def test_the_log_triggers_look_rows_up_by_key(db):
    """Each statement's rows are joined to candidates and segments by primary key, never by a scan of the
    whole table (an import's per-language statements would each read every candidate written before)."""
    from annotation.review import changes_sql
    from exports.benchmark import changes_sql as benchmark_sql

    with connection.cursor() as cur:
        cur.execute(
            "SELECT proname, proconfig FROM pg_proc WHERE proname LIKE 'xq_change_%%' OR proname LIKE 'xq_bench_pseudo_%%'"
        )
        config = dict(cur.fetchall())
    joined = [
        *(
            n
            for n, spec in changes_sql.STATEMENT_TRIGGERS.items()
            if spec[0] in (changes_sql.DECISION, changes_sql.RATING)
        ),
        *(n for n, spec in benchmark_sql.TRIGGERS.items() if spec[0] == benchmark_sql.PSEUDO),
    ]
    assert len(joined) == 9  # six on decisions and ratings, three on pseudo translations
    assert set(joined) <= set(config)
    for name in joined:
        assert {"enable_hashjoin=off", "enable_mergejoin=off"} <= set(config[name] or []), name
