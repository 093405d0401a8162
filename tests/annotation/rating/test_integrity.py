"""Rating integrity over the HTTP API: a key answers with what it did then, and a key used again for other
scores is refused, naming the key."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import LikertRating, RatingItem

pytestmark = pytest.mark.django_db

SCORES = {"informativeness": 4, "clarity": 4, "plausibility": 5, "faithfulness": 2}


@pytest.fixture
def item(project, languages):
    return RatingItem.objects.create(
        project=project,
        direction=languages["en-de"],
        kind="system_output",
        source="Hi.",
        reference="Hallo.",
        text="Hallo!",
        system="s1",
    )


@pytest.fixture
def anna(annotator_de):
    client = Client()
    client.force_login(annotator_de)
    return client


def post(client, name, body):
    return client.post(reverse(f"review_api:{name}"), data=json.dumps(body), content_type="application/json")


def test_a_rating_key_replayed_with_other_scores_is_refused(item, anna, annotator_de):
    first = post(anna, "ratings", {"item": item.pk, "idempotency_key": "R1", **SCORES})
    assert first.status_code == 201
    r = post(anna, "ratings", {"item": item.pk, "idempotency_key": "R1", **SCORES, "clarity": 1})
    assert r.status_code == 422 and r.json()["field"] == "idempotency_key" and "'R1'" in r.json()["detail"]
    assert LikertRating.objects.get(item=item, rater=annotator_de).clarity == SCORES["clarity"]
    assert post(anna, "ratings", {"item": item.pk, "idempotency_key": "R1", **SCORES}).json() == first.json()


def test_late_duplicate_of_an_old_rating_key_does_not_undo_a_newer_rating(item, anna, annotator_de):
    first = post(anna, "ratings", {"item": item.pk, "idempotency_key": "R1", **SCORES})
    assert first.status_code == 201
    assert post(anna, "ratings", {"item": item.pk, "idempotency_key": "R2", **SCORES, "clarity": 1}).status_code == 200
    late = post(anna, "ratings", {"item": item.pk, "idempotency_key": "R1", **SCORES})
    assert late.status_code == 200 and late.json() == first.json()
    rating = LikertRating.objects.get(item=item, rater=annotator_de)
    assert (rating.clarity, rating.idempotency_key) == (1, "R2")
