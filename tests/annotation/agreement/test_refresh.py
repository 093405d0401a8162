"""The agreement report is computed by a Celery task, never in a page request: the task fills the cache for
every dashboard scope and is idempotent; a page that misses shows the last report or "being computed" and
queues one refresh; writes queue one refresh per burst; failures are recorded with their reason; transient
database faults are retried. Real database, real cache, real Redis broker; nothing of ours is mocked."""

from __future__ import annotations

import io
import logging
import re
import uuid
from datetime import datetime, timedelta

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from annotation.agreement import refresh
from annotation.agreement import selectors as sel
from annotation.agreement import tasks as agreement_tasks
from annotation.agreement.tasks import refresh_agreement
from annotation.models import ReviewDecision
from annotation.rating import services as rating_services
from annotation.review import services
from core.services import user_create
from tests.annotation.review.factories import make_candidate
from tests.conftest import need
from tests.support.asserts import every
from tests.support.db_faults import wait_until

TASK = "annotation.refresh_agreement"


def dashboard(client, user, page="dashboard") -> str:
    client.force_login(user)
    response = client.get(reverse(f"agreement:{page}", kwargs={"project": "demo"}))
    assert response.status_code == 200
    return response.content.decode()


def state_of(html: str) -> str:
    return re.search(r'id="refresh-state" data-state="(\w+)"', html).group(1)


def reloads_itself(html: str) -> bool:
    script = 'js/agreement-refresh.js"></script>' in html
    seconds = re.search(r'data-refresh-seconds="(\d+)"', html)
    meta = re.search(r'<noscript><meta http-equiv="refresh" content="(\d+)"></noscript>', html)
    assert script == bool(seconds) == bool(meta) and (not seconds or seconds.group(1) == meta.group(1) == "10")
    return script


def cached_entry(project, scope):
    return cache.get(sel.report_cache_key(project, languages=scope.languages, private=scope.private))


def de_row(report):
    return next(r for r in report["languages"] if r["language"] == "de")


def shown_de_agreement(html: str) -> str:
    """The percent-agreement cell of the de row of the page's table by language."""
    section = html[html.index('id="languages"') :]
    headers = re.findall(r"<th>(.*?)</th>", section[: section.index("</thead>")])
    row = re.search(r"<tr><td>de</td>.*?</tr>", section).group(0)
    return re.findall(r"<td[^>]*>(.*?)</td>", row)[headers.index("percent agreement")]


@pytest.fixture
def more_scopes(world, languages):
    """A reviewer of two of the project's languages (a third scope), plus users who must add none."""
    from django.contrib.auth import get_user_model

    user_create(username="mixed", password="mixed-pass-123", languages=["de", "zh", "fr"])  # fr is not in the project
    user_create(username="gone", password="gone-pass-123", languages=["ar"])
    user_create(username="staffer", password="staff-pass-123", languages=["ja"])
    get_user_model().objects.filter(username="gone").update(is_active=False)  # cannot log in: no scope
    get_user_model().objects.filter(username="staffer").update(is_staff=True)  # an admin: the all-languages scope
    return world


# ---- the task --------------------------------------------------------------------------------------


def test_scopes_follow_the_projects_assignments(world, languages):
    """Once the project assigns reviewers, an annotator's scope is her assigned targets there (an account
    known by its assignment only included), one assigned in another project only has none here, and the task
    computes exactly the scopes the users get (it read only the accounts' global languages)."""
    from django.contrib.auth import get_user_model

    from core.models import ReviewerAssignment
    from core.services import project_directions_add, project_ensure

    other, _ = project_ensure(name="other", title="Other")
    (other_ar,) = project_directions_add(project=other, codes=["en-ar"])
    (en_ar,) = project_directions_add(project=world.project, codes=["en-ar"])
    nadia = user_create(username="nadia", password="nadia-pass-123")  # no language of her own
    omar = user_create(username="omar", password="omar-pass-123", languages=["de"])
    ReviewerAssignment.objects.create(project=world.project, direction=en_ar, user=nadia)
    ReviewerAssignment.objects.create(project=other, direction=other_ar, user=omar)
    assert sel.scope_for(nadia, world.project) == sel.Scope(frozenset({"ar"}), False)
    assert sel.scope_for(omar, world.project) is None  # de is his language, but this project assigns reviewers
    scopes = sel.dashboard_scopes(world.project)
    from_users = {sel.scope_for(u, world.project) for u in get_user_model().objects.filter(is_active=True)} - {None}
    assert from_users == set(scopes)


