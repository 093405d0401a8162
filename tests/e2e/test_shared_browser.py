"""Two users in ONE browser profile (one context: one localStorage, one cookie jar): unsent decisions stay
with the user who made them, are never sent in another user's session, and reach the server as their
owner's when she logs in again."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from playwright.sync_api import expect

from annotation.models import ReviewDecision
from core.services import user_create
from tests.annotation.review.factories import make_candidates
from tests.e2e.conftest import login, shot
from tests.e2e.test_review_browser import next_review, press_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DECISIONS = "**/api/review/decisions/"


def candidate_id(page) -> int:
    return int(page.url.split("/candidate/")[1].split("/")[0])


def outbox(page, user) -> list:
    return page.evaluate("(key) => JSON.parse(localStorage.getItem(key) || '[]')", f"xqmeval.outbox.v2:{user.pk}:demo")


def logout(page):
    with page.expect_navigation():
        page.click("form.logout button")


def queue_offline_reject(page, comment: str) -> int:
    """Reject with a comment while the network is down: the decision stays in the outbox."""
    page.route(DECISIONS, lambda route: route.abort("internetdisconnected"))
    current = candidate_id(page)
    page.keyboard.press("r")
    page.keyboard.press("2")
    page.keyboard.press("c")
    page.keyboard.type(comment)
    page.keyboard.press("Control+Enter")
    expect(page.locator("#send-status")).to_contain_text("kept on this device")
    page.unroute(DECISIONS)
    return current


def test_unsent_decision_of_one_user_is_never_sent_as_the_next(project, languages, annotator_de, new_page):
    make_candidates(project, languages, "en-de", count=4)
    li = user_create(username="li_de", password="li-pass-123", languages=["de"])
    page = new_page()

    login(page, "anna_de", "anna-pass-123")
    next_review(page)
    annas = queue_offline_reject(page, "anna: the comma moved")
    assert "anna: the comma moved" in page.evaluate("JSON.stringify(localStorage)")
    logout(page)  # the route is gone: anything still queued would now reach the server

    login(page, "li_de", "li-pass-123")  # same browser profile
    next_review(page)
    page.wait_for_load_state("networkidle")
    shot(page, "16-shared-browser-li")
    press_and_wait(page, "a")  # li's own decision on her item
    page.wait_for_load_state("networkidle")
    page.goto("/review/")
    page.wait_for_load_state("networkidle")
    lis = list(ReviewDecision.objects.filter(reviewer=li))
    assert [(d.decision, d.comment) for d in lis] == [("accept", "")]  # nothing of anna's stored as li's
    assert not ReviewDecision.objects.filter(reviewer=annotator_de).exists()
    assert not ReviewDecision.objects.filter(comment__startswith="anna").exists()
    assert page.locator("#outbox-notice").count() == 0  # li is not shown anna's work
    kept = outbox(page, annotator_de)  # kept for anna, under her key, not cleared
    assert [(e["body"]["candidate"], e["body"]["comment"], e["body"]["client_user"]) for e in kept] == [
        (annas, "anna: the comma moved", annotator_de.pk)
    ]
    logout(page)

    login(page, "anna_de", "anna-pass-123")  # anna again: her decision is shown and sent as hers
    expect(page.locator("#outbox-notice")).to_have_text(re.compile(r"^\s*Sent 1"))
    shot(page, "17-shared-browser-anna-again")
    annas_decision = ReviewDecision.objects.get(reviewer=annotator_de)
    assert (annas_decision.candidate_id, annas_decision.decision, annas_decision.reason, annas_decision.comment) == (
        annas,
        "reject",
        "outside_changed",
        "anna: the comma moved",
    )
    assert outbox(page, annotator_de) == []
    assert [(d.decision, d.comment) for d in ReviewDecision.objects.filter(reviewer=li)] == [("accept", "")]


def test_a_stale_page_of_another_user_is_refused_by_the_server(project, languages, annotator_de, new_page):
    """anna's review page is still open when her session ends and li logs in in another tab of the same
    profile: the page's retry now runs in li's session, the server refuses it (client_user), it stays for
    anna, and it is sent as hers when she logs in again."""
    make_candidates(project, languages, "en-de", count=3)
    li = user_create(username="li_de", password="li-pass-123", languages=["de"])
    annas_tab = new_page()
    # The pages' timers run on the test's clock (the whole profile's): the page retries when the test moves
    # its clock, not whenever its back-off (1 s doubling to 30 s) happens to fall after li's login.
    annas_tab.clock.install()
    annas_tab.clock.pause_at(datetime.now() + timedelta(minutes=1))
    login(annas_tab, "anna_de", "anna-pass-123")
    next_review(annas_tab)
    # The network down in the browser itself: the send fails there, without waiting for this process to answer
    # an intercepted request (a route handler); the page then waits for its first retry, 1 s away.
    annas_tab.context.set_offline(True)
    annas_tab.keyboard.press("a")
    expect(annas_tab.locator("#send-status")).to_contain_text("kept on this device, retrying in 1 s")
    annas_tab.context.set_offline(False)

    annas_tab.context.clear_cookies()  # anna's session ends (any page of hers open now would send it as hers)
    lis_tab = annas_tab.context.new_page()
    login(lis_tab, "li_de", "li-pass-123")
    annas_tab.clock.run_for(1000)  # the retry reaches the server, with li's session cookie
    expect(annas_tab.locator("#send-status")).to_contain_text("another user", timeout=20000)  # the server's answer
    shot(annas_tab, "18-stale-page-refused")
    assert "another user" in annas_tab.inner_text("#send-status bdi")  # the server's text in its own bidi isolate
    assert not ReviewDecision.objects.exists()
    assert len(outbox(annas_tab, annotator_de)) == 1 and not outbox(lis_tab, li)
    logout(lis_tab)
    login(lis_tab, "anna_de", "anna-pass-123")
    expect(lis_tab.locator("#outbox-notice")).to_have_text(re.compile(r"^\s*Sent 1"))
    assert ReviewDecision.objects.get().reviewer == annotator_de
