"""Previous and undo on the review screen in chromium (#37.4): P (or the Previous button) opens the item
decided or skipped before, W (or Withdraw) withdraws the decision or skip there; and a decision still kept on
this device after a network error is withdrawn before it is ever stored."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import AuditEvent, ReviewDecision, ReviewSkip
from tests.annotation.review.factories import make_candidates
from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def current(page) -> int:
    return int(page.url.split("/candidate/")[1].split("/")[0])


def press_and_wait(page, *keys):
    for key in keys[:-1]:
        page.keyboard.press(key)
    with page.expect_navigation():
        page.keyboard.press(keys[-1])
    page.wait_for_selector("#candidate-text")


def test_previous_then_change_or_withdraw(project, languages, annotator_de, new_page):
    make_candidates(project, languages, "en-de", count=4)
    page = new_page()
    login(page, "anna_de", "anna-pass-123")
    page.goto("/review/demo/next/?lang=de")
    page.wait_for_selector("#candidate-text")
    assert page.locator("#previous-link").count() == 0 and page.locator("#withdraw-button").is_hidden()
    first = current(page)
    press_and_wait(page, "a")
    second = current(page)
    assert second != first

    # P: back to the accepted item; W withdraws the decision and the same item comes back undecided
    press_and_wait(page, "p")
    assert current(page) == first
    expect(page.locator("#own-notice")).to_contain_text("You accepted this candidate")
    assert_accessible(page, "review screen, revisiting a decision")
    shot(page, "undo-01-previous")
    press_and_wait(page, "w")
    assert current(page) == first and page.locator("#own-notice").count() == 0
    assert not ReviewDecision.objects.filter(candidate_id=first).exists()
    # decide it anew: a rejection; Next then resumes the item that was held before going back
    press_and_wait(page, "r", "Enter")
    assert current(page) == second
    assert ReviewDecision.objects.get(candidate_id=first, reviewer=annotator_de).decision == "reject"

    # a skip, then the Previous button (a click): deciding the skipped item replaces the skip
    press_and_wait(page, "s", "2", "Enter")
    third = current(page)
    assert ReviewSkip.objects.filter(candidate_id=second).exists()
    with page.expect_navigation():
        page.get_by_role("link", name="Previous").click()
    assert current(page) == second
    expect(page.locator("#own-notice")).to_contain_text("You skipped this candidate")
    expect(page.get_by_role("button", name="Withdraw my skip")).to_be_visible()
    press_and_wait(page, "a")
    assert current(page) == third
    assert not ReviewSkip.objects.filter(candidate_id=second).exists()
    assert ReviewDecision.objects.get(candidate_id=second).decision == "accept"


def test_undo_of_a_decision_kept_on_this_device(project, languages, annotator_de, new_page):
    make_candidates(project, languages, "en-de", count=2)
    page = new_page()
    login(page, "anna_de", "anna-pass-123")
    page.goto("/review/demo/next/?lang=de")
    page.wait_for_selector("#candidate-text")
    item = current(page)
    page.route("**/api/review/decisions/", lambda route: route.abort("internetdisconnected"))
    page.keyboard.press("a")
    expect(page.locator("#send-status")).to_contain_text("kept on this device")
    withdraw = page.get_by_role("button", name="Withdraw my decision")
    expect(withdraw).to_be_visible()
    expect(withdraw).to_be_enabled()
    shot(page, "undo-02-kept-on-device")
    # the connection is back for withdrawals only: the undo goes out, the decision never does
    with page.expect_navigation():
        withdraw.click()
    page.wait_for_selector("#candidate-text")
    assert current(page) == item
    box = f"xqmeval.outbox.v2:{annotator_de.pk}:demo"
    assert page.evaluate("(key) => localStorage.getItem(key)", box) is None
    page.unroute("**/api/review/decisions/")
    assert not ReviewDecision.objects.exists()
    # the item is still this reviewer's to decide, and now the decision is stored
    press_and_wait(page, "r", "Enter")
    assert ReviewDecision.objects.get(candidate_id=item).decision == "reject"


def test_undo_while_the_decision_is_on_its_way(project, languages, annotator_de, new_page):
    """W pressed while the decision's request is under way: it still arrives and is stored, and the
    withdrawal, sent after it, removes it; the page stays on the item instead of moving on."""
    make_candidates(project, languages, "en-de", count=2)
    page = new_page()
    login(page, "anna_de", "anna-pass-123")
    page.goto("/review/demo/next/?lang=de")
    page.wait_for_selector("#candidate-text")
    item = current(page)
    held, state = [], {"release": False}

    def hold(route):  # the request stays in flight until the test lets it through
        if state["release"]:
            route.continue_()
        else:
            held.append(route)

    page.route("**/api/review/decisions/", hold)
    with page.expect_request("**/api/review/decisions/"):
        page.keyboard.press("a")
    expect(page.locator("#withdraw-button")).to_be_visible()
    with page.expect_navigation():
        page.keyboard.press("w")
        state["release"] = True
        for route in held:
            route.continue_()
    page.wait_for_selector("#candidate-text")
    assert current(page) == item
    actions = list(AuditEvent.objects.filter(object_type="annotation.reviewdecision").values_list("action", flat=True))
    assert sorted(actions) == ["decision.create", "decision.withdraw"]  # it arrived, then it was withdrawn
    assert not ReviewDecision.objects.exists()
