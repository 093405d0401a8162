"""One round numbering on the review pages (#37 item 10: the URL said round=2 where the page said round 1):
every link and form names a round by the number the page shows, never by its database id."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import ReviewRound
from annotation.review import services
from core.services import project_directions_add, project_ensure
from tests.annotation.review.factories import make_candidate

pytestmark = pytest.mark.django_db


@pytest.fixture
def later_round(project, languages):
    """The project's round 1 whose id is not 1: another project's rounds were made before it."""
    other, _ = project_ensure(name="other", title="Other")
    project_directions_add(project=other, codes=["en-de"])
    for number in (1, 2):
        ReviewRound.objects.create(project=other, number=number)
    rnd = ReviewRound.objects.create(project=project, number=1)
    assert rnd.pk != rnd.number
    return rnd


def _shown_round(page: str) -> str:
    return re.search(r"· round (\d+)</span></h1>", page).group(1)


def test_review_url_names_the_round_the_page_shows(client, project, languages, annotator_de, later_round):
    cand = make_candidate(project, languages["en-de"], "A red dog.", "Ein roter Hund.", "Ein blauer Hund.")
    client.force_login(annotator_de)
    taken = client.post(reverse("review:next", args=[project.name]))
    assert taken.status_code == 302
    url = taken["Location"]
    assert re.search(r"[?&]round=(\d+)", url).group(1) == "1"
    page = client.get(url).content.decode()
    assert _shown_round(page) == "1"
    assert re.search(r'name="round" value="(\d+)"', page).group(1) == "1"  # the no-JavaScript form's round
    # the form path stores the decision in that round
    client.post(url, {"action": "accept", "idempotency_key": "round-number-1"})
    assert cand.decisions.get().round_id == later_round.pk


def test_own_work_links_name_the_round_number(client, project, languages, annotator_de, later_round):
    de = languages["en-de"]
    decided = make_candidate(project, de, "A red dog.", "Ein roter Hund.", "Ein blauer Hund.")
    skipped = make_candidate(project, de, "A cat sleeps.", "Eine Katze schläft.", "Eine Katze rennt.")
    services.decision_submit(user=annotator_de, candidate_id=decided.pk, decision="accept", idempotency_key="k1")
    services.candidate_skip(user=annotator_de, candidate_id=skipped.pk, reason="unsure")
    client.force_login(annotator_de)
    page = client.get(reverse("review:mine")).content.decode()
    links = re.findall(r'href="[^"]*/candidate/\d+/\?round=(\d+)"', page)
    assert sorted(links) == ["1", "1"]
    for link in re.findall(r'href="([^"]*/candidate/\d+/\?round=\d+)"', page):
        assert _shown_round(client.get(link).content.decode()) == "1"


def test_a_round_number_the_project_lacks_is_a_clear_error(client, project, languages, annotator_de, later_round):
    cand = make_candidate(project, languages["en-de"], "A red dog.", "Ein roter Hund.", "Ein blauer Hund.")
    client.force_login(annotator_de)
    url = reverse("review:candidate", args=[project.name, cand.pk])
    answer = client.get(url + f"?round={later_round.pk}")  # an id, not a number of this project
    assert (
        answer.status_code == 400
        and f"round {later_round.pk} is not a round of project demo" in answer.content.decode()
    )
