"""The project page's stages agree (#46.3): no stage says "waiting" while a later one is under way (ready,
running, in progress or done), in every state the demo project passes through, as the admin and as each demo
annotator see it: as delivered, part-way through each direction's review, a benchmark built from the directions
reviewed so far (the "build anyway" the issue found, before anything was accepted: "5 Benchmark (waiting)"
over "6 Releases (ready to start)"), review finished, built, released, scored. No broker: tasks run in-process, as in the demo."""

from __future__ import annotations

import re
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from annotation.review import services as review_services
from core.models import Project
from exports.benchmark.services import build_run
from exports.release.services import release_create
from exports.scores import tasks as scores_tasks
from injection.models import Candidate
from tests.support.asserts import every
from xqmeval.demo.setup import ACCOUNTS, setup_demo
from xqmeval.projects.domain import states_agree

BADGE = re.compile(r'id="stage-(\w+)".*?data-state="(\w+)"', re.S)
UNDER_WAY = {"ready", "running", "partial", "done"}


def test_states_agree_rule():
    assert states_agree(["done", "blocked", "ready"]) == ["done", "partial", "ready"]
    assert states_agree(["done", "blocked", "blocked", "todo"]) == ["done", "blocked", "blocked", "todo"]
    assert states_agree(["blocked", "todo", "done"]) == ["partial", "todo", "done"]
    assert states_agree(["done", "partial", "blocked"]) == ["done", "partial", "blocked"]


def page_states(client: Client, user) -> list[tuple[str, str]]:
    client.force_login(user)
    response = client.get(reverse("projects:detail", args=["demo"]))
    assert response.status_code == 200
    return BADGE.findall(response.content.decode())


def check(client: Client, users, when: str, seen: set) -> None:
    for user in users:
        states = page_states(client, user)
        assert [key for key, _ in states][:3] == ["corpus", "injection", "review"], states
        for i, (key, state) in enumerate(states):
            later = [f"{k}: {s}" for k, s in states[i + 1 :] if s in UNDER_WAY]
            assert not (state == "blocked" and later), f"{when}, as {user.username}: {key} waits while {later}"
        seen.add(tuple(s for _, s in states))


def decide(user, candidates, decision="accept") -> None:
    for c in candidates:
        review_services.decision_submit(
            user=user, candidate_id=c.pk, decision=decision, idempotency_key=uuid.uuid4().hex
        )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_no_stage_waits_while_a_later_one_is_under_way(settings, tmp_path):
    settings.RELEASES_DIR = tmp_path / "releases"
    setup_demo(lambda _line: None, shared=tmp_path / "no-shared")
    project = Project.objects.get(name="demo")
    from django.contrib.auth import get_user_model

    users = {u.username: u for u in get_user_model().objects.filter(username__in=[a[0] for a in ACCOUNTS])}
    reviewers = {code: [users[a[0]] for a in ACCOUNTS if code in a[3]] for code in ("de", "zh", "ar")}
    assert every(len(r) >= project.reviewers_per_candidate for r in reviewers.values()), reviewers  # #46.2
    client, seen = Client(), set()
    everyone = list(users.values())
    check(client, everyone, "as delivered", seen)
    # built anyway before anything is accepted: level-0 pseudo translations, so a release could be made
    build_run(project=project)
    check(client, everyone, "built before any review", seen)

    def candidates(lang):
        return list(
            Candidate.objects.filter(segment__project=project, segment__direction__target__code=lang).order_by("pk")
        )

    # German: half reviewed by one, then all by both (rejecting a few, so the pool is not everything)
    de = candidates("de")
    decide(reviewers["de"][0], de[: len(de) // 2])
    check(client, everyone, "de half reviewed once", seen)
    for user in reviewers["de"]:
        decide(user, de[:10], "reject")
        decide(user, [c for c in de[10:]])
    check(client, everyone, "de reviewed", seen)
    # built anyway, from German alone
    build_run(project=project)
    check(client, everyone, "built from de alone", seen)
    release_create(project=project, version="0.1.0")
    check(client, everyone, "released from de alone", seen)
    for lang in ("zh", "ar"):
        for user in reviewers[lang]:
            decide(user, candidates(lang))
        check(client, everyone, f"{lang} reviewed", seen)
    build_run(project=project)
    check(client, everyone, "built", seen)
    release = release_create(project=project, version="1.0.0")
    check(client, everyone, "released", seen)
    scores_tasks.start_scoring(release=release, metrics=["chrF++", "BLEU"])
    check(client, everyone, "scored", seen)
    assert len(seen) >= 6, seen  # the walk went through that many distinct pictures of the pipeline
