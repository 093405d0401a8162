"""Assignment, decisions, skips, rounds, adjudication and ratings through the services, on a real DB."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import AuditEvent, LikertRating, RatingItem, ReviewDecision, ReviewLock
from annotation.review import selectors, services
from core.services import create_user
from injection.models import Candidate
from tests.review.factories import make_candidates

pytestmark = pytest.mark.django_db


@pytest.fixture
def de_candidates(project, languages):
    return make_candidates(project, languages, "en-de")


@pytest.fixture
def second_de():
    return create_user("ben_de", "ben-pass-123", languages=["de"])


def decide(user, candidate, decision="accept", key=None, **kw):
    return services.submit_decision(
        user, candidate.pk, decision, idempotency_key=key or f"{user.pk}-{candidate.pk}-{decision}", **kw
    )


def test_queue_serves_only_own_languages(project, de_candidates, annotator_de, annotator_zh, languages):
    zh = make_candidates(project, languages, "en-zh")
    got = services.next_candidate(annotator_de, project)
    assert got.candidate.segment.direction.code == "en-de"
    got_zh = services.next_candidate(annotator_zh, project)
    assert got_zh.candidate in zh
    with pytest.raises(services.NotFound):
        decide(annotator_zh, de_candidates[0])


def test_resume_returns_the_held_item(project, de_candidates, annotator_de):
    first = services.next_candidate(annotator_de, project)
    again = services.next_candidate(annotator_de, project)
    assert again.candidate == first.candidate and again.resumed


def test_n_reviewers_then_status_unanimous(project, de_candidates, annotator_de, second_de):
    third = create_user("cara_de", "cara-pass-123", languages=["de"])
    a = services.next_candidate(annotator_de, project).candidate
    b = services.next_candidate(second_de, project).candidate
    assert a == b  # both reviewers are sent to the same first item (N = 2)
    # the third reviewer cannot get it: two slots are held
    c = services.next_candidate(third, project).candidate
    assert c != a
    decide(annotator_de, a, "accept")
    assert Candidate.objects.get(pk=a.pk).status == "pending"
    decide(second_de, a, "reject", reason="wrong_type")
    cand = Candidate.objects.get(pk=a.pk)
    assert cand.status == "rejected" and "unanimous" in cand.status_reason
    assert ReviewDecision.objects.filter(candidate=a).count() == 2
    with pytest.raises(services.Conflict):
        decide(third, a, "accept")


def test_never_the_same_candidate_twice(project, de_candidates, annotator_de):
    seen = []
    while (got := services.next_candidate(annotator_de, project)) is not None:
        seen.append(got.candidate.pk)
        decide(annotator_de, got.candidate)
    assert sorted(seen) == sorted(c.pk for c in de_candidates)


def test_idempotent_submission_and_change_is_audited(project, de_candidates, annotator_de):
    cand = services.next_candidate(annotator_de, project).candidate
    d1, created1 = decide(annotator_de, cand, "accept", key="k-1")
    d2, created2 = decide(annotator_de, cand, "accept", key="k-1")
    assert created1 and not created2 and d1.pk == d2.pk
    d3, created3 = decide(annotator_de, cand, "reject", key="k-2", reason="outside_changed")
    assert not created3 and d3.pk == d1.pk and d3.decision == "reject"
    assert ReviewDecision.objects.filter(candidate=cand).count() == 1
    change = AuditEvent.objects.get(action="decision.change")
    assert change.old["decision"] == "accept" and change.new["decision"] == "reject" and change.actor == annotator_de


def test_key_of_another_user_is_refused(project, de_candidates, annotator_de, second_de):
    decide(annotator_de, de_candidates[0], key="shared")
    with pytest.raises(services.Conflict):
        decide(second_de, de_candidates[1], key="shared")


def test_invalid_input_names_the_field(project, de_candidates, annotator_de):
    with pytest.raises(services.Invalid) as exc:
        services.submit_decision(annotator_de, de_candidates[0].pk, "maybe", idempotency_key="x")
    assert exc.value.field == "decision"
    with pytest.raises(services.Invalid) as exc:
        services.submit_decision(annotator_de, de_candidates[0].pk, "accept", idempotency_key="")
    assert exc.value.field == "idempotency_key"
    with pytest.raises(services.Invalid):
        services.submit_decision(annotator_de, de_candidates[0].pk, "accept", idempotency_key="y", reason="wrong_type")
    assert not ReviewDecision.objects.exists()


def test_expired_lock_frees_the_slot(project, de_candidates, annotator_de, second_de):
    third = create_user("cara_de", "cara-pass-123", languages=["de"])
    a = services.next_candidate(annotator_de, project).candidate
    services.next_candidate(second_de, project)
    ReviewLock.objects.filter(reviewer=second_de).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert services.next_candidate(third, project).candidate == a
    # the second reviewer comes back too late: both slots are now taken
    decide(annotator_de, a)
    decide(third, a)
    with pytest.raises(services.Conflict):
        decide(second_de, a)


def test_skip_removes_from_own_queue_only(project, de_candidates, annotator_de, second_de):
    a = services.next_candidate(annotator_de, project).candidate
    services.skip_candidate(annotator_de, a.pk, "unsure")
    assert services.next_candidate(annotator_de, project).candidate != a
    assert services.next_candidate(second_de, project).candidate == a
    with pytest.raises(services.Invalid):
        services.skip_candidate(annotator_de, a.pk, "bored")


def test_excluded_and_imported_are_not_served(project, de_candidates, annotator_de):
    Candidate.objects.filter(pk=de_candidates[0].pk).update(status="excluded")
    ReviewDecision.objects.create(candidate=de_candidates[1], decision="accept", source="imported", is_final=True)
    Candidate.objects.filter(pk=de_candidates[2].pk).update(is_gold=True, gold_answer="reject")
    served = []
    while (got := services.next_candidate(annotator_de, project)) is not None:
        served.append(got.candidate.pk)
        decide(annotator_de, got.candidate)
    assert de_candidates[0].pk not in served and de_candidates[1].pk not in served
    assert de_candidates[2].pk in served


def test_adjudicated_rule_and_adjudication(project, de_candidates, annotator_de, second_de, admin_user):
    project.pool_rule = "adjudicated"
    project.save()
    a = de_candidates[0]
    decide(annotator_de, a, "accept")
    decide(second_de, a, "reject")
    assert Candidate.objects.get(pk=a.pk).status == "pending"
    assert list(selectors.disagreements(project)) == [a]
    with pytest.raises(services.Forbidden):
        services.adjudicate(annotator_de, a.pk, "accept")
    services.adjudicate(admin_user, a.pk, "accept", comment="edit is a real addition")
    assert Candidate.objects.get(pk=a.pk).status == "accepted"
    assert list(selectors.disagreements(project)) == []
    # switching to unanimous keeps the adjudication (a final decision) deciding
    assert services.set_pool_rule(admin_user, project, "unanimous") == 0


def test_pool_rule_switch_rederives_statuses(project, de_candidates, annotator_de, second_de, admin_user):
    project.pool_rule = "adjudicated"
    project.save()
    decide(annotator_de, de_candidates[0], "accept")
    decide(second_de, de_candidates[0], "reject")
    assert services.set_pool_rule(admin_user, project, "unanimous") == 1
    assert Candidate.objects.get(pk=de_candidates[0].pk).status == "rejected"


def test_second_round_is_a_blind_sample(project, de_candidates, annotator_de, second_de, admin_user):
    for c in de_candidates:
        decide(annotator_de, c)
        decide(second_de, c)
    rnd = services.open_round(admin_user, project, sample_size=3, seed=11)
    assert rnd.number == 2 and rnd.candidates.count() == 3
    again = services.open_round(admin_user, project, sample_size=3, seed=11)
    assert set(again.candidates.values_list("id", flat=True)) == set(rnd.candidates.values_list("id", flat=True))
    services.close_round(admin_user, again)
    got = services.next_candidate(annotator_de, project)
    assert got.round == rnd and got.candidate in rnd.candidates.all()
    assert selectors.own_decision(annotator_de, got.candidate, rnd) is None  # round 1 is not shown as theirs
    visible = set(selectors.decisions_of(annotator_de).values_list("candidate_id", flat=True))
    assert not visible & set(rnd.candidates.values_list("id", flat=True))  # nor in their decision list
    assert len(visible) == len(de_candidates) - 3
    d, _ = decide(annotator_de, got.candidate, "reject", key="r2")
    assert d.round == rnd
    # round 2 does not change the pool status
    assert Candidate.objects.get(pk=got.candidate.pk).status == "accepted"


def test_progress_counts(project, de_candidates, annotator_de):
    rnd = selectors.first_round(project)
    assert selectors.progress(annotator_de, project, rnd, ["de"]) == {"done": 0, "remaining": 7, "round": 1}
    decide(annotator_de, de_candidates[0])
    assert selectors.progress(annotator_de, project, rnd, ["de"]) == {"done": 1, "remaining": 6, "round": 1}


def test_rating_flow(project, languages, annotator_de, annotator_zh):
    from core.services import ImportRejected

    rows = [{"id": "1", "source": "Hello.", "reference": "Hallo.", "text": "Hallo!", "system": "sysA"}]
    assert services.import_system_outputs(project, "en-de", rows, "out.jsonl").created == 1
    assert services.import_system_outputs(project, "en-de", rows, "out.jsonl").unchanged == 1
    with pytest.raises(ImportRejected) as exc:
        services.import_system_outputs(project, "en-de", [{"id": "2", "source": "", "text": "x"}], "bad.jsonl")
    assert "bad.jsonl:1" in str(exc.value) and "source" in str(exc.value)
    item = services.next_rating_item(annotator_de, project)
    assert item.system == "sysA"
    assert services.next_rating_item(annotator_zh, project) is None
    with pytest.raises(services.Invalid) as exc:
        services.submit_rating(annotator_de, item.pk, {"informativeness": 4}, idempotency_key="r1")
    assert "clarity" in exc.value.message
    scores = {"informativeness": 4, "clarity": 5, "plausibility": 5, "faithfulness": 3}
    r, created = services.submit_rating(annotator_de, item.pk, scores, idempotency_key="r1")
    r2, created2 = services.submit_rating(annotator_de, item.pk, scores, idempotency_key="r1")
    assert created and not created2 and r.pk == r2.pk
    assert services.next_rating_item(annotator_de, project) is None
    with pytest.raises(services.NotFound):
        services.submit_rating(annotator_zh, item.pk, scores, idempotency_key="r9")
    assert LikertRating.objects.count() == 1


def test_candidates_become_ratable(project, de_candidates):
    assert services.rating_items_for_candidates(project, Candidate.objects.all()) == 7
    assert services.rating_items_for_candidates(project, Candidate.objects.all()) == 0
    assert RatingItem.objects.filter(kind="candidate").count() == 7


def test_items_are_made_chunk_by_chunk_with_the_candidates_texts(project, de_candidates):
    first = Candidate.objects.order_by("pk")[:3]
    assert (
        services.make_ratable(project, Candidate.objects.filter(pk__in=[c.pk for c in first]), "candidate", chunk=2)
        == 3
    )
    steps: list[int] = []
    assert (
        services.make_ratable(project, Candidate.objects.all(), "candidate", progress=steps.append, chunk=2) == 4
    )  # 3 kept
    assert steps == [2, 2, 2, 1]
    items = {item.candidate_id: item for item in RatingItem.objects.filter(kind="candidate")}
    assert sorted(items) == sorted(c.pk for c in de_candidates)
    for candidate in Candidate.objects.select_related("segment"):
        item = items[candidate.pk]
        assert (item.project_id, item.direction_id, item.external_id) == (
            project.pk,
            candidate.segment.direction_id,
            str(candidate.pk),
        )
        assert (item.source, item.reference, item.text) == (
            candidate.segment.source,
            candidate.segment.reference,
            candidate.text,
        )


def test_a_failure_part_way_leaves_no_items(project, de_candidates):
    def stop_after_the_first_chunk(n):
        raise KeyboardInterrupt  # Ctrl-C under the command's progress bar

    with pytest.raises(KeyboardInterrupt):
        services.make_ratable(
            project, Candidate.objects.all(), "candidate", progress=stop_after_the_first_chunk, chunk=2
        )
    assert not RatingItem.objects.exists()
    with pytest.raises(ValueError, match="system_output"):
        services.make_ratable(project, Candidate.objects.all(), "system_output")


def test_invite_assigns_per_project_not_global_languages(admin_user, annotator_de, project):
    user, uid, token = services.invite_annotator(admin_user, "neu_ja", reviews=[("demo", "en-ja")])
    assert not user.has_usable_password() and token
    assert not user.profile.languages.exists()  # no global language: the assignment decides
    assert list(user.review_assignments.values_list("project__name", "direction__code")) == [("demo", "en-ja")]
    with pytest.raises(services.Forbidden):
        services.invite_annotator(annotator_de, "neu_zh")
    with pytest.raises(services.Conflict):
        services.invite_annotator(admin_user, "neu_ja")
    with pytest.raises(services.Invalid, match="reviews: demo/en-fr"):
        services.invite_annotator(admin_user, "neu_fr", reviews=[("demo", "en-fr")])
    event = AuditEvent.objects.get(action="annotator.invite")
    assert event.new == {"username": "neu_ja", "reviews": ["demo/en-ja"]}


def test_admin_stats(project, de_candidates, annotator_de, second_de):
    decide(annotator_de, de_candidates[0], time_spent_ms=4000)
    decide(annotator_de, de_candidates[1], "reject", time_spent_ms=6000)
    decide(second_de, de_candidates[0], time_spent_ms=1000)
    stats = {r["username"]: r for r in selectors.annotator_stats(project)}
    assert stats["anna_de"]["median_seconds"] == 5 and stats["anna_de"]["decisions"] == 2
    assert stats["anna_de"]["per_hour"] == pytest.approx(2 / (10 / 3600))
    lang = {r["language"]: r for r in selectors.language_progress(project)}["de"]
    assert lang["accepted"] == 1 and lang["reviews"] == 3 and lang["missing_reviews"] == 2 * 6 - 1


@pytest.mark.parametrize(
    ("typed", "problem"),
    [
        ("аdmin", "mixes Latin and Cyrillic letters that look alike (а)"),  # a Cyrillic а
        ("pаypal_ok", "mixes Latin and Cyrillic letters that look alike (а)"),
    ],
)
def test_invite_refuses_look_alike_usernames_and_writes_nothing(admin_user, db, typed, problem):
    from django.contrib.auth import get_user_model

    with pytest.raises(services.Invalid, match=r"username: " + re.escape(problem)):
        services.invite_annotator(admin_user, typed)
    assert not get_user_model().objects.filter(username=typed).exists()


def test_invite_normalises_usernames_nfkc_so_full_width_meets_the_existing_user(admin_user, annotator_de, db):
    user, _, _ = services.invite_annotator(admin_user, "ｍｕｌｌｅｒ")  # full-width letters
    assert user.username == "muller"
    with pytest.raises(services.Conflict, match="muller"):
        services.invite_annotator(admin_user, "ｍuller")
    one_script, _, _ = services.invite_annotator(admin_user, "иван")  # one script: allowed
    assert one_script.username == "иван"


def test_admin_user_form_refuses_look_alike_usernames(admin_client):
    from django.contrib.auth import get_user_model

    response = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "аdmin",
            "password1": "a-Strong-pass-987",
            "password2": "a-Strong-pass-987",
            "usable_password": "true",
        },
    )
    assert response.status_code == 200
    assert "mixes Latin and Cyrillic letters that look alike" in response.content.decode()
    assert not get_user_model().objects.filter(username="аdmin").exists()


def test_create_user_refuses_a_bidi_control_in_a_new_name(db):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        create_user("ben\u202e_de", "ben-pass-123", languages=["de"])
