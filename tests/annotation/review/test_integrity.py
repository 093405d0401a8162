"""Review integrity over the HTTP API and the no-JavaScript form: a key answers with what it did then,
a closed round is closed for every write, and nothing is stored under a user other than the one the
client recorded it for."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import AuditEvent, LikertRating, RatingItem, ReviewDecision, ReviewSkip, UsedIdempotencyKey
from annotation.review import selectors, services
from core.services import user_create
from tests.annotation.review.factories import make_candidates

pytestmark = pytest.mark.django_db

SCORES = {"informativeness": 4, "clarity": 4, "plausibility": 5, "faithfulness": 2}


@pytest.fixture
def cands(project, languages):
    return make_candidates(project, languages, "en-de", count=3)


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


# ---- idempotency: a key once used answers with what it did then -------------------------------------


def test_late_duplicate_of_an_old_key_does_not_undo_a_newer_decision(cands, anna, annotator_de):
    body = {"candidate": cands[0].pk, "decision": "accept", "comment": "fine", "idempotency_key": "K1"}
    first = post(anna, "decisions", body)
    assert first.status_code == 201
    changed = post(
        anna,
        "decisions",
        {**body, "decision": "reject", "reason": "wrong_type", "comment": "no", "idempotency_key": "K2"},
    )
    assert changed.status_code == 200 and changed.json()["decision"] == "reject"
    late = post(anna, "decisions", body)  # the first request, delivered again late
    assert late.status_code == 200
    assert late.json() == first.json()  # the original response, key and timestamps included
    current = ReviewDecision.objects.get(candidate=cands[0], reviewer=annotator_de)
    assert (current.decision, current.reason, current.comment, current.idempotency_key) == (
        "reject",
        "wrong_type",
        "no",
        "K2",
    )
    assert AuditEvent.objects.filter(action="decision.change").count() == 1
    # K2 resent with its own body also answers as it did
    k2 = {**body, "decision": "reject", "reason": "wrong_type", "comment": "no", "idempotency_key": "K2"}
    assert post(anna, "decisions", k2).json() == changed.json()
    assert ReviewDecision.objects.get(candidate=cands[0], reviewer=annotator_de).decision == "reject"


# ---- a key is bound to its request: another body under a used key is refused -----------------------------


def test_a_key_replayed_with_another_body_is_refused_naming_the_key(cands, anna, annotator_de):
    """The attack in issue 36: candidate 1 decided with key k, then candidate 2 sent with k answered 200 with
    candidate 1's decision and stored nothing for candidate 2."""
    first = post(anna, "decisions", {"candidate": cands[0].pk, "decision": "accept", "idempotency_key": "k"})
    assert first.status_code == 201
    before = list(ReviewDecision.objects.order_by("pk").values_list()), AuditEvent.objects.count()
    for other in (
        {"candidate": cands[1].pk, "decision": "reject", "idempotency_key": "k"},  # another candidate
        {
            "candidate": cands[0].pk,
            "decision": "reject",
            "reason": "wrong_type",
            "idempotency_key": "k",
        },  # another decision
        {"candidate": cands[0].pk, "decision": "accept", "comment": "changed my mind", "idempotency_key": "k"},
    ):
        r = post(anna, "decisions", other)
        assert r.status_code == 422, (other, r.status_code, r.content)
        assert r.json()["field"] == "idempotency_key" and "'k'" in r.json()["detail"]
    assert (list(ReviewDecision.objects.order_by("pk").values_list()), AuditEvent.objects.count()) == before
    # the same body still replays, timing apart (a retry measures its own time)
    again = post(
        anna, "decisions", {"candidate": cands[0].pk, "decision": "accept", "idempotency_key": "k", "time_spent_ms": 5}
    )
    assert again.status_code == 200 and again.json() == first.json()
    # the screen's form path answers the same way: the message names the key, nothing stored
    url = reverse("review:candidate", args=[cands[1].segment.project.name, cands[1].pk])
    r = anna.post(url, {"action": "reject", "idempotency_key": "k"}, follow=True)
    assert "idempotency key &#x27;k&#x27; was already used" in r.content.decode()
    assert not ReviewDecision.objects.filter(candidate=cands[1]).exists()


def test_keys_stored_before_the_request_hash_still_replay(cands, anna):
    first = post(anna, "decisions", {"candidate": cands[0].pk, "decision": "accept", "idempotency_key": "old"})
    UsedIdempotencyKey.objects.filter(key="old").update(request_hash="")  # as migration 0010 leaves older keys
    assert (
        post(anna, "decisions", {"candidate": cands[0].pk, "decision": "accept", "idempotency_key": "old"}).json()
        == first.json()
    )


