"""Bad input to the span API gets a clear 4xx and writes nothing: a span past the text, 10,000 spans on one
item, a score out of range, a span posted on another annotator's item, a replay of a key with another body.
A good submission goes through and answers with what it stored."""

import json

import pytest
from django.urls import reverse

from annotation.models import AuditEvent, ErrorSpan, SpanAnnotation, UsedIdempotencyKey
from annotation.spans import services
from tests.annotation.spans.conftest import client_for

pytestmark = pytest.mark.django_db


def post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def snapshot():
    return (
        list(SpanAnnotation.objects.order_by("pk").values_list("pk", "score", "submitted_at", "active_ms")),
        ErrorSpan.objects.count(),
        UsedIdempotencyKey.objects.count(),
        AuditEvent.objects.count(),
    )


@pytest.fixture
def held(esa_task, annotator_de):
    return services.span_annotation_take_next(user=annotator_de, task=esa_task)


def test_next_and_submit_through_the_api(esa_task, annotator_de, held):
    client = client_for(annotator_de, "anna-pass-123")
    r = client.post(reverse("spans_api:next", args=[esa_task.pk]))
    assert r.status_code == 200 and r.json()["annotation"]["id"] == held.pk  # resumes the held one
    body = {
        "spans": [{"side": "target", "start": 0, "end": 3, "severity": "major"}],
        "score": 55,
        "idempotency_key": "ok-1",
        "client_user": annotator_de.pk,
    }
    r = post(client, reverse("spans_api:submit", args=[held.pk]), body)
    assert r.status_code == 201, r.content
    assert r.json()["score"] == 55 and r.json()["spans"][0]["severity"] == "major"
    r = post(client, reverse("spans_api:submit", args=[held.pk]), body)  # the same key and body: a replay
    assert r.status_code == 200 and ErrorSpan.objects.count() == 1
    r = client.get(reverse("spans_api:annotation", args=[held.pk]))
    assert r.status_code == 200 and r.json()["translation"] == held.item.translation


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (
            {"spans": [{"side": "target", "start": 0, "end": 500, "severity": "minor"}], "score": 50},
            400,
            "not a span of the target",
        ),
        (
            {"spans": [{"side": "source", "start": 20, "end": 200, "severity": "minor"}], "score": 50},
            400,
            "not a span of the source",
        ),
        (
            {"spans": [{"side": "target", "start": 0, "end": 1, "severity": "minor"}] * 10_000, "score": 50},
            400,
            "at most 100",
        ),
        ({"spans": [], "score": 101}, 400, "out of range"),
        ({"spans": [], "score": -5}, 400, "out of range"),
        ({"spans": [], "score": None}, 400, "score is required"),
        ({"spans": [{"side": "target", "start": 0, "end": 1, "severity": "fatal"}], "score": 50}, 400, "severity"),
        ({"spans": "all of it", "score": 50}, 400, ""),
        ({"spans": [], "score": 50, "client_user": 999999}, 403, "another user"),
    ],
)
def test_bad_submissions_are_refused_and_write_nothing(annotator_de, held, body, status, words):
    client = client_for(annotator_de, "anna-pass-123")
    before = snapshot()
    r = post(client, reverse("spans_api:submit", args=[held.pk]), {"idempotency_key": "bad-1", **body})
    assert r.status_code == status, r.content[:300]
    assert words in json.dumps(r.json())
    assert snapshot() == before


def test_another_annotators_item_answers_404_and_writes_nothing(esa_task, annotator_de, second_de, held):
    client = client_for(second_de, "ben-pass-123")
    before = snapshot()
    r = post(
        client, reverse("spans_api:submit", args=[held.pk]), {"spans": [], "score": 50, "idempotency_key": "ben-1"}
    )
    assert r.status_code == 404
    assert client.get(reverse("spans_api:annotation", args=[held.pk])).status_code == 404
    assert snapshot() == before


def test_a_replay_with_another_body_is_refused(annotator_de, held):
    client = client_for(annotator_de, "anna-pass-123")
    url = reverse("spans_api:submit", args=[held.pk])
    assert post(client, url, {"spans": [], "score": 50, "idempotency_key": "same"}).status_code == 201
    before = snapshot()
    r = post(client, url, {"spans": [], "score": 20, "idempotency_key": "same"})
    assert r.status_code == 422 and r.json()["code"] == "key_mismatch"
    assert snapshot() == before
    held.refresh_from_db()
    assert held.score == 50


def test_viewers_read_aggregates_only(esa_task, held, db):
    from core.services import user_create

    viewer = user_create(username="vic", password="vic-pass-123", role="viewer", languages=["de"])
    client = client_for(viewer, "vic-pass-123")
    r = client.get(reverse("spans_api:summary", args=[esa_task.pk]))
    assert r.status_code == 200 and r.json()["items"] == 4 and "Katze" not in r.content.decode()
    assert client.post(reverse("spans_api:next", args=[esa_task.pk])).status_code == 404
    assert client.get(reverse("spans_api:annotation", args=[held.pk])).status_code == 404