def test_task_fills_every_dashboard_scope_and_pages_read_it(client, more_scopes):
    world = more_scopes
    project = world.project
    scopes = sel.dashboard_scopes(project)
    assert scopes == [
        sel.Scope(None, True),
        sel.Scope(frozenset({"de"}), False),
        sel.Scope(frozenset({"de", "zh"}), False),
        sel.Scope(frozenset({"zh"}), False),
    ]
    from django.contrib.auth import get_user_model

    from_users = {sel.scope_for(u, project) for u in get_user_model().objects.filter(is_active=True)} - {None}
    assert from_users == set(scopes)  # exactly what the dashboard will ask for

    assert every(cached_entry(project, s) is None for s in scopes)
    first = refresh_agreement.delay(project.pk).get()
    assert (first["scopes"], first["computed"], first["hits"]) == (4, 4, 0)
    for scope in scopes:  # the keys the pages and downloads use, and the numbers the command computes
        entry = cached_entry(project, scope)
        assert entry is not None and entry["report"] == sel.project_report(
            project, languages=scope.languages, private=scope.private, use_cache=False
        )
    state = refresh.status(project.pk)
    assert state["state"] == "done" and state["computed"] == 4 and not refresh.failing(state)

    # idempotent: unchanged rows are cache hits, nothing is computed again
    again = refresh_agreement.delay(project.pk).get()
    assert (again["computed"], again["hits"]) == (0, 4)

    # The pages show the cached report instead of computing one: mark the cached numbers and look for the marks.
    for user, scope, mark in [
        (world.users["admin"], scopes[0], 0.123456),
        (world.users["anna_de"], scopes[1], 0.654321),
    ]:
        key = sel.report_cache_key(project, languages=scope.languages, private=scope.private)
        entry = cache.get(key)
        de_row(entry["report"])["percent_agreement"] = mark
        cache.set(key, entry)
        html = dashboard(client, user)
        assert state_of(html) == "fresh" and shown_de_agreement(html) == f"{mark:.3f}"  # computed, it is 0.750
        assert not reloads_itself(html)
    assert refresh.status(project.pk)["state"] == "done"  # and the views queued nothing


def test_a_project_deleted_before_its_refresh_runs_is_a_no_op(world):
    pk = world.project.pk
    world.project.delete()
    assert refresh_agreement.delay(pk).get() == {"project": pk, "missing": True}


# ---- pages on a miss -------------------------------------------------------------------------------


def test_a_miss_shows_being_computed_queues_one_refresh_and_never_computes(client, world, broker):
    project, admin, anna = world.project, world.users["admin"], world.users["anna_de"]
    html = dashboard(client, admin)
    assert state_of(html) == "computing" and "Being computed" in html
    assert reloads_itself(html)
    assert (
        "Accept/reject agreement by language" not in html
        and reverse("agreement:plot", kwargs={"project": "demo", "plot": "rwg"}) not in html
    )
    assert [(m["task"], m["args"]) for m in broker.messages()] == [(TASK, [project.pk])]
    assert broker.messages()[0]["eta"] is None  # someone is waiting: no delay
    assert every(
        cached_entry(project, s) is None for s in sel.dashboard_scopes(project)
    )  # nothing computed in the request
    assert refresh.status(project.pk)["state"] == "queued"

    # more views, another user, the annotator page and a plot while it is queued: still one message
    assert state_of(dashboard(client, anna)) == "computing"
    quality = dashboard(client, admin, "annotators")
    assert (
        state_of(quality) == "computing" and "Plant gold items" in quality and "Likert raters" not in quality
    )  # gold needs no report
    plot = client.get(reverse("agreement:plot", kwargs={"project": "demo", "plot": "by-language"}))
    assert (
        plot.status_code == 200
        and plot["Content-Type"] == "image/svg+xml"
        and "being computed" in plot.content.decode()
    )
    assert len(broker.messages()) == 1

    # a worker runs it; the pages show the numbers
    assert broker.run_next().get()["computed"] == 3
    html = dashboard(client, admin)
    de = de_row(sel.project_report(project, use_cache=False))
    assert (
        state_of(html) == "fresh"
        and shown_de_agreement(html) == f"{de['percent_agreement']:.3f}"
        and "Agreement per reviewer pair" in html
    )
    assert state_of(dashboard(client, anna)) == "fresh"
    assert broker.messages() == []


