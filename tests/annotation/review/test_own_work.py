"""An annotator's own work (#37.4): /review/mine/ shows each decision with the candidate's text (in the
direction of its language), filterable, and lists their skips and "broken item" reports with a way back
to each; an admin sees every reviewer's skips and reports of a project on the review manage page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.review import services
from core.services import user_create
from tests.annotation.review.factories import make_candidate

pytestmark = pytest.mark.django_db


@pytest.fixture
def work(project, languages, annotator_de):
    de, ar = languages["en-de"], languages["en-ar"]
    user_create(username="sara_ar", password="sara-pass-123", languages=["ar"])
    german = make_candidate(project, de, "A red dog.", "Ein roter Hund.", "Ein blauer Hund.")
    other = make_candidate(project, de, "A cat sleeps.", "Eine Katze schläft.", "Eine Katze rennt.")
    arabic = make_candidate(project, ar, "The dog.", "الكلب نائم.", "القط نائم.")
    services.decision_submit(user=annotator_de, candidate_id=german.pk, decision="accept", idempotency_key="k1")
    services.candidate_skip(user=annotator_de, candidate_id=other.pk, reason="broken_item", comment="half missing")
    return {"german": german, "other": other, "arabic": arabic}


def test_mine_shows_the_text_filters_and_lists_skips_with_a_way_back(client, annotator_de, work):
    client.force_login(annotator_de)
    page = client.get(reverse("review:mine")).content.decode()
    assert "Ein blauer Hund." in page and "<th>Candidate</th>" in page
    assert "Eine Katze rennt." in page and "item is broken or unreadable" in page and "half missing" in page
    back = reverse("review:candidate", args=["demo", work["other"].pk])
    assert f'href="{back}?round=' in page
    assert (
        "No decisions match the filter" in client.get(reverse("review:mine"), {"decision": "reject"}).content.decode()
    )
    assert (
        "Ein blauer Hund."
        in client.get(reverse("review:mine"), {"decision": "accept", "direction": "en-de"}).content.decode()
    )
    filtered = client.get(reverse("review:mine"), {"direction": "en-zh"}).content.decode()
    assert "Ein blauer Hund." not in filtered and "Eine Katze rennt." not in filtered


def test_an_admin_sees_every_skip_of_the_project_and_others_see_only_their_own(client, admin_user, annotator_de, work):
    sara = user_create(username="sara_ar", password="sara-pass-123", languages=["ar"])
    services.candidate_skip(user=sara, candidate_id=work["arabic"].pk, reason="unsure")
    client.force_login(admin_user)
    page = client.get(reverse("review:manage", args=["demo"])).content.decode()
    assert "anna_de" in page and "sara_ar" in page and "Eine Katze rennt." in page
    assert 'lang="ar" dir="rtl"><bdi>القط نائم.</bdi></td>' in page  # Arabic text reads right to left in its cell
    client.force_login(sara)
    own = client.get(reverse("review:mine")).content.decode()
    assert "القط نائم." in own and "Eine Katze rennt." not in own


def test_the_review_index_counts_her_skipped_item_that_is_still_open(client, annotator_de, work):
    """#46.5: anna decided one German candidate and skipped the other; her queue is empty, but the skipped
    one still wants reviews. The index said "0 remaining" and nothing else; it says the skip is open and
    links to her skips."""
    client.force_login(annotator_de)
    page = client.get(reverse("review:index")).content.decode()
    assert "round 1: 1 done, 0 remaining, " in page
    assert f'<a href="{reverse("review:mine")}#skips">1 skipped by you and still open</a>' in page
    services.decision_submit(user=annotator_de, candidate_id=work["other"].pk, decision="reject", idempotency_key="k2")
    page = client.get(reverse("review:index")).content.decode()
    assert "round 1: 2 done, 0 remaining\n" in page and "still open" not in page
