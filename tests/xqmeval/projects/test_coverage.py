"""A stage is done only when every active direction is, "Next" points at the first unfinished stage of
any direction, and a build with an undecided or empty direction asks first, names it and records it
(#37.3)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import Direction
from core.services import project_create
from exports.models import BenchmarkBuild
from injection.models import InjectionRun
from tests.annotation.review.factories import make_candidate
from xqmeval.projects.selectors import STAGES, Stage, next_step, pipeline

pytestmark = pytest.mark.django_db


@pytest.fixture
def flores(db, languages):
    return project_create(name="flores", title="FLORES+", directions=["en-de", "en-zh"])


def _stages(project, user) -> dict[str, Stage]:
    return {s.key: s for s in pipeline(project, user)}


def test_a_stage_is_done_only_when_every_direction_is(flores, admin_user):
    de = Direction.objects.get(code="en-de")
    make_candidate(flores, de, "A dog.", "Ein Hund.", "Ein Hunde.", status="accepted")
    InjectionRun.objects.update(status="done")
    stages = _stages(flores, admin_user)
    assert stages["injection"].state == "partial" and stages["injection"].blockers == ["no candidates in en-zh yet"]
    assert stages["review"].state == "partial" and stages["review"].blockers == ["nothing to review in en-zh yet"]
    assert next_step(list(stages.values())).key == "corpus"  # en-zh has no gold pairs either
    # retiring the empty direction leaves only en-de, which is done
    flores.retired_directions.add(Direction.objects.get(code="en-zh"))
    stages = _stages(flores, admin_user)
    assert (stages["corpus"].state, stages["injection"].state, stages["review"].state) == ("done", "done", "done")


def test_next_points_at_the_first_unfinished_direction_stage():
    def stages(*states):
        return [
            Stage(key, title, n, state=state) for n, ((key, title), state) in enumerate(zip(STAGES, states), start=1)
        ]

    # review unfinished in some direction while a release was already scored: the work is in review
    assert next_step(stages("done", "done", "partial", "done", "done", "done", "done", "blocked")).key == "review"
    assert next_step(stages("done", "done", "done", "done", "partial", "done", "done", "done")).key == "benchmark"
    # the direction stages done: the first not done after the last done, as before
    assert next_step(stages("done", "done", "done", "partial", "done", "done", "blocked", "blocked")).key == "scores"


def test_a_build_with_an_undecided_or_empty_direction_asks_names_and_records_it(client, admin_user, flores):
    de = Direction.objects.get(code="en-de")
    make_candidate(flores, de, "A dog.", "Ein Hund.", "Ein Hunde.")  # pending
    client.force_login(admin_user)
    url = reverse("benchmarks:build", args=["flores"])
    response = client.post(url, {"next": reverse("projects:detail", args=["flores"])})
    page = response.content.decode()
    assert response.status_code == 200 and "Build the benchmark of FLORES+ anyway?" in page
    assert "en-de: 1 of 1 candidates undecided" in page and "en-de: no accepted candidates" in page
    assert "en-zh: no candidates" in page and not BenchmarkBuild.objects.exists()
    response = client.post(url, {"confirm": "1", "next": reverse("projects:detail", args=["flores"])})
    assert response.status_code == 302
    build = BenchmarkBuild.objects.get()
    assert build.acknowledged == [
        "en-de: 1 of 1 candidates undecided",
        "en-de: no accepted candidates (its pseudo translations would be level 0 only)",
        "en-zh: no candidates",
    ]