def test_after_a_change_the_last_report_is_shown_as_of_its_time(
    client, world, broker, django_capture_on_commit_callbacks
):
    project, admin = world.project, world.users["admin"]
    refresh_agreement.apply(args=(project.pk,))
    before = de_row(sel.project_report(project))
    computed_at = cache.get(sel.report_cache_key(project))["computed_at"]
    # anna changes her round-1 accept on a candidate ben rejected: de agreement changes
    with django_capture_on_commit_callbacks(execute=True):
        services.decision_submit(
            user=world.users["anna_de"],
            candidate_id=world.de[1].pk,
            decision="reject",
            idempotency_key=uuid.uuid4().hex,
            round_id=world.rounds[1].pk,
        )
    [queued] = broker.messages()  # queued by the submission, with the debounce delay
    assert queued["args"] == [project.pk] and datetime.fromisoformat(queued["eta"]) > timezone.now() + timedelta(
        seconds=refresh.delay_seconds() - 5
    )

    html = dashboard(client, admin)
    assert (
        state_of(html) == "stale"
        and f"As of {timezone.localtime(computed_at):%Y-%m-%d %H:%M:%S %Z}; being updated" in html
    )
    assert shown_de_agreement(html) == f"{before['percent_agreement']:.3f}" and reloads_itself(html)
    assert len(broker.messages()) == 1  # the view found it queued

    broker.run_next()
    after = de_row(sel.project_report(project, use_cache=False))
    assert after["percent_agreement"] != before["percent_agreement"]
    html = dashboard(client, admin)
    assert state_of(html) == "fresh" and shown_de_agreement(html) == f"{after['percent_agreement']:.3f}"


def test_downloads_still_compute_on_a_miss(client, world, broker):
    client.force_login(world.users["admin"])
    response = client.get(
        reverse("agreement:download", kwargs={"project": "demo", "table": "languages", "fmt": "json"})
    )
    import json

    assert json.loads(response.content)["rows"] == sel.project_report(world.project, use_cache=False)["languages"]
    assert broker.messages() == []  # an explicit request for the numbers: computed, nothing queued


# ---- writes: one refresh per burst -----------------------------------------------------------------


