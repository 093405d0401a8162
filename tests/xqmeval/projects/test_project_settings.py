"""A project's settings on the site (#37.1, #37.2): settings edited with every problem named, directions
added only after a confirmation, removed when empty, retired when they hold data (then hidden from
imports, injection and builds), and imports that choose a direction and refuse a file in another language
unless told otherwise."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from core.domain.language_id import language_mismatch
from core.models import Direction, GoldSegment, Project
from core.services import ProjectRejected, project_create, project_settings_update
from exports.benchmark.services import build_directions_list
from injection.services import RunRejected, RunSpec, run_plan
from tests.annotation.review.factories import make_candidate
from xqmeval.projects import services

pytestmark = pytest.mark.django_db

GERMAN = (
    "id\tsource\treference\n"
    "1\tThe cat sat on the mat all afternoon.\tDie Katze saß den ganzen Nachmittag auf der Matte.\n"
    "2\tHe bought three apples at the market.\tEr kaufte auf dem Markt drei Äpfel.\n"
)
COLUMNS = {"id_column": "id", "source_column": "source", "reference_column": "reference"}


@pytest.fixture
def flores(db, languages):
    return project_create(name="flores", title="FLORES+", directions=["en-de", "en-zh"])


@pytest.fixture
def admin(client, admin_user):
    client.force_login(admin_user)
    return client


def _codes(project: Project) -> list[str]:
    return sorted(project.directions.values_list("code", flat=True))


# ---- the language check (pure) --------------------------------------------------------------------


def test_language_mismatch_names_what_the_identifier_reads():
    german = ["Die Katze saß den ganzen Nachmittag auf der Matte.", "Er kaufte auf dem Markt drei Äpfel."]
    assert language_mismatch(german, "de") == ""
    problem = language_mismatch(german, "fr")
    assert problem.startswith("the references do not read as fr") and "identifier reads: de " in problem
    # short Chinese sentences alone often read as Japanese; together they read as Chinese
    assert language_mismatch(["猫整个下午都坐在垫子上。", "他在市场上买了三个苹果。", "我们明天去北京。"], "zh") == ""
    assert language_mismatch(["OK", "42"], "fr") == ""  # too little text to tell: not refused
    assert language_mismatch(german, "de_Qaab") == ""  # a replica code is its base language


# ---- settings ---------------------------------------------------------------------------------------


def test_settings_page_saves_every_setting(admin, flores):
    url = reverse("projects:settings", args=["flores"])
    assert url in admin.get(reverse("projects:detail", args=["flores"])).content.decode()
    response = admin.post(
        url,
        {
            "title": "FLORES+ devtest",
            "description": "two languages",
            "reviewers_per_candidate": "3",
            "max_errors": "4",
            "error_types": ["Omission", "Addition"],
        },
    )
    assert response.status_code == 302
    flores.refresh_from_db()
    assert (
        flores.title,
        flores.description,
        flores.reviewers_per_candidate,
        flores.max_errors,
        flores.error_types,
    ) == ("FLORES+ devtest", "two languages", 3, 4, ["Omission", "Addition"])


def test_settings_page_shows_each_section_once_under_a_plain_title(admin, flores):
    page = admin.get(reverse("projects:settings", args=["flores"])).content.decode()
    assert "<title>Settings of flores · xqmeval</title>" in page  # no markup inside the title
    assert page.count('id="reviewers"') == 1 and page.count('id="directions"') == 1


def test_settings_form_lists_every_problem_at_once_and_keeps_the_input(admin, flores):
    response = admin.post(
        reverse("projects:settings", args=["flores"]),
        {"title": "Typed title", "reviewers_per_candidate": "0", "max_errors": "99"},
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "Ensure this value is greater than or equal to 1" in page and "less than or equal to 10" in page
    assert 'value="Typed title"' in page
    flores.refresh_from_db()
    assert (flores.title, flores.reviewers_per_candidate, flores.max_errors) == ("FLORES+", 2, 5)


def test_settings_service_names_each_field(flores):
    with pytest.raises(ProjectRejected) as exc:
        project_settings_update(
            project=flores, title=" ", reviewers_per_candidate=11, max_errors=0, error_types=["Bogus"]
        )
    fields = [e.partition(":")[0] for e in exc.value.errors]
    assert fields == ["title", "error_types", "reviewers_per_candidate", "max_errors"]


# ---- directions ---------------------------------------------------------------------------------------


def test_adding_a_direction_asks_for_confirmation(admin, flores):
    url = reverse("projects:direction_add", args=["flores"])
    response = admin.post(url, {"target": "fr"})
    page = response.content.decode()
    assert response.status_code == 200 and "Add the direction en-fr?" in page and "Yes, add en-fr" in page
    assert _codes(flores) == ["en-de", "en-zh"] and not Direction.objects.filter(code="en-fr").exists()
    response = admin.post(url, {"target": "fr", "confirmed": "on"})
    assert response.status_code == 302
    assert _codes(flores) == ["en-de", "en-fr", "en-zh"]
    # a present language (or the source) is not offered, and refused when sent anyway
    for target in ("fr", "en", "xx"):
        response = admin.post(url, {"target": target, "confirmed": "on"})
        assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert _codes(flores) == ["en-de", "en-fr", "en-zh"]


def test_an_empty_direction_is_removed_one_with_data_only_retired(admin, flores):
    make_candidate(flores, Direction.objects.get(code="en-de"), "A dog.", "Ein Hund.", "Ein Hunde.")
    page = admin.get(reverse("projects:settings", args=["flores"])).content.decode()
    assert "Retire en-de" in page and "Remove en-zh" in page and "Remove en-de" not in page
    confirm = admin.get(reverse("projects:direction_action", args=["flores", "en-zh", "remove"])).content.decode()
    assert "Remove the direction en-zh?" in confirm and _codes(flores) == ["en-de", "en-zh"]
    admin.post(reverse("projects:direction_action", args=["flores", "en-zh", "remove"]))
    assert _codes(flores) == ["en-de"]
    # sent anyway, a removal of a direction with data is refused and says why
    response = admin.post(reverse("projects:direction_action", args=["flores", "en-de", "remove"]), follow=True)
    assert "holds 1 gold pairs" in response.content.decode() and "retire it instead" in response.content.decode()
    assert _codes(flores) == ["en-de"] and GoldSegment.objects.count() == 1
    assert admin.get(reverse("projects:direction_action", args=["flores", "en-xx", "remove"])).status_code == 404
    assert admin.get(reverse("projects:direction_action", args=["flores", "en-de", "explode"])).status_code == 404


def test_a_retired_direction_is_hidden_from_imports_injection_and_builds(admin, flores):
    make_candidate(flores, Direction.objects.get(code="en-de"), "A dog.", "Ein Hund.", "Ein Hunde.")
    make_candidate(flores, Direction.objects.get(code="en-zh"), "A dog.", "一只狗。", "两只狗。")
    assert build_directions_list(project=flores) == ["en-de", "en-zh"]
    admin.post(reverse("projects:direction_action", args=["flores", "en-de", "retire"]))
    assert list(flores.retired_directions.values_list("code", flat=True)) == ["en-de"]
    assert _codes(flores) == ["en-de", "en-zh"]  # kept, with its data
    assert build_directions_list(project=flores) == ["en-zh"]
    with pytest.raises(RunRejected, match="en-de is not a direction"):
        run_plan(spec=RunSpec(project=flores, kind="mqm", directions=["en-de"]))
    page = admin.get(reverse("projects:corpus", args=["flores"])).content.decode()
    assert '<option value="en-zh"' in page and '<option value="en-de"' not in page
    response = admin.post(
        reverse("projects:corpus", args=["flores"]),
        {"direction": "en-de", "file": SimpleUploadedFile("c.tsv", GERMAN.encode()), **COLUMNS},
    )
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    admin.post(reverse("projects:direction_action", args=["flores", "en-de", "reinstate"]))
    assert build_directions_list(project=flores) == ["en-de", "en-zh"]


# ---- imports ------------------------------------------------------------------------------------------


def test_import_chooses_a_direction_and_a_typo_cannot_make_one(admin, flores):
    url = reverse("projects:corpus", args=["flores"])
    page = admin.get(url).content.decode()
    assert '<select name="direction"' in page and '<option value="en-de"' in page and '<option value="en-zh"' in page
    response = admin.post(url, {"direction": "en-fr", "file": SimpleUploadedFile("c.tsv", GERMAN.encode()), **COLUMNS})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Direction.objects.filter(code="en-fr").exists() and _codes(flores) == ["en-de", "en-zh"]


def test_a_file_in_another_language_is_refused_with_the_reason_unless_overridden(admin, flores):
    url = reverse("projects:corpus", args=["flores"])
    response = admin.post(
        url, {"direction": "en-zh", "file": SimpleUploadedFile("de.tsv", GERMAN.encode()), **COLUMNS}, follow=True
    )
    page = response.content.decode()
    assert (
        "the references do not read as zh" in page
        and "identifier reads: de " in page
        and "de.tsv: nothing imported." in page
    )
    assert not GoldSegment.objects.exists()
    response = admin.post(url, {"direction": "en-de", "file": SimpleUploadedFile("de.tsv", GERMAN.encode()), **COLUMNS})
    assert response.status_code == 302 and GoldSegment.objects.filter(direction__code="en-de").count() == 2
    response = admin.post(
        url,
        {
            "direction": "en-zh",
            "file": SimpleUploadedFile("de.tsv", GERMAN.encode()),
            "other_language": "on",
            **COLUMNS,
        },
    )
    assert response.status_code == 302 and GoldSegment.objects.filter(direction__code="en-zh").count() == 2


def test_direction_data_counts_what_each_direction_holds(flores):
    make_candidate(flores, Direction.objects.get(code="en-de"), "A dog.", "Ein Hund.", "Ein Hunde.")
    data = {d.code: d for d in services.direction_data_list(project=flores)}
    assert (data["en-de"].gold_pairs, data["en-de"].empty, data["en-zh"].empty) == (1, False, True)


def test_settings_page_title_and_breadcrumbs_hold_no_section(admin, flores):
    """The page's <title> is its name only, and the reviewers section is shown once (the title and the
    breadcrumbs blocks held a copy of it)."""
    import re

    page = admin.get(reverse("projects:settings", args=["flores"])).content.decode()
    assert re.search(r"<title>(.*?)</title>", page, re.S).group(1) == "Settings of flores · xqmeval"
    assert page.count("<h2>Reviewers per direction</h2>") == 1