def test_a_used_key_stays_refused_for_another_user(cands, anna, project):
    assert (
        post(anna, "decisions", {"candidate": cands[0].pk, "decision": "accept", "idempotency_key": "K1"}).status_code
        == 201
    )
    assert (
        post(anna, "decisions", {"candidate": cands[0].pk, "decision": "reject", "idempotency_key": "K2"}).status_code
        == 200
    )
    ben = Client()
    ben.force_login(user_create(username="ben_de", password="ben-pass-123", languages=["de"]))
    r = post(ben, "decisions", {"candidate": cands[1].pk, "decision": "accept", "idempotency_key": "K1"})
    assert r.status_code == 409 and r.json()["field"] == "idempotency_key"
    assert not ReviewDecision.objects.filter(reviewer__username="ben_de").exists()


# ---- closed rounds: closed for changes and skips too ---------------------------------------------------


def test_closed_round_refuses_changes_and_skips(project, cands, anna, annotator_de, admin_user):
    rnd = selectors.first_round(project)
    assert (
        post(
            anna,
            "decisions",
            {"candidate": cands[0].pk, "decision": "accept", "idempotency_key": "K1", "round": rnd.pk},
        ).status_code
        == 201
    )
    services.round_close(admin=admin_user, rnd=rnd)
    change = post(
        anna, "decisions", {"candidate": cands[0].pk, "decision": "reject", "idempotency_key": "K2", "round": rnd.pk}
    )
    assert change.status_code == 409 and "closed" in change.json()["detail"]
    new = post(
        anna, "decisions", {"candidate": cands[1].pk, "decision": "reject", "idempotency_key": "K3", "round": rnd.pk}
    )
    assert new.status_code == 409 and "closed" in new.json()["detail"]
    skip = post(anna, "skips", {"candidate": cands[2].pk, "reason": "unsure", "round": rnd.pk})
    assert skip.status_code == 409 and "closed" in skip.json()["detail"]
    # the same through the screen's form path: refused with the message, nothing changed
    url = reverse("review:candidate", args=[project.name, cands[0].pk]) + f"?round={rnd.number}"
    assert 'id="round-closed"' in anna.get(url).content.decode()
    r = anna.post(url, {"action": "reject", "idempotency_key": "K4"}, follow=True)
    assert "round 1 is closed" in r.content.decode()
    r = anna.post(url, {"action": "skip", "skip_reason": "unsure"}, follow=True)
    assert "round 1 is closed" in r.content.decode()
    assert ReviewDecision.objects.get(reviewer=annotator_de).decision == "accept"
    assert ReviewDecision.objects.filter(reviewer=annotator_de).count() == 1 and not ReviewSkip.objects.exists()
    # the key used before the round closed still answers with what it did
    assert (
        post(
            anna,
            "decisions",
            {"candidate": cands[0].pk, "decision": "accept", "idempotency_key": "K1", "round": rnd.pk},
        ).status_code
        == 200
    )


# ---- the client-side owner -----------------------------------------------------------------------------


def test_submission_recorded_for_another_user_is_refused(project, cands, item, anna, annotator_de):
    other = user_create(username="li_de", password="li-pass-123", languages=["de"])
    for name, body in [
        ("decisions", {"candidate": cands[0].pk, "decision": "reject", "comment": "anna's", "idempotency_key": "A1"}),
        ("skips", {"candidate": cands[1].pk, "reason": "unsure"}),
        ("ratings", {"item": item.pk, "idempotency_key": "A2", **SCORES}),
    ]:
        r = post(anna, name, {**body, "client_user": other.pk})
        assert r.status_code == 403, name
        assert r.json()["field"] == "client_user" and "another user" in r.json()["detail"]
    url = reverse("review:candidate", args=[project.name, cands[0].pk])
    r = anna.post(url, {"action": "accept", "idempotency_key": "A3", "client_user": other.pk}, follow=True)
    assert "another user" in r.content.decode()
    assert not ReviewDecision.objects.exists() and not ReviewSkip.objects.exists() and not LikertRating.objects.exists()
    # recorded for the user who sends it: stored
    ok = post(
        anna,
        "decisions",
        {"candidate": cands[0].pk, "decision": "reject", "idempotency_key": "A4", "client_user": annotator_de.pk},
    )
    assert ok.status_code == 201 and ReviewDecision.objects.get().reviewer == annotator_de


def test_screens_record_the_user_they_were_rendered_for(project, cands, item, anna, annotator_de):
    html = anna.get(reverse("review:candidate", args=[project.name, cands[0].pk])).content.decode()
    assert f'name="client_user" value="{annotator_de.pk}"' in html
    assert f'"user": {annotator_de.pk}' in html and '"project": "demo"' in html
    html = anna.get(reverse("review:rate", args=[item.pk])).content.decode()
    assert f'name="client_user" value="{annotator_de.pk}"' in html and f'"user": {annotator_de.pk}' in html


# ---- bidi control characters: every untrusted run is its own isolate -----------------------------------

RLO = "\u202e"