@pytest.fixture
def redis_cache(redis_url, settings):
    """The production cache backend, so that cache.add is Redis's SET NX across threads and processes."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": f"agreement-test-{uuid.uuid4().hex}",
            "TIMEOUT": 300,
        }
    }
    settings.AGREEMENT_CACHE_SECONDS = 120
    return cache


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_32_concurrent_submissions_queue_one_refresh(project, languages, broker, redis_cache):
    need(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL=postgres://…)")
    from tests.support.race import race

    candidates = [
        make_candidate(project, languages["en-de"], f"s{i}", f"a b c d {i}", f"a X c d {i}", external_id=str(i))
        for i in range(16)
    ]
    users = [user_create(username=f"r{i}", password="pw-123-xyz", languages=["de"]) for i in range(32)]
    target = {user.pk: candidates[i // 2] for i, user in enumerate(users)}  # two reviewers per candidate

    def work(user):
        services.decision_submit(
            user=user, candidate_id=target[user.pk].pk, decision="accept", idempotency_key=uuid.uuid4().hex
        )

    race(users, work)  # each submission commits in its own thread; its on_commit hook runs there
    assert ReviewDecision.objects.filter(source="annotator").count() == 32
    assert [(m["task"], m["args"]) for m in broker.messages()] == [(TASK, [project.pk])]

    # The run takes the pending mark off before it reads the rows: the next write queues the next run, and
    # the one after it finds that queued.
    broker.run_next()
    assert broker.messages() == []
    extra = make_candidate(project, languages["en-de"], "s-x", "a b c d x", "a Y c d x", external_id="x")
    for user in users[:2]:
        services.decision_submit(user=user, candidate_id=extra.pk, decision="reject", idempotency_key=uuid.uuid4().hex)
    assert [m["args"] for m in broker.messages()] == [[project.pk]]


def test_a_rolled_back_write_queues_nothing(world, broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(services.Conflict):  # the candidate already has its two reviewers in round 1
            services.decision_submit(
                user=world.users["admin"],
                candidate_id=world.de[0].pk,
                decision="accept",
                idempotency_key=uuid.uuid4().hex,
                round_id=world.rounds[1].pk,
            )
    assert callbacks == [] and broker.messages() == []
    # ratings queue it too
    from annotation.models import RatingItem

    item = RatingItem.objects.create(
        project=world.project,
        direction=world.de[0].segment.direction,
        kind="system_output",
        external_id="new",
        source="s",
        reference="r",
        text="t",
    )
    with django_capture_on_commit_callbacks(execute=True):
        rating_services.rating_submit(
            user=world.users["anna_de"],
            item_id=item.pk,
            scores=dict(informativeness=3, clarity=3, plausibility=3, faithfulness=3),
            idempotency_key=uuid.uuid4().hex,
        )
    assert [m["args"] for m in broker.messages()] == [[world.project.pk]]


def test_without_a_broker_a_submission_computes_nothing(world, django_capture_on_commit_callbacks):
    # In-process tasks would run inside the annotator's submission; while review goes on, the dashboard asks on
    # its next view.
    from tests.annotation.review.factories import make_candidates

    make_candidates(world.project, {"en-de": world.de[1].segment.direction}, "en-de", count=1)  # still to review
    with django_capture_on_commit_callbacks(execute=True):
        services.decision_submit(
            user=world.users["anna_de"],
            candidate_id=world.de[1].pk,
            decision="accept",
            idempotency_key=uuid.uuid4().hex,
            round_id=world.rounds[1].pk,
        )
    assert refresh.status(world.project.pk) == {}
    assert cached_entry(world.project, sel.Scope(None, True)) is None


def test_without_a_broker_the_submission_that_finishes_the_review_computes_the_agreement(
    project, languages, annotator_de, django_capture_on_commit_callbacks
):
    """#46.3: the project page shows the agreement of a finished review without anyone opening the dashboard."""
    from tests.annotation.review.factories import make_candidates

    second = user_create(username="bo_de", password="bo-pass-123", languages=["de"])
    candidates = make_candidates(project, languages, "en-de", count=2)
    decisions = [(user, c) for c in candidates for user in (annotator_de, second)]
    for n, (user, candidate) in enumerate(decisions, start=1):
        with django_capture_on_commit_callbacks(execute=True):
            services.decision_submit(
                user=user, candidate_id=candidate.pk, decision="accept", idempotency_key=uuid.uuid4().hex
            )
        computed = cached_entry(project, sel.Scope(None, True)) is not None
        assert computed == (n == len(decisions)), f"after decision {n} of {len(decisions)}"
    assert refresh.status(project.pk)["state"] == "done"


# ---- failures and retries --------------------------------------------------------------------------


