"""The review hot path's SQL budget: get-next and submit through the API, counted end to end (session,
user, permissions, the transaction and its savepoints), so a query added to the loop cannot slip in.

The bounds are today's counts on PostgreSQL; SQLite takes its write lock with one more statement.
"""

import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import ReviewDecision, ReviewLock
from core.services import user_create
from injection.models import Candidate
from tests.annotation.review.factories import make_candidate

pytestmark = pytest.mark.django_db

SQLITE_EXTRA = 1  # annotation.common.submissions.serialize_writers
GET_NEXT = 13  # session, user, profile, project, languages, BEGIN, resume, rounds, SAVEPOINT, queue, take slot, RELEASE, COMMIT
GET_NEXT_RESUMED = 9  # session, user, profile, project, languages, BEGIN, resume, renew, COMMIT
SUBMIT = 16  # session, user, BEGIN, replay, profile, lock, round, own+scope+taken, insert, audit, unlock, status (read, write, audit), COMMIT


def budget(n: int) -> int:
    return n + (SQLITE_EXTRA if connection.vendor == "sqlite" else 0)


@pytest.fixture
def candidates(project, languages):
    return [
        make_candidate(project, languages["en-de"], f"s{i}", f"a b c d {i}", f"a X c d {i}", external_id=str(i))
        for i in range(12)
    ]


@pytest.fixture
def client(annotator_de):
    c = Client()
    c.force_login(annotator_de)
    return c


def next_item(client, project):
    r = client.post(reverse("review_api:next", args=[project.name]))
    assert r.status_code == 200, r.content
    return r.json()


def submit(client, got):
    body = {
        "candidate": got["candidate"]["id"],
        "round": got["round"],
        "decision": "accept",
        "idempotency_key": uuid.uuid4().hex,
    }
    r = client.post(reverse("review_api:decisions"), data=body, content_type="application/json")
    assert r.status_code == 201, r.content
    return r.json()


@pytest.fixture
def with_a_broker():
    """A submission as production runs it: agreement refreshes are queued on commit (which a test's transaction
    never reaches), not checked in the submission as the in-process mode of a site with no broker does."""
    from annotation.agreement.tasks import refresh_agreement

    conf = refresh_agreement.app.conf
    eager, conf.task_always_eager = conf.task_always_eager, False
    yield
    conf.task_always_eager = eager


def test_get_next_and_submit_stay_within_their_query_budget(
    client, project, candidates, annotator_de, django_assert_max_num_queries, with_a_broker
):
    other = Client()
    other.force_login(user_create(username="other_de", password="other-pass-123", languages=["de"]))
    first = next_item(other, project)  # a live lock and a decision of someone else in the queue
    submit(other, first)
    next_item(other, project)
    for _ in range(3):  # the first review of a candidate and the second (which settles its status)
        with django_assert_max_num_queries(budget(GET_NEXT)):
            got = next_item(client, project)
        assert got["candidate"] is not None and not got["resumed"]
        with django_assert_max_num_queries(budget(GET_NEXT_RESUMED)):
            again = next_item(client, project)
        assert again["resumed"] and again["candidate"]["id"] == got["candidate"]["id"]
        with django_assert_max_num_queries(budget(SUBMIT)):
            submit(client, got)
    assert ReviewDecision.objects.filter(reviewer=annotator_de).count() == 3
    assert not ReviewLock.objects.filter(reviewer=annotator_de).exists()
    assert Candidate.objects.get(pk=first["candidate"]["id"]).status == "accepted"


def test_get_next_does_not_grow_with_the_queue(client, project, languages, candidates):
    """No per-candidate query: the same count with 12 candidates left as with 112, several full of locks."""

    def count_one():
        with CaptureQueriesContext(connection) as ctx:
            submit(client, next_item(client, project))
        return len(ctx.captured_queries)

    count_one()  # the first one also creates round 1
    small = count_one()
    for i in range(100):
        make_candidate(project, languages["en-de"], f"t{i}", f"e f g h {i}", f"e Y g h {i}", external_id=f"t{i}")
    for i in range(2):  # the head of the queue held by two others: get-next has to look past it
        c = Client()
        c.force_login(user_create(username=f"holder{i}", password="holder-pass-123", languages=["de"]))
        next_item(c, project)
    assert count_one() == small


def test_my_decisions_page_does_not_grow_with_the_decisions(client, project, candidates):
    """One query for all rows with their candidate, project, direction and round (the template reads all four)."""

    def queries_for_page() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(reverse("review:mine")).status_code == 200
        return len(captured)

    submit(client, next_item(client, project))
    one = queries_for_page()
    for _ in range(5):
        submit(client, next_item(client, project))
    assert queries_for_page() == one
