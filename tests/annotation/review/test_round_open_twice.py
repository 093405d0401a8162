"""Opening a review round twice: a double click on *Open round* (the same form sent again) opens one round;
opening another on purpose (after reviews in the first, after closing it, or with another sample) still does."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import AuditEvent, ReviewRound
from annotation.review import services
from tests.annotation.review.factories import make_candidates

pytestmark = pytest.mark.django_db

OPEN = {"action": "open_round", "sample_size": "2", "seed": "7", "languages": "de"}


@pytest.fixture
def accepted(project, languages, admin_user):
    """Four en-de candidates with the admin's final accept: a later round's population."""
    candidates = make_candidates(project, languages, "en-de", count=4)
    for candidate in candidates:
        services.candidate_adjudicate(admin=admin_user, candidate_id=candidate.pk, decision="accept")
    return candidates


def later_rounds(project) -> list[ReviewRound]:
    return list(ReviewRound.objects.filter(project=project, number__gt=1).order_by("number"))


def test_a_double_submit_of_the_open_round_form_opens_one_round(client, project, accepted, admin_user):
    client.force_login(admin_user)
    url = reverse("review:manage", args=[project.name])
    first, second = client.post(url, OPEN), client.post(url, OPEN)
    assert first.status_code == second.status_code == 302
    rounds = later_rounds(project)
    assert [(r.number, r.sample_size, r.seed, r.candidates.count()) for r in rounds] == [(2, 2, 7, 2)]
    assert AuditEvent.objects.filter(action="round.open").count() == 1
    page = client.get(second["Location"]).content.decode()
    assert "Round 2 is open on 2 candidates." in page  # the second answer names the round the first opened


def test_another_round_opens_once_the_first_has_a_review(project, accepted, admin_user, annotator_de):
    first = services.round_open(admin=admin_user, project=project, sample_size=2, seed=7)
    reviewed = first.candidates.first()
    services.decision_submit(
        user=annotator_de, candidate_id=reviewed.pk, decision="accept", round_id=first.pk, idempotency_key="k"
    )
    second = services.round_open(admin=admin_user, project=project, sample_size=2, seed=7)
    assert (first.number, second.number) == (2, 3)


def test_another_round_opens_once_the_first_is_closed(project, accepted, admin_user):
    first = services.round_open(admin=admin_user, project=project, sample_size=2, seed=7)
    services.round_close(admin=admin_user, rnd=first)
    assert services.round_open(admin=admin_user, project=project, sample_size=2, seed=7).number == 3


@pytest.mark.parametrize("changed", [{"sample_size": 3}, {"seed": 8}], ids=["sample_size", "seed"])
def test_another_sample_opens_another_round(project, accepted, admin_user, changed):
    services.round_open(admin=admin_user, project=project, sample_size=2, seed=7)
    other = services.round_open(admin=admin_user, project=project, **({"sample_size": 2, "seed": 7} | changed))
    assert other.number == 3 and [r.number for r in later_rounds(project)] == [2, 3]
