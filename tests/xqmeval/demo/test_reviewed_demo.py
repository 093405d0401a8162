"""The reviewed demo (#46.1): on a clone without ../shared, set-up leaves a project that is reviewed, built,
released and scored, so its pages show scores, the leaderboard, the diagnostics and the meta-evaluation from the
first visit; the simulated reviewers who decided it cannot log in and see nothing but it, and set-up run again
changes nothing. No broker: scoring runs in-process, as in the demo."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation.models import ReviewDecision
from annotation.review.selectors import visible_candidates
from exports.models import MetricScore, Release, ScoringJob
from injection.models import Candidate
from tests.support.asserts import every
from xqmeval.demo.setup import (
    ACCOUNTS,
    DEMO_METRICS,
    PROJECT,
    REJECT_EVERY,
    REVIEWED_PROJECT,
    SIMULATED_REVIEWERS,
    TARGETS,
    setup_demo,
)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_clone_without_shared_data_shows_a_scored_project_from_the_first_visit(settings, tmp_path):
    settings.RELEASES_DIR = tmp_path / "releases"
    printed: list[str] = []
    setup_demo(printed.append, shared=tmp_path / "no-shared")

    release = Release.objects.get(project__name=REVIEWED_PROJECT, version="1.0.0")
    assert release.status == Release.Status.READY
    jobs = ScoringJob.objects.filter(release=release)
    assert {(j.metric, j.direction.code, j.status) for j in jobs} == {
        (metric, f"en-{t}", "done") for metric in DEMO_METRICS for t in TARGETS
    }, [(j.metric, j.direction.code, j.error) for j in jobs]
    assert MetricScore.objects.filter(release=release, metric__in=DEMO_METRICS).count() > 0

    # every candidate decided by both simulated reviewers; the second rejected a share, so the pool is not all
    candidates = Candidate.objects.filter(segment__project__name=REVIEWED_PROJECT)
    assert candidates.count() == 2 * 20 * len(TARGETS)
    decisions = ReviewDecision.objects.filter(candidate__in=candidates)
    assert decisions.count() == 2 * candidates.count()
    rejected = decisions.filter(decision="reject")
    assert rejected.count() == sum(
        1 for c in candidates if int(c.segment.external_id.split("-")[-1]) % REJECT_EVERY == 0
    )
    assert 0 < rejected.count() < candidates.count()
    assert every(d.reviewer.username == SIMULATED_REVIEWERS[1] for d in rejected)

    # the pages a newcomer opens first, as the admin: each answers with content, none is a dead end
    admin_name, admin_password = next((a[0], a[1]) for a in ACCOUNTS if a[2] == "admin")
    client = Client()
    assert client.login(username=admin_name, password=admin_password)
    project_page = client.get(reverse("projects:detail", args=[REVIEWED_PROJECT])).content.decode()
    # the pages it links (the meta-evaluation one per metric), followed as a newcomer clicks them
    links = {
        kind: html.unescape(href)
        for href, kind in re.findall(
            rf'href="(/scores/{release.pk}/(leaderboard|diagnostics|metaeval)/[^"]*)"', project_page
        )
    }
    assert set(links) == {"leaderboard", "diagnostics", "metaeval"}, project_page
    for kind, url in links.items():
        page = client.get(url)
        assert page.status_code == 200, (kind, url, page.status_code)
        assert "Nothing to show yet" not in page.content.decode(), (kind, url)
    board = client.get(links["leaderboard"]).content.decode()
    assert every(metric in board for metric in DEMO_METRICS)

    # the simulated reviewers: no usable password, and the demo project's candidates are not theirs
    User = get_user_model()
    for name in SIMULATED_REVIEWERS:
        user = User.objects.get(username=name)
        assert not user.has_usable_password()
        assert not visible_candidates(user).filter(segment__project__name=PROJECT).exists()
    # and the printed annotators do not see the reviewed project's candidates (it is assigned to the simulated ones)
    for name, _password, role, _langs in ACCOUNTS:
        if role == "annotator":
            user = User.objects.get(username=name)
            assert not visible_candidates(user).filter(segment__project__name=REVIEWED_PROJECT).exists(), name
            assert visible_candidates(user).filter(segment__project__name=PROJECT).exists(), name
    offered = "\n".join(printed[printed.index("demo accounts (demo only):") :])
    assert every(name not in offered for name in SIMULATED_REVIEWERS)  # not offered as accounts to log in with

    # set-up again: nothing new
    counts = (decisions.count(), Release.objects.count(), ScoringJob.objects.count(), MetricScore.objects.count())
    setup_demo(lambda _line: None, shared=tmp_path / "no-shared")
    assert (
        decisions.count(),
        Release.objects.count(),
        ScoringJob.objects.count(),
        MetricScore.objects.count(),
    ) == counts