def test_untrusted_text_runs_are_bidi_isolates(project, languages, admin_user, annotator_de):
    from tests.annotation.review.factories import make_candidate

    evil = user_create(username="ben_de", password="ben-pass-123", languages=["de"])
    # new names are checked now (core.services.username_clean); an account from before may still hold one
    type(evil).objects.filter(pk=evil.pk).update(username=f"ben{RLO}_de")
    evil.refresh_from_db()
    cand = make_candidate(
        project,
        languages["en-de"],
        f"He {RLO}said hi.",
        f"Er {RLO}sagte hallo.",
        f"Er {RLO}sagte schnell hallo.",
        error_type=f"Addition{RLO}",
        checks={f"check{RLO}": {"passed": False, "detail": f"detail {RLO}here"}},
        flags=[f"check{RLO}"],
    )
    rnd = selectors.first_round(project)
    for user, decision in [(annotator_de, "accept"), (evil, "reject")]:
        ReviewDecision.objects.create(
            candidate=cand, reviewer=user, round=rnd, decision=decision, comment=f"c{RLO}omment"
        )
    client = Client()
    client.force_login(evil)
    html = client.get(reverse("review:candidate", args=[project.name, cand.pk])).content.decode()
    for run in (
        f'<bdi dir="ltr">He {RLO}said hi.</bdi>',
        f'<bdi dir="ltr">Er {RLO}sagte </bdi>',
        '<mark class="edit" dir="ltr">schnell</mark>',
        f'<bdi class="who">ben{RLO}_de</bdi>',
        f'<bdi class="type-badge">Addition{RLO}</bdi>',
    ):
        assert run in html, run
    assert f"<bdi>check{RLO}</bdi>" in html and f"<bdi>detail {RLO}here</bdi>" in html  # automatic checks' warnings
    client.force_login(admin_user)
    html = client.get(reverse("review:adjudication", args=[project.name])).content.decode()
    assert f"<bdi>ben{RLO}_de</bdi>" in html and f"<bdi>c{RLO}omment</bdi>" in html
    item = RatingItem.objects.create(
        project=project,
        direction=languages["en-de"],
        kind="system_output",
        source=f"a{RLO}b",
        reference="r",
        text=f"t{RLO}x",
        system=f"sys{RLO}",
    )
    html = client.get(reverse("review:rate", args=[item.pk])).content.decode()
    assert f'<bdi dir="ltr">t{RLO}x</bdi>' in html and f"<bdi>sys{RLO}</bdi>" in html


# ---- assignment: the screen and the API apply the same rule ---------------------------------------------


def test_untaken_candidate_same_rule_on_screen_and_api(project, cands, anna, annotator_de):
    """Not taken from the queue: allowed while a slot is free, refused (409) once others hold all N."""
    others = [user_create(username=f"rev{i}_de", password="rev-pass-123", languages=["de"]) for i in range(2)]
    for user in others:  # both take the first candidate from the queue: its N = 2 slots are held
        assert services.candidate_take_next(user=user, project=project, language="de").candidate == cands[0]
    api = post(anna, "decisions", {"candidate": cands[0].pk, "decision": "accept", "idempotency_key": "U1"})
    assert api.status_code == 409 and "already has its 2 reviewers" in api.json()["detail"]
    url = reverse("review:candidate", args=[project.name, cands[0].pk])
    screen = anna.post(url, {"action": "accept", "idempotency_key": "U2", "client_user": annotator_de.pk}, follow=True)
    assert "already has its 2 reviewers" in screen.content.decode()
    assert not ReviewDecision.objects.filter(reviewer=annotator_de).exists()
    # a candidate with free slots, never taken by anna: allowed on both paths
    assert (
        post(anna, "decisions", {"candidate": cands[1].pk, "decision": "accept", "idempotency_key": "U3"}).status_code
        == 201
    )
    url = reverse("review:candidate", args=[project.name, cands[2].pk])
    assert (
        anna.post(url, {"action": "reject", "idempotency_key": "U4", "client_user": annotator_de.pk}).status_code == 302
    )
    assert sorted(ReviewDecision.objects.filter(reviewer=annotator_de).values_list("candidate_id", flat=True)) == [
        cands[1].pk,
        cands[2].pk,
    ]


def test_keys_stored_before_the_key_table_still_answer(cands, item, anna, annotator_de):
    """Migration 0004 copies the keys already on decisions and ratings into the table."""
    import importlib

    from django.apps import apps

    from annotation.models import UsedIdempotencyKey

    first = post(anna, "decisions", {"candidate": cands[0].pk, "decision": "accept", "idempotency_key": "OLD"})
    rated = post(anna, "ratings", {"item": item.pk, "idempotency_key": "OLDR", **SCORES})
    UsedIdempotencyKey.objects.all().delete()  # as before the migration
    importlib.import_module("annotation.migrations.0004_used_idempotency_keys").remember_existing_keys(apps, None)
    assert UsedIdempotencyKey.objects.count() == 2
    again = post(anna, "decisions", {"candidate": cands[0].pk, "decision": "reject", "idempotency_key": "OLD"})
    assert again.status_code == 200 and again.json() == first.json()
    assert (
        post(anna, "ratings", {"item": item.pk, "idempotency_key": "OLDR", **SCORES, "clarity": 1}).json()
        == rated.json()
    )
    assert ReviewDecision.objects.get().decision == "accept" and LikertRating.objects.get().clarity == 4
