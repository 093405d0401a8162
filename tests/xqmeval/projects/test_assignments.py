"""Who reviews which direction of a project (#37.2, #37.3): assignments per project and direction, made on
the settings page, migrated from today's annotator languages, deciding what an annotator reviews in that
project; and the coverage warning where a direction has fewer reviewers than the project needs."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from annotation.common.selectors import language_codes
from annotation.review import selectors as review_selectors
from annotation.review import services as review_services
from core.models import Direction, ReviewerAssignment
from core.selectors import coverage, coverage_gaps
from core.services import ProjectRejected, assignments_set, project_create, user_create
from tests.annotation.review.factories import make_candidate

pytestmark = pytest.mark.django_db


@pytest.fixture
def flores(db, languages):
    return project_create(name="flores", title="FLORES+", directions=["en-de", "en-zh"], reviewers_per_candidate=2)


@pytest.fixture
def people(db):
    return {
        "anna": user_create(username="anna", password="pw-anna-123", languages=["de"]),
        "ben": user_create(username="ben", password="pw-ben-123", languages=["de"]),
        "li": user_create(username="li", password="pw-li-123", languages=["zh"]),
        "boss": user_create(username="boss", password="pw-boss-123", role="admin"),
    }


def _assigned(project) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for code, name in ReviewerAssignment.objects.filter(project=project).values_list(
        "direction__code", "user__username"
    ):
        out.setdefault(code, []).append(name)
    return {code: sorted(names) for code, names in out.items()}


def test_without_assignments_coverage_follows_the_annotators_languages(flores, people):
    assert [(c.direction_code, c.reviewers, c.missing) for c in coverage(flores)] == [
        ("en-de", ("anna", "ben"), 0),
        ("en-zh", ("li",), 1),
    ]


def test_assigning_on_the_settings_page_shows_and_clears_the_coverage_warning(client, flores, people):
    client.force_login(people["boss"])
    url = reverse("projects:assignments", args=["flores"])
    # two reviewers for en-zh, one for en-de: en-de is one short
    client.post(url, {"direction": "en-zh", "assign-en-zh-reviewers": ["li", "anna"]})
    client.post(url, {"direction": "en-de", "assign-en-de-reviewers": ["ben"]})
    assert _assigned(flores) == {"en-de": ["ben"], "en-zh": ["anna", "li"]}
    for page_url in (
        reverse("projects:detail", args=["flores"]),
        reverse("review:manage", args=["flores"]),
        reverse("projects:settings", args=["flores"]),
    ):
        page = client.get(page_url).content.decode()
        assert (
            "Not enough reviewers" in page
            and "en-de: 1 assigned, 1 missing" in page
            and "en-zh: 2 assigned" not in page
        ), page_url
    client.post(url, {"direction": "en-de", "assign-en-de-reviewers": ["ben", "anna"]})
    assert _assigned(flores)["en-de"] == ["anna", "ben"]
    assert coverage_gaps(flores) == []
    assert "Not enough reviewers" not in client.get(reverse("projects:detail", args=["flores"])).content.decode()


def test_an_assignment_naming_bad_people_lists_every_problem_and_writes_nothing(flores, people):
    with pytest.raises(ProjectRejected) as exc:
        assignments_set(project=flores, direction_code="en-de", usernames=["ghost", "boss", "anna"])
    assert exc.value.errors == [
        "reviewers: boss is not an annotator (admins see every direction; viewers review none)",
        "reviewers: no user 'ghost'",
    ]
    with pytest.raises(ProjectRejected, match="en-fr is not an active direction"):
        assignments_set(project=flores, direction_code="en-fr", usernames=["anna"])
    assert not ReviewerAssignment.objects.exists()


def test_assignments_decide_what_an_annotator_reviews_in_the_project(flores, people):
    de = Direction.objects.get(code="en-de")
    zh = Direction.objects.get(code="en-zh")
    german = make_candidate(flores, de, "A dog.", "Ein Hund.", "Ein Hunde.")
    chinese = make_candidate(flores, zh, "A dog.", "一只狗。", "两只狗。")
    other = project_create(name="other", directions=["en-de"])
    elsewhere = make_candidate(other, de, "A cat.", "Eine Katze.", "Eine Katzen.")
    visible = lambda who: set(review_selectors.visible_candidates(people[who]))  # noqa: E731
    assert visible("anna") == {german, elsewhere} and visible("li") == {chinese}
    # flores assigns: anna reviews its zh (not her language), ben its de; other projects are unchanged
    assignments_set(project=flores, direction_code="en-zh", usernames=["anna"])
    assignments_set(project=flores, direction_code="en-de", usernames=["ben"])
    assert visible("anna") == {chinese, elsewhere}
    assert visible("ben") == {german, elsewhere}
    assert visible("li") == set()
    assert language_codes(people["anna"], project=flores) == ["zh"]
    assert review_services.candidate_take_next(user=people["li"], project=flores) is None
    held = review_services.candidate_take_next(user=people["anna"], project=flores)
    assert held is not None and held.candidate == chinese


def test_the_data_migration_assigns_each_annotator_the_directions_of_their_languages(transactional_db, languages):
    executor = MigrationExecutor(connection)
    executor.migrate([("core", "0003_project_retired_directions")])
    old = executor.loader.project_state([("core", "0003_project_retired_directions")]).apps
    User, Profile = old.get_model("auth", "User"), old.get_model("core", "Profile")
    Language, Project, OldDirection = (
        old.get_model("core", "Language"),
        old.get_model("core", "Project"),
        old.get_model("core", "Direction"),
    )
    project = Project.objects.create(name="flores", title="F", source_language=Language.objects.get(code="en"))
    project.directions.add(*OldDirection.objects.filter(code__in=["en-de", "en-zh", "en-ar"]))
    Project.objects.create(name="empty", title="E", source_language=Language.objects.get(code="en"))
    for name, role, codes in (
        ("anna", "annotator", ["de", "ar"]),
        ("li", "annotator", ["zh", "ja"]),
        ("boss", "admin", ["de"]),
        ("viv", "viewer", ["de"]),
    ):
        profile = Profile.objects.create(user=User.objects.create(username=name), role=role)
        profile.languages.add(*Language.objects.filter(code__in=codes))
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    rows = sorted(ReviewerAssignment.objects.values_list("project__name", "direction__code", "user__username"))
    assert rows == [("flores", "en-ar", "anna"), ("flores", "en-de", "anna"), ("flores", "en-zh", "li")]


def test_an_assignment_in_one_project_opens_no_other(client, flores, people):
    """What a project shows an annotator (its list entry, directions, aggregates, releases) follows that
    project's assignments: one in flores opens nothing elsewhere, and her global language no longer opens a
    project that assigns reviewers. Viewers, never assigned, keep their languages."""
    from django.http import Http404

    from core import access
    from exports.benchmark.selectors import visible_directions
    from exports.models import Release
    from exports.scores.views import visible_release

    other = project_create(name="other", directions=["en-de", "en-zh"])
    release = Release.objects.create(project=other, version="1.0.0", status=Release.Status.READY)
    vera = user_create(username="vera", password="pw-vera-123", role="viewer", languages=["de"])
    anna = people["anna"]  # her language: de
    assignments_set(project=flores, direction_code="en-zh", usernames=["anna"])
    names = lambda who: sorted(access.visible_projects(who).values_list("name", flat=True))  # noqa: E731
    assert names(anna) == ["flores", "other"]
    assert visible_directions(anna, flores) == {"en-zh"}  # flores assigns: her assignment, not her language
    assert visible_directions(anna, other) == {"en-de"}  # other assigns nobody: her language, not flores' zh
    assert visible_release(anna, release.pk)[1] == ["en-de"]
    assignments_set(project=other, direction_code="en-de", usernames=["ben"])
    assert names(anna) == ["flores"]
    with pytest.raises(Http404):
        access.visible_project(anna, "other")
    with pytest.raises(Http404):
        visible_release(anna, release.pk)
    client.force_login(anna)
    assert "other" not in [r.project.name for r in client.get(reverse("scores:index")).context["releases"]]
    assert names(vera) == ["flores", "other"] and visible_directions(vera, other) == {"en-de"}


def test_assigning_an_annotator_outside_her_languages_warns_and_assigns(client, flores, people):
    """#46.5: anna reads German; assigned to en-zh she is warned about, and assigned all the same (an
    assignment decides what she reviews). Assigning li, who reads Chinese, warns nothing."""
    client.force_login(people["boss"])
    url = reverse("projects:assignments", args=["flores"])
    response = client.post(url, {"direction": "en-zh", "assign-en-zh-reviewers": ["li", "anna"]}, follow=True)
    shown = [(m.level_tag, str(m)) for m in response.context["messages"]]
    assert shown == [
        ("success", "Reviewers of en-zh: anna, li."),
        (
            "warning",
            "zh is not among the languages of anna. Assigned to en-zh anyway: "
            "check that they read zh, or add it to their languages.",
        ),
    ]
    assert _assigned(flores) == {"en-zh": ["anna", "li"]}
    response = client.post(url, {"direction": "en-zh", "assign-en-zh-reviewers": ["li"]}, follow=True)
    assert [m.level_tag for m in response.context["messages"]] == ["success"]
