"""One build (and one release) per project at a time, with real concurrent requests against a live server (issue 36: two
simultaneous POSTs to the build page gave 500s, "database is locked", and builds stuck running forever).

Run on PostgreSQL (DATABASE_URL) and on SQLite (DATABASE_URL unset, with TEST_DATABASE_NAME a file: an
in-memory database shares one connection's locks, unlike a file); without a broker the build runs in the
request that starts it, as on the default setup."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import requests
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from exports.benchmark import services
from exports.models import BenchmarkBuild, Release
from injection.models import InjectionRun
from tests.support.asserts import every

pytestmark = pytest.mark.django_db(transaction=True)

STARTS = 4


def admin_session(live_server, admin_user) -> requests.Session:
    """A requests session logged in as the admin, with the CSRF cookie a form would send."""
    client = Client()
    client.force_login(admin_user)
    session = requests.Session()
    session.cookies.set("sessionid", client.cookies["sessionid"].value)
    session.get(
        live_server.url + reverse("benchmarks:project", kwargs={"project": "demo"}), timeout=60
    )  # sets csrftoken
    assert session.cookies.get("csrftoken")
    return session


def post_at_once(live_server, session: requests.Session, count: int) -> list[requests.Response]:
    """``count`` POSTs to the build page, released together by a barrier, each in its own thread."""
    url = live_server.url + reverse("benchmarks:build", kwargs={"project": "demo"})
    barrier, answers = threading.Barrier(count), [None] * count

    def post(i: int) -> None:
        barrier.wait()
        answers[i] = session.post(  # confirm: the seeded project builds with undecided directions
            url,
            data={"confirm": "1"},
            headers={"X-CSRFToken": session.cookies["csrftoken"]},
            allow_redirects=False,
            timeout=120,
        )

    threads = [threading.Thread(target=post, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def test_a_second_start_shows_the_running_build_and_starts_nothing(live_server, admin_user, seeded):
    running = BenchmarkBuild.objects.create(
        project=seeded, number=1, status="running", lease_expires_at=timezone.now() + timedelta(hours=1)
    )
    session = admin_session(live_server, admin_user)
    answers = post_at_once(live_server, session, STARTS)
    assert [a.status_code for a in answers] == [302] * STARTS, [a.text[:300] for a in answers if a.status_code != 302]
    assert list(BenchmarkBuild.objects.values_list("pk", flat=True)) == [running.pk]  # no second build
    page = session.get(live_server.url + answers[0].headers["Location"], timeout=60).text
    assert f"Build {running.number} is already running" in page and "it was not started again" in page


def test_a_build_whose_process_died_is_shown_interrupted_and_a_start_resumes_it(live_server, admin_user, seeded):
    died = BenchmarkBuild.objects.create(
        project=seeded, status="running", lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    session = admin_session(live_server, admin_user)
    page = session.get(live_server.url + reverse("benchmarks:project", kwargs={"project": "demo"}), timeout=60).text
    assert 'id="build-interrupted"' in page and '<strong id="build-status">interrupted</strong>' in page
    project_page = session.get(live_server.url + reverse("projects:detail", args=["demo"]), timeout=60).text
    assert "interrupted" in project_page and "Build the benchmark" in project_page  # not "running" forever
    answers = post_at_once(live_server, session, STARTS)
    assert every(a.status_code == 302 for a in answers), [a.status_code for a in answers]
    died.refresh_from_db()
    assert died.status == "done" and died.pseudo_created > 0  # resumed and finished in the request that took it over
    assert not BenchmarkBuild.objects.filter(status__in=BenchmarkBuild.LIVE).exists()


def test_simultaneous_starts_answer_without_error_and_leave_no_build_live(live_server, admin_user, seeded):
    session = admin_session(live_server, admin_user)
    answers = post_at_once(live_server, session, STARTS)
    assert [a.status_code for a in answers] == [302] * STARTS, [a.text[:300] for a in answers if a.status_code != 302]
    builds = list(BenchmarkBuild.objects.values_list("status", flat=True))
    assert builds and set(builds) == {"done"}, builds  # none failed, none stuck pending or running


# ---- releases: one written per project at a time ---------------------------------------------------------


def post_release_at_once(live_server, session: requests.Session, versions: list[str]) -> list[requests.Response]:
    url = live_server.url + reverse("benchmarks:release", kwargs={"project": "demo"})
    barrier, answers = threading.Barrier(len(versions)), [None] * len(versions)

    def post(i: int) -> None:
        barrier.wait()
        answers[i] = session.post(
            url,
            data={"version": versions[i]},
            headers={"X-CSRFToken": session.cookies["csrftoken"]},
            allow_redirects=False,
            timeout=120,
        )

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(versions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


@pytest.fixture
def built(seeded):
    services.build_run(project=seeded)
    return seeded


def test_a_second_release_start_shows_the_one_being_written_and_starts_nothing(live_server, admin_user, built):
    writing = Release.objects.create(
        project=built,
        version="1.0.0",
        status="building",
        stage="staging directions",
        lease_expires_at=timezone.now() + timedelta(hours=1),
    )
    session = admin_session(live_server, admin_user)
    answers = post_release_at_once(live_server, session, ["1.0.0", "1.1.0", "2.0.0"])
    assert [a.status_code for a in answers] == [302] * 3, [a.text[:300] for a in answers if a.status_code != 302]
    assert list(Release.objects.values_list("pk", "status")) == [(writing.pk, "building")]  # nothing started
    page = session.get(live_server.url + answers[0].headers["Location"], timeout=60).text
    assert "release 1.0.0 of demo is being written" in page and "it was not started again" in page


def test_an_interrupted_release_is_shown_and_releasing_it_again_resumes_it(live_server, admin_user, built):
    died = Release.objects.create(
        project=built, version="1.0.0", status="building", lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    session = admin_session(live_server, admin_user)
    page = session.get(live_server.url + reverse("benchmarks:project", kwargs={"project": "demo"}), timeout=60).text
    assert "interrupted: its process stopped" in page
    project_page = session.get(live_server.url + reverse("projects:detail", args=["demo"]), timeout=60).text
    assert "interrupted</span> (its process stopped; release it again" in project_page
    answers = post_release_at_once(live_server, session, ["1.0.0"])
    assert answers[0].status_code == 302
    died.refresh_from_db()
    assert died.status == "ready" and died.content_hash


def test_simultaneous_release_starts_answer_without_error_and_leave_none_building(live_server, admin_user, built):
    session = admin_session(live_server, admin_user)
    answers = post_release_at_once(live_server, session, ["1.0.0", "1.1.0", "1.2.0"])
    assert [a.status_code for a in answers] == [302] * 3, [a.text[:300] for a in answers if a.status_code != 302]
    statuses = dict(Release.objects.values_list("version", "status"))
    assert statuses and set(statuses.values()) == {"ready"}, statuses  # written, or refused while one was: none stuck


# ---- injection: one start of a submitted form ------------------------------------------------------------


def test_the_injection_form_submitted_twice_at_once_starts_one_run_without_error(live_server, admin_user, seeded):
    """Issue 36: the form submitted twice at once gave a 500 ("database is locked" on SQLite). Both requests
    carry the form's submission key: the project's row lock (an IMMEDIATE transaction on SQLite) makes the
    second wait and then find the run the first planned."""
    session = admin_session(live_server, admin_user)
    InjectionRun.objects.filter(project=seeded).update(status="done")  # the fixture's record, not a live run
    before = set(InjectionRun.objects.values_list("pk", flat=True))  # the fixture's own run
    url = live_server.url + reverse("injection:runs")
    form = {
        "project": seeded.pk,
        "directions": ["en-de"],
        "kind": "mqm",
        "backend": "rule",
        "concurrency": 2,
        "seed": 42,
        "temperature": 0.5,
        "submission": "one-form",
    }
    barrier, answers = threading.Barrier(STARTS), [None] * STARTS

    def post(i: int) -> None:
        barrier.wait()
        answers[i] = session.post(
            url, data=form, headers={"X-CSRFToken": session.cookies["csrftoken"]}, allow_redirects=False, timeout=120
        )

    threads = [threading.Thread(target=post, args=(i,)) for i in range(STARTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [a.status_code for a in answers] == [302] * STARTS, [
        (a.status_code, a.text[:300]) for a in answers if a.status_code != 302
    ]
    runs = list(InjectionRun.objects.exclude(pk__in=before).values_list("pk", flat=True))
    assert len(runs) == 1 and {a.headers["Location"] for a in answers} == {reverse("injection:run", args=[runs[0]])}
