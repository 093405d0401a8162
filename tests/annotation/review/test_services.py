"""Assignment, decisions, skips, rounds and adjudication through the services, on a real DB."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import AuditEvent, ReviewDecision, ReviewLock
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


def decide(user, candidate, decision="accept", key=None, **kw):
    return services.decision_submit(
        user=user,
        candidate_id=candidate.pk,
        decision=decision,
        idempotency_key=key or f"{user.pk}-{candidate.pk}-{decision}",
        **kw,
    )


def test_queue_serves_only_own_languages(project, de_candidates, annotator_de, annotator_zh, languages):
    zh = make_candidates(project, languages, "en-zh")
    got = services.candidate_take_next(user=annotator_de, project=project)
    assert got.candidate.segment.direction.code == "en-de"
    got_zh = services.candidate_take_next(user=annotator_zh, project=project)
    assert got_zh.candidate in zh
    with pytest.raises(services.NotFound):
        decide(annotator_zh, de_candidates[0])


def test_resume_returns_the_held_item(project, de_candidates, annotator_de):
    first = services.candidate_take_next(user=annotator_de, project=project)
    again = services.candidate_take_next(user=annotator_de, project=project)
    assert again.candidate == first.candidate and again.resumed


def test_n_reviewers_then_status_unanimous(project, de_candidates, annotator_de, second_de):
    third = user_create(username="cara_de", password="cara-pass-123", languages=["de"])
    a = services.candidate_take_next(user=annotator_de, project=project).candidate
    b = services.candidate_take_next(user=second_de, project=project).candidate
    assert a == b  # both reviewers are sent to the same first item (N = 2)
    # the third reviewer cannot get it: two slots are held
    c = services.candidate_take_next(user=third, project=project).candidate
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
    while (got := services.candidate_take_next(user=annotator_de, project=project)) is not None:
        seen.append(got.candidate.pk)
        decide(annotator_de, got.candidate)
    assert sorted(seen) == sorted(c.pk for c in de_candidates)


def test_idempotent_submission_and_change_is_audited(project, de_candidates, annotator_de):
    cand = services.candidate_take_next(user=annotator_de, project=project).candidate
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
        services.decision_submit(
            user=annotator_de, candidate_id=de_candidates[0].pk, decision="maybe", idempotency_key="x"
        )
    assert exc.value.field == "decision"
    with pytest.raises(services.Invalid) as exc:
        services.decision_submit(
            user=annotator_de, candidate_id=de_candidates[0].pk, decision="accept", idempotency_key=""
        )
    assert exc.value.field == "idempotency_key"
    with pytest.raises(services.Invalid):
        services.decision_submit(
            user=annotator_de,
            candidate_id=de_candidates[0].pk,
            decision="accept",
            idempotency_key="y",
            reason="wrong_type",
        )
    assert not ReviewDecision.objects.exists()


def test_expired_lock_frees_the_slot(project, de_candidates, annotator_de, second_de):
    third = user_create(username="cara_de", password="cara-pass-123", languages=["de"])
    a = services.candidate_take_next(user=annotator_de, project=project).candidate
    services.candidate_take_next(user=second_de, project=project)
    ReviewLock.objects.filter(reviewer=second_de).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert services.candidate_take_next(user=third, project=project).candidate == a
    # the second reviewer comes back too late: both slots are now taken
    decide(annotator_de, a)
    decide(third, a)
    with pytest.raises(services.Conflict):
        decide(second_de, a)


def test_skip_removes_from_own_queue_only(project, de_candidates, annotator_de, second_de):
    a = services.candidate_take_next(user=annotator_de, project=project).candidate
    services.candidate_skip(user=annotator_de, candidate_id=a.pk, reason="unsure")
    assert services.candidate_take_next(user=annotator_de, project=project).candidate != a
    assert services.candidate_take_next(user=second_de, project=project).candidate == a
    with pytest.raises(services.Invalid):
        services.candidate_skip(user=annotator_de, candidate_id=a.pk, reason="bored")


def test_excluded_and_imported_are_not_served(project, de_candidates, annotator_de):
    Candidate.objects.filter(pk=de_candidates[0].pk).update(status="excluded")
    ReviewDecision.objects.create(candidate=de_candidates[1], decision="accept", source="imported", is_final=True)
    Candidate.objects.filter(pk=de_candidates[2].pk).update(is_gold=True, gold_answer="reject")
    served = []
    while (got := services.candidate_take_next(user=annotator_de, project=project)) is not None:
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
        services.candidate_adjudicate(admin=annotator_de, candidate_id=a.pk, decision="accept")
    services.candidate_adjudicate(
        admin=admin_user, candidate_id=a.pk, decision="accept", comment="edit is a real addition"
    )
    assert Candidate.objects.get(pk=a.pk).status == "accepted"
    assert list(selectors.disagreements(project)) == []
    # switching to unanimous keeps the adjudication (a final decision) deciding
    assert services.pool_rule_set(admin=admin_user, project=project, rule="unanimous") == 0


def test_pool_rule_switch_rederives_statuses(project, de_candidates, annotator_de, second_de, admin_user):
    project.pool_rule = "adjudicated"
    project.save()
    decide(annotator_de, de_candidates[0], "accept")
    decide(second_de, de_candidates[0], "reject")
    assert services.pool_rule_set(admin=admin_user, project=project, rule="unanimous") == 1
    assert Candidate.objects.get(pk=de_candidates[0].pk).status == "rejected"


def test_second_round_is_a_blind_sample(project, de_candidates, annotator_de, second_de, admin_user):
    for c in de_candidates:
        decide(annotator_de, c)
        decide(second_de, c)
    earlier = services.round_open(admin=admin_user, project=project, sample_size=3, seed=11)
    assert earlier.number == 2 and earlier.candidates.count() == 3
    # the same seed draws the same sample again (once the earlier round is closed: an open twin is not reopened)
    services.round_close(admin=admin_user, rnd=earlier)
    rnd = services.round_open(admin=admin_user, project=project, sample_size=3, seed=11)
    assert rnd.number == 3
    assert set(rnd.candidates.values_list("id", flat=True)) == set(earlier.candidates.values_list("id", flat=True))
    got = services.candidate_take_next(user=annotator_de, project=project)
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


def test_admin_stats(project, de_candidates, annotator_de, second_de):
    decide(annotator_de, de_candidates[0], time_spent_ms=4000)
    decide(annotator_de, de_candidates[1], "reject", time_spent_ms=6000)
    decide(second_de, de_candidates[0], time_spent_ms=1000)
    stats = {r["username"]: r for r in selectors.annotator_stats(project)}
    assert stats["anna_de"]["median_seconds"] == 5 and stats["anna_de"]["decisions"] == 2
    assert stats["anna_de"]["per_hour"] == pytest.approx(2 / (10 / 3600))
    lang = {r["language"]: r for r in selectors.language_progress(project)}["de"]
    assert lang["accepted"] == 1 and lang["reviews"] == 3 and lang["missing_reviews"] == 2 * 6 - 1
