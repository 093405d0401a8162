"""On a phone (390 × 844, an iPhone's CSS size) no page is wider than the screen: the menu wraps under the
brand and log-out, wide tables scroll inside their card, plots shrink. Before, the menu ran off the dark
bar (its light links unreadable on the page's background) and every page scrolled sideways."""

from __future__ import annotations

import pytest

from annotation.models import RatingItem
from tests.annotation.review.factories import make_candidates
from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


def fits(page, where: str) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"{where}: the page is {width} px wide on a {PHONE['width']} px screen"
    outside = page.evaluate(
        """() => [...document.querySelectorAll('header a, header button')]
              .filter(e => { const r = e.getBoundingClientRect(); return r.right > innerWidth || r.left < 0 || r.width === 0; })
              .map(e => e.textContent.trim())"""
    )
    assert outside == [], f"{where}: menu entries off the screen: {outside}"


def test_annotator_pages_fit_a_phone(project, languages, annotator_de, new_page):
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
    page = new_page(PHONE)
    login(page, "anna_de", "anna-pass-123", next_url="/")
    visited: list[str] = []
    for path in (
        "/",
        "/review/",
        "/review/mine/",
        f"/projects/{project.name}/",
        f"/agreement/{project.name}/",
        "/benchmarks/",
        f"/review/{project.name}/rate/next/?lang=de",
    ):
        page.goto(path)
        fits(page, path)
    page.goto("/review/")
    with page.expect_navigation():
        page.locator("a[data-start]").first.click()
    page.wait_for_selector("#candidate-text")
    fits(page, "review screen")
    assert_accessible(page, "review screen on a phone", visited)


def test_admin_pages_fit_a_phone(project, languages, admin_user, new_page):
    make_candidates(project, languages, "en-de")
    page = new_page(PHONE)
    login(page, "admin", "admin-pass-123", next_url="/")
    visited: list[str] = []
    for path in (
        "/",
        f"/projects/{project.name}/",
        "/injection/",
        "/injection/candidates/",
        f"/review/{project.name}/manage/",
        "/review/annotators/",
        f"/benchmarks/{project.name}/",
    ):
        page.goto(path)
        fits(page, path)
        assert_accessible(page, f"{path} on a phone", visited)
