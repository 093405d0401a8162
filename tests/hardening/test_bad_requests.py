"""Unhandled 500s (issue 12 item 8): out-of-range integers in every query and path parameter, deeply nested
JSON bodies, invited usernames. Run on PostgreSQL (DATABASE_URL) for the out-of-range integers to matter."""

import json

import pytest
from django.test import Client

from annotation.models import RatingItem
from tests.annotation.review.factories import make_candidates

pytestmark = pytest.mark.django_db

HUGE = "99999999999999999999"  # over PostgreSQL's bigint


@pytest.fixture
def admin_client(admin_user):
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    return client


@pytest.fixture
def data(project, languages):
    de = make_candidates(project, languages, "en-de")
    item = RatingItem.objects.create(
        project=project,
        direction=languages["en-de"],
        kind="system_output",
        source="Hi.",
        reference="Hallo.",
        text="Hallo!",
        system="s1",
    )
    return {"de": de, "item": item}


def urls_with_integers(project, data):
    c = data["de"][0].pk
    return [
        f"/injection/candidates/?run={HUGE}",
        f"/injection/candidates/?run=-{HUGE}",
        f"/injection/candidates/?page={HUGE}",
        f"/injection/runs/{HUGE}/",
        f"/injection/runs/{HUGE}/progress.json",
        f"/review/{project.name}/candidate/{c}/?round={HUGE}",
        f"/review/{project.name}/candidate/{c}/?round=-1",
        f"/review/{project.name}/candidate/{HUGE}/",
        f"/review/rate/{HUGE}/",
        f"/api/review/decisions/?candidate={HUGE}",
        f"/api/review/candidates/{HUGE}/",
        f"/api/review/rating-items/{HUGE}/",
        f"/api/review/decisions/?page={HUGE}",
        f"/scores/{HUGE}/",
        f"/scores/{HUGE}/progress",
        f"/scores/{HUGE}/trend.svg",
        f"/scores/{HUGE}/metaeval/",
    ]


def test_out_of_range_integers_never_answer_500(admin_client, project, data):
    answers = {url: admin_client.get(url).status_code for url in urls_with_integers(project, data)}
    assert {url: code for url, code in answers.items() if code >= 500} == {}
    assert answers[f"/injection/candidates/?run={HUGE}"] == 200  # an unknown run: no rows, not an error


def test_out_of_range_integers_in_json_bodies_are_400(admin_client, project, data):
    c = data["de"][0].pk
    bodies = [
        ("/api/review/decisions/", {"candidate": int(HUGE), "decision": "accept", "idempotency_key": "k" * 16}),
        (
            "/api/review/decisions/",
            {"candidate": c, "decision": "accept", "idempotency_key": "k2" * 8, "round": int(HUGE)},
        ),
        (
            "/api/review/decisions/",
            {"candidate": c, "decision": "accept", "idempotency_key": "k4" * 8, "time_spent_ms": 2**40},
        ),
        ("/api/review/skips/", {"candidate": int(HUGE), "round": int(HUGE)}),
        ("/api/review/withdrawals/", {"candidate": int(HUGE), "round": int(HUGE)}),
        ("/api/review/ratings/", {"item": int(HUGE), "idempotency_key": "k3" * 8, "fluency": 3, "adequacy": 3}),
    ]
    for url, body in bodies:
        response = admin_client.post(url, json.dumps(body), content_type="application/json")
        assert 400 <= response.status_code < 500, (url, response.status_code, response.content[:300])


def test_a_deeply_nested_json_body_is_400(admin_client):
    body = "[" * 100_000 + "]" * 100_000
    response = admin_client.post("/api/review/decisions/", body, content_type="application/json")
    assert response.status_code == 400
    assert "JSON" in response.json()["detail"]


def test_admin_forms_with_out_of_range_integers_answer_a_message(admin_client, project, data):
    manage = f"/review/{project.name}/manage/"
    for form in (
        {"action": "open_round", "sample_size": HUGE, "seed": "1"},
        {"action": "open_round", "sample_size": "3", "seed": HUGE},
        {"action": "close_round", "round": HUGE},
        {"action": "close_round", "round": "abc"},
    ):
        response = admin_client.post(manage, form)
        assert response.status_code in (302, 404), (form, response.status_code)


@pytest.mark.parametrize("username", ["$\\mathrm{x}$", "anna bell", "a" * 151, "<script>"])
def test_invited_usernames_pass_djangos_username_validator(admin_client, username):
    from django.contrib.auth import get_user_model

    response = admin_client.post("/review/annotators/", {"action": "invite", "username": username})
    assert response.status_code == 200
    assert response.context["form"].errors["username"]
    assert not get_user_model().objects.filter(username=username).exists()


def test_a_valid_invited_username_is_created(admin_client):
    from django.contrib.auth import get_user_model

    response = admin_client.post("/review/annotators/", {"action": "invite", "username": "new.annotator"})
    assert response.status_code == 200 and get_user_model().objects.filter(username="new.annotator").exists()
