"""The rating API refuses a rating that misses a dimension, naming it, and stores a complete one."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import RatingItem

pytestmark = pytest.mark.django_db


@pytest.fixture
def data(project, languages):
    item = RatingItem.objects.create(
        project=project,
        direction=languages["en-de"],
        kind="system_output",
        source="Hi.",
        reference="Hallo.",
        text="Hallo!",
        system="s1",
    )
    return {"item": item}


@pytest.fixture
def de_client(annotator_de):
    client = Client()
    assert client.login(username=annotator_de.username, password="anna-pass-123")
    return client


def call(client, method, url, body):
    if method == "get":
        return client.get(url)
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_api_rating_requires_all_dimensions(project, data, de_client):
    r = call(
        de_client,
        "post",
        reverse("review_api:ratings"),
        {"item": data["item"].pk, "idempotency_key": "r1", "clarity": 4},
    )
    assert r.status_code == 400 and "informativeness" in r.json()["detail"]
    scores = {"informativeness": 4, "clarity": 4, "plausibility": 5, "faithfulness": 2}
    r = call(
        de_client, "post", reverse("review_api:ratings"), {"item": data["item"].pk, "idempotency_key": "r1", **scores}
    )
    assert r.status_code == 201 and r.json()["faithfulness"] == 2