def test_a_failure_is_recorded_with_its_reason_and_shown(client, world, settings, caplog):
    settings.AGREEMENT_CONFIDENCE = 1.5  # a bad setting: the bootstrap refuses it
    with caplog.at_level(logging.INFO, logger="annotation.agreement.refresh"):
        html = dashboard(client, world.users["admin"])  # no broker: the refresh runs in-process, and fails
        assert state_of(html) == "computing" and "The last update failed" in html and "confidence" in html
        state = refresh.status(world.project.pk)
        assert state["state"] == "failed" and state["last_error"].startswith("ValueError") and refresh.failing(state)
        # the page keeps reloading, but asks again at most once a minute after a failure
        assert reloads_itself(html)
        annotator = dashboard(client, world.users["anna_de"])
        assert (
            "The last update failed" in annotator
            and "an admin can see why" in annotator
            and "confidence" not in annotator
        )
    failures = [r for r in caplog.records if r.levelno == logging.ERROR and "failed: ValueError" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is not None  # logged once, with the traceback

    settings.AGREEMENT_CONFIDENCE = 0.95
    call_command(
        "agreement", "demo", "--prewarm", stdout=io.StringIO(), stderr=io.StringIO()
    )  # by hand, as the banner says
    html = dashboard(client, world.users["admin"])
    assert state_of(html) == "fresh" and "The last update failed" not in html and not reloads_itself(html)
    assert not refresh.failing(refresh.status(world.project.pk))


def test_a_failed_prewarm_is_recorded(world, settings):
    settings.AGREEMENT_CONFIDENCE = 0
    with pytest.raises(CommandError, match="agreement of demo failed: .*confidence"):
        call_command("agreement", "demo", "--prewarm", stdout=io.StringIO(), stderr=io.StringIO())
    assert refresh.status(world.project.pk)["state"] == "failed"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_transient_database_fault_is_retried_by_the_worker(world, broker, lock_timeout):
    """Another session holds the decisions table locked, so the run fails with a lock timeout; a real worker
    (in a thread, on the Redis broker) retries it with backoff, and once the lock is gone the retry succeeds."""
    import psycopg
    from celery.contrib.testing.worker import start_worker

    from xqmeval.celery import app

    d = connection.settings_dict
    holder = psycopg.connect(
        dbname=d["NAME"], user=d["USER"], host=d["HOST"], port=d["PORT"] or 5432, password=d["PASSWORD"] or None
    )
    pk = world.project.pk
    try:
        holder.execute("LOCK TABLE annotation_reviewdecision IN ACCESS EXCLUSIVE MODE")
        with start_worker(
            app, pool="solo", perform_ping_check=False, queues=[broker.queue], loglevel="WARNING", shutdown_timeout=30
        ):
            assert agreement_tasks.request_refresh(pk)
            state = wait_until(lambda: (s := refresh.status(pk)).get("state") == "retrying" and s, "a retry")
            assert "lock timeout" in state["last_error"] and refresh.failing(state)
            holder.rollback()  # the lock goes; the retry, due within 2 s, reads the rows
            state = wait_until(lambda: (s := refresh.status(pk)).get("state") == "done" and s, "the retried run")
        assert state["computed"] == 3 and not refresh.failing(state)
        assert cached_entry(world.project, sel.Scope(None, True)) is not None
    finally:
        holder.close()


# ---- the command -----------------------------------------------------------------------------------


def test_prewarm_command(client, world):
    out = io.StringIO()
    call_command("agreement", "demo", "--prewarm", stdout=out, stderr=io.StringIO())
    assert out.getvalue().strip().startswith("demo: 3 scope(s), 3 computed, 0 already cached")
    out = io.StringIO()
    call_command("agreement", "--prewarm", stdout=out, stderr=io.StringIO())  # every project
    assert "demo: 3 scope(s), 0 computed, 3 already cached" in out.getvalue()
    assert state_of(dashboard(client, world.users["admin"])) == "fresh"
    err = io.StringIO()
    call_command("agreement", "demo", "--prewarm", stdout=io.StringIO(), stderr=err)
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    assert ("no CACHE_URL" in err.getvalue()) == isinstance(
        caches["default"], LocMemCache
    )  # another process would not see it
    with pytest.raises(CommandError, match="do not apply"):
        call_command("agreement", "demo", "--prewarm", "--language", "de")
    with pytest.raises(CommandError, match="name a project"):
        call_command("agreement")
