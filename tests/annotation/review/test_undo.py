"""Previous and undo on the review screen (#37.4), through the service the screen, the API and /review/mine/
share: a reviewer goes back to what they decided or skipped before, changes or withdraws it while its round
is open (``services.round_check_revisable``), and a withdrawn item is theirs to decide again."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import AuditEvent, ReviewDecision, ReviewLock, ReviewSkip
from annotation.review import selectors, services
from core.services import user_create
from injection.models import Candidate
from tests.annotation.review.factories import make_candidates

pytestmark = pytest.mark.django_db


@pytest.fixture
def de_candidates(project, languages):
    return make_candidates(project, languages, "en-de")


@pytest.fixture
def second_de():
    return user_create(username="ben_de", password="ben-pass-123", languages=["de"])


def take_and_decide(user, project, decision="accept"):
    got = services.candidate_take_next(user=user, project=project)
    services.decision_submit(
        user=user, candidate_id=got.candidate.pk, decision=decision, idempotency_key=f"{user.pk}-{got.candidate.pk}"
    )
    return got.candidate


def previous(user, project, current=None, rnd=None):
    got = selectors.previous_item(user, project, ["de"], current=current, rnd=rnd)
    return got[:2] if got else None


def test_previous_walks_back_through_decisions_and_skips_in_order(project, de_candidates, annotator_de):
    rnd = selectors.first_round(project)
    assert previous(annotator_de, project) is None
    first = take_and_decide(annotator_de, project)
    second = services.candidate_take_next(user=annotator_de, project=project).candidate
    services.candidate_skip(user=annotator_de, candidate_id=second.pk, reason="unsure")
    third = take_and_decide(annotator_de, project, "reject")
    held = services.candidate_take_next(user=annotator_de, project=project).candidate
    assert len({first.pk, second.pk, third.pk, held.pk}) == 4
    # from the held (undecided) item: the last decision; from each item: the one decided before it
    assert previous(annotator_de, project, held, rnd) == (third.pk, rnd.pk)
    assert previous(annotator_de, project, third, rnd) == (second.pk, rnd.pk)
    assert previous(annotator_de, project, second, rnd) == (first.pk, rnd.pk)
    assert previous(annotator_de, project, first, rnd) is None
    # changing the first decision makes it the latest work
    services.decision_submit(
        user=annotator_de, candidate_id=first.pk, decision="reject", idempotency_key="change-first"
    )
    assert previous(annotator_de, project, held, rnd) == (first.pk, rnd.pk)
    assert previous(annotator_de, project, first, rnd) == (third.pk, rnd.pk)


def test_withdrawing_a_decision_frees_nothing_and_hands_the_item_back(project, de_candidates, annotator_de, second_de):
    third = user_create(username="cara_de", password="cara-pass-123", languages=["de"])
    cand = take_and_decide(annotator_de, project)
    services.decision_submit(user=second_de, candidate_id=cand.pk, decision="accept", idempotency_key="ben-1")
    assert Candidate.objects.get(pk=cand.pk).status == "accepted"

    got = services.decision_withdraw(
        user=annotator_de, candidate_id=cand.pk, round_id=selectors.first_round(project).pk
    )
    assert (got.withdrawn, got.held) == ("decision", True)
    assert not ReviewDecision.objects.filter(candidate=cand, reviewer=annotator_de).exists()
    assert Candidate.objects.get(pk=cand.pk).status == "pending"  # one review of two again
    event = AuditEvent.objects.get(action="decision.withdraw")
    assert event.old["decision"] == "accept" and event.actor == annotator_de
    # the slot stays the reviewer's: the queue resumes it for them, and a third reviewer cannot take it
    assert services.candidate_take_next(user=annotator_de, project=project).candidate == cand
    assert ReviewLock.objects.filter(candidate=cand, reviewer=annotator_de).exists()
    assert services.candidate_take_next(user=third, project=project).candidate != cand
    # deciding again stores a new decision (a fresh key), and the status follows
    services.decision_submit(user=annotator_de, candidate_id=cand.pk, decision="reject", idempotency_key="again")
    assert Candidate.objects.get(pk=cand.pk).status != "pending"


def test_withdrawing_a_skip_puts_the_item_back(project, de_candidates, annotator_de):
    cand = services.candidate_take_next(user=annotator_de, project=project).candidate
    services.candidate_skip(user=annotator_de, candidate_id=cand.pk, reason="broken_item", comment="cut off")
    assert services.candidate_take_next(user=annotator_de, project=project).candidate != cand  # a skip leaves the queue
    got = services.decision_withdraw(user=annotator_de, candidate_id=cand.pk)
    assert got.withdrawn == "skip" and got.held
    assert not ReviewSkip.objects.filter(candidate=cand).exists()
    assert AuditEvent.objects.get(action="review.unskip").old["reason"] == "broken_item"
    assert cand in selectors.queue(annotator_de, project, selectors.first_round(project), ["de"])


def test_deciding_a_skipped_item_replaces_the_skip(project, de_candidates, annotator_de):
    cand = services.candidate_take_next(user=annotator_de, project=project).candidate
    services.candidate_skip(user=annotator_de, candidate_id=cand.pk, reason="unsure")
    services.decision_submit(user=annotator_de, candidate_id=cand.pk, decision="accept", idempotency_key="after-skip")
    assert not ReviewSkip.objects.filter(candidate=cand).exists()
    assert ReviewDecision.objects.get(candidate=cand, reviewer=annotator_de).decision == "accept"


def test_nothing_to_withdraw_is_no_error_and_changes_nothing(project, de_candidates, annotator_de):
    cand = de_candidates[0]
    got = services.decision_withdraw(user=annotator_de, candidate_id=cand.pk)
    assert (got.withdrawn, got.held) == (None, False)
    assert not ReviewLock.objects.exists() and not AuditEvent.objects.exists()


def test_a_closed_round_refuses_change_and_withdrawal_and_previous_skips_it(
    project, de_candidates, annotator_de, admin_user
):
    cand = take_and_decide(annotator_de, project)
    rnd = selectors.first_round(project)
    services.round_close(admin=admin_user, rnd=rnd)
    with pytest.raises(services.Conflict, match="round 1 is closed"):
        services.decision_withdraw(user=annotator_de, candidate_id=cand.pk, round_id=rnd.pk)
    with pytest.raises(services.Conflict, match="round 1 is closed"):
        services.decision_submit(
            user=annotator_de, candidate_id=cand.pk, decision="reject", idempotency_key="late", round_id=rnd.pk
        )
    assert ReviewDecision.objects.get(candidate=cand).decision == "accept"
    assert previous(annotator_de, project) is None  # nothing of a closed round is offered


def test_withdrawal_is_refused_for_others_and_other_languages(project, languages, de_candidates, annotator_de):
    zh = make_candidates(project, languages, "en-zh", count=1)[0]
    with pytest.raises(services.NotFound):
        services.decision_withdraw(user=annotator_de, candidate_id=zh.pk)
    cand = take_and_decide(annotator_de, project)
    with pytest.raises(services.Forbidden):
        services.decision_withdraw(user=annotator_de, candidate_id=cand.pk, client_user=annotator_de.pk + 1)
    assert ReviewDecision.objects.filter(candidate=cand).exists()
    ben = user_create(username="ben_de", password="ben-pass-123", languages=["de"])
    assert (
        services.decision_withdraw(user=ben, candidate_id=cand.pk).withdrawn is None
    )  # another reviewer's decision is not theirs to undo
    assert ReviewDecision.objects.get(candidate=cand).reviewer == annotator_de


def test_the_api_and_the_no_javascript_form_withdraw(client, project, de_candidates, annotator_de):
    cand = take_and_decide(annotator_de, project)
    rnd = selectors.first_round(project)
    client.force_login(annotator_de)
    url = reverse("review_api:withdrawals")
    answer = client.post(url, {"candidate": cand.pk, "round": rnd.pk}, content_type="application/json")
    assert answer.status_code == 200
    assert answer.json() == {"candidate": cand.pk, "round": rnd.pk, "withdrawn": "decision", "held": True}
    again = client.post(url, {"candidate": cand.pk, "round": rnd.pk}, content_type="application/json")
    assert again.status_code == 200 and again.json()["withdrawn"] is None  # a retried undo
    assert client.post(url, {"candidate": 0}, content_type="application/json").status_code == 400

    services.decision_submit(
        user=annotator_de, candidate_id=cand.pk, decision="reject", idempotency_key="decided-again"
    )
    page = reverse("review:candidate", args=[project.name, cand.pk]) + f"?round={rnd.number}"
    shown = client.get(page).content.decode()
    assert 'id="withdraw-button"' in shown and "Withdraw my decision" in shown and "You rejected" in shown
    response = client.post(page, {"action": "withdraw", "round": rnd.number, "client_user": annotator_de.pk})
    assert response.status_code == 302 and response.url == page
    assert not ReviewDecision.objects.filter(candidate=cand).exists()
    after = client.get(page).content.decode()
    assert "You rejected" not in after and 'id="withdraw-button" hidden' in after


def test_the_screen_links_the_previous_item(client, project, de_candidates, annotator_de):
    first = take_and_decide(annotator_de, project)
    held = services.candidate_take_next(user=annotator_de, project=project)
    client.force_login(annotator_de)
    page = client.get(
        reverse("review:candidate", args=[project.name, held.candidate.pk]) + f"?round={held.round.number}"
    )
    back = reverse("review:candidate", args=[project.name, first.pk]) + f"?round={held.round.number}"
    assert f'href="{back}" id="previous-link"' in page.content.decode()
    assert page.context["config"]["previousUrl"] == back
