"""One injection start per project at a time (issue 36.6), with real concurrent requests against a live server:
a second start while a run is live shows that run and starts nothing; a run whose process died is shown as
such, does not block, and can be resumed, but not beside another live run."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import requests
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from core.corpus.domain import CorpusRow
from core.corpus.services import corpus_rows_import
from injection.models import InjectionRun

pytestmark = pytest.mark.django_db(transaction=True)

STARTS = 4


@pytest.fixture
def corpus(project):
    rows = [CorpusRow(str(i), f"Source {i}.", f"Das ist der Satz Nummer {i} hier.", "inline") for i in range(3)]
    corpus_rows_import(project=project, direction_code="en-de", rows=rows, source_name="inline")
    return project


def admin_session(live_server, admin_user) -> requests.Session:
    client = Client()
    client.force_login(admin_user)
    session = requests.Session()
    session.cookies.set("sessionid", client.cookies["sessionid"].value)
    session.get(live_server.url + reverse("injection:runs"), timeout=60)  # sets csrftoken
    assert session.cookies.get("csrftoken")
    return session


def start_at_once(live_server, session: requests.Session, project, count: int) -> list[requests.Response]:
    """``count`` start forms, each its own submission, released together by a barrier."""
    url = live_server.url + reverse("injection:runs")
    barrier, answers = threading.Barrier(count), [None] * count

    def post(i: int) -> None:
        form = {
            "project": project.pk,
            "directions": ["en-de"],
            "kind": "mqm",
            "backend": "rule",
            "concurrency": 1,
            "seed": i,
            "temperature": 0.5,
            "submission": f"form-{i}",
        }
        barrier.wait()
        answers[i] = session.post(
            url, data=form, headers={"X-CSRFToken": session.cookies["csrftoken"]}, allow_redirects=False, timeout=120
        )

    threads = [threading.Thread(target=post, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def running(project, name: str, *, lease_for: timedelta) -> InjectionRun:
    return InjectionRun.objects.create(
        project=project,
        name=name,
        backend="rule",
        kind="mqm",
        status="running",
        lease_owner="elsewhere",
        lease_expires_at=timezone.now() + lease_for,
    )


def test_a_second_start_while_a_run_is_live_shows_it_and_starts_nothing(live_server, admin_user, corpus):
    live = running(corpus, "live-one", lease_for=timedelta(hours=1))
    session = admin_session(live_server, admin_user)
    answers = start_at_once(live_server, session, corpus, STARTS)
    assert [a.status_code for a in answers] == [302] * STARTS, [(a.status_code, a.text[:300]) for a in answers]
    assert {a.headers["Location"] for a in answers} == {reverse("injection:run", args=[live.pk])}
    assert list(InjectionRun.objects.values_list("pk", flat=True)) == [live.pk]  # no second run
    page = session.get(live_server.url + answers[0].headers["Location"], timeout=60).text
    assert "Run live-one is already running; no second run was started." in page


def test_simultaneous_starts_answer_without_error_and_never_run_two_at_once(live_server, admin_user, corpus):
    session = admin_session(live_server, admin_user)
    answers = start_at_once(live_server, session, corpus, STARTS)
    assert [a.status_code for a in answers] == [302] * STARTS, [(a.status_code, a.text[:300]) for a in answers]
    runs = list(InjectionRun.objects.order_by("started_at"))
    assert runs and {r.status for r in runs} == {"done"}, [(r.name, r.status, r.error) for r in runs]
    # In-process, each start ran in its request: a start made while another was live was refused, so the
    # runs that did start ran one after another, never overlapping.
    for earlier, later in zip(runs, runs[1:]):
        assert earlier.finished_at <= later.started_at, (earlier.name, later.name)


def test_a_run_whose_process_died_is_shown_does_not_block_and_resumes(live_server, admin_user, corpus):
    died = running(corpus, "died", lease_for=timedelta(seconds=-1))
    session = admin_session(live_server, admin_user)
    page = session.get(live_server.url + reverse("injection:run", args=[died.pk]), timeout=60).text
    assert 'id="run-stalled"' in page
    [started] = start_at_once(live_server, session, corpus, 1)  # the dead run does not block a start
    new = InjectionRun.objects.exclude(pk=died.pk).get()
    assert started.headers["Location"] == reverse("injection:run", args=[new.pk]) and new.status == "done"

    # Resuming the dead run while another run is live is refused, naming that run; once none is, it resumes.
    InjectionRun.objects.filter(pk=new.pk).update(
        status="running", lease_expires_at=timezone.now() + timedelta(hours=1)
    )
    url = live_server.url + reverse("injection:run_retry", args=[died.pk])
    headers = {"X-CSRFToken": session.cookies["csrftoken"]}
    refused = session.post(url, data={"resume": "1"}, headers=headers, allow_redirects=False, timeout=60)
    assert refused.status_code == 302 and refused.headers["Location"] == reverse("injection:run", args=[new.pk])
    died.refresh_from_db()
    assert died.status == "running" and died.lease_owner == "elsewhere"  # untouched
    page = session.get(live_server.url + refused.headers["Location"], timeout=60).text
    assert f"Run {new.name} is already running; died was not started again." in page

    InjectionRun.objects.filter(pk=new.pk).update(status="done")
    resumed = session.post(url, data={"resume": "1"}, headers=headers, allow_redirects=False, timeout=60)
    assert resumed.status_code == 302 and resumed.headers["Location"] == reverse("injection:run", args=[died.pk])
    died.refresh_from_db()
    assert died.status == "done" and died.lease_owner == ""
