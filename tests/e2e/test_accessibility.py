"""axe-core (WCAG 2.1 A/AA) on every page of the menu and of a project, as an annotator and as an admin:
no serious or critical violation (contrast, labels, names, focusable scroll regions …)."""

from __future__ import annotations

import pytest

from annotation.models import RatingItem
from tests.annotation.review.factories import make_candidates
from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def visit(page, path: str, visited: list) -> None:
    page.goto(path)
    assert_accessible(page, path, visited)


def test_annotator_pages(project, languages, annotator_de, new_page):
    make_candidates(project, languages, "en-de")
    RatingItem.objects.create(
        project=project,
        direction=languages["en-de"],
        kind="system_output",
        source="The cat sat on the mat.",
        reference="Die Katze saß auf der Matte.",
        text="Die Katze sitzt auf der Matte.",
        system="sysA",
    )
    visited: list[str] = []
    page = new_page()
    login(page, "anna_de", "anna-pass-123", next_url="/")
    for path in (
        "/",
        f"/projects/{project.name}/",
        "/review/",
        "/review/mine/",
        f"/agreement/{project.name}/",
        "/benchmarks/",
        "/scores/",
    ):
        visit(page, path, visited)
    page.goto("/review/")
    with page.expect_navigation():
        page.locator("a[data-start]").first.click()  # the Start button: white on blue (AA contrast)
    page.wait_for_selector("#candidate-text")
    assert_accessible(page, "review screen", visited)
    page.keyboard.press("?")
    assert_accessible(page, "review screen with the help open", visited)
    visit(page, f"/review/{project.name}/rate/next/?lang=de", visited)
    for path in ("/review/no-such-page/", "/injection/"):  # the site's 404 and 403 pages
        visit(page, path, visited)
    assert len(visited) == 12


def test_admin_pages(project, languages, admin_user, new_page):
    make_candidates(project, languages, "en-de")
    visited: list[str] = []
    page = new_page()
    login(page, "admin", "admin-pass-123", next_url="/")
    for path in (
        "/",
        "/projects/new/",
        f"/projects/{project.name}/",
        f"/projects/{project.name}/corpus/",
        "/injection/",
        f"/injection/?project={project.name}",
        "/injection/candidates/",
        f"/review/{project.name}/manage/",
        f"/review/{project.name}/adjudication/",
        "/review/annotators/",
        f"/agreement/{project.name}/",
        f"/agreement/{project.name}/annotators/",
        f"/benchmarks/{project.name}/",
        "/agreement/",
    ):
        visit(page, path, visited)
    # a form sent back with errors keeps its labels and says what is wrong
    page.goto("/projects/new/")
    page.fill("#id_title", "x")
    page.fill("#id_name", "bad name")
    page.fill("#id_directions", "de-en")
    with page.expect_navigation():
        page.get_by_role("button", name="Create the project").click()
    assert "Enter a valid “slug”" in page.inner_text("main") or "valid" in page.inner_text("main")
    assert_accessible(page, "new project with errors", visited)
    # the invitation form sent back with every problem on its field (#37)
    page.goto("/review/annotators/")
    page.fill("#id_username", "anna bell")
    page.fill("#id_email", "anna@")
    with page.expect_navigation():
        page.get_by_role("button", name="Create and get invitation link").click()
    assert page.input_value("#id_username") == "anna bell" and page.input_value("#id_email") == "anna@"
    assert_accessible(page, "invitation with errors", visited)
