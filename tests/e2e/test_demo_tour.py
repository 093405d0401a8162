"""The demo as a new user takes it (#46, "done when"): the demo project as ``manage.py demo_setup`` delivers it
(what ``bin/demo`` runs; here without ../shared, as on a clean clone), from its page to a leaderboard with chrF++ and BLEU and to the known-answer diagnostics,
by clicking "Next" and the links and buttons the pages show. The printed accounts (read from the command's
output) finish the review of every direction in their own browsers. No URL is typed after the first one (the
site's root), and no response of any page, fragment or file answers 4xx or 5xx. No broker: every task, scoring
included, runs in the web process."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from exports.models import MetricScore, ScoringJob
from injection.models import Candidate
from tests.e2e.conftest import shot
from xqmeval.demo.setup import setup_demo

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PRINTED = re.compile(r"^\s+(\w+)\s+/\s+(\S+)\s+(admin|annotator)(?: for (.+))?$", re.M)


class Tour:
    """Every response the browsers received, and the pages they loaded."""

    def __init__(self):
        self.failed: list[str] = []
        self.pages: list[str] = []

    def watch(self, page):
        page.on("response", lambda r: self.failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.on("load", lambda p: self.pages.append(p.url))
        return page

    def click(self, page, locator) -> None:
        with page.expect_navigation():
            locator.click()
        assert not self.failed, self.failed


def log_in(tour: Tour, page, username: str, password: str) -> None:
    """From the site's root (the one URL typed), through the login form it leads to."""
    page.goto("/")
    if page.locator("#id_username").count() == 0:
        tour.click(page, page.get_by_role("link", name=re.compile("log in", re.I)).first)
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert not tour.failed, tour.failed


def review_everything(tour: Tour, page, who: str) -> int:
    """Accept every item this reviewer is offered, in each of her languages, from the Review page's Start links."""
    decided = 0
    nav = page.get_by_role("navigation", name="Main")
    tour.click(page, nav.get_by_role("link", name="Review"))
    while page.locator("a[data-start]").count():
        tour.click(page, page.locator("a[data-start]").first)
        while page.locator("#queue-empty").count() == 0:
            page.wait_for_selector("#candidate-text")
            with page.expect_navigation():
                page.keyboard.press("a")
            page.wait_for_selector("#candidate-text, #queue-empty")
            decided += 1
        tour.click(page, page.get_by_role("navigation", name="Main").get_by_role("link", name="Review"))
    assert not tour.failed, (who, tour.failed)
    return decided


def to_project(tour: Tour, page, title: str) -> None:
    tour.click(page, page.get_by_role("navigation", name="Main").get_by_role("link", name="Projects"))
    tour.click(page, page.get_by_role("link", name=title))


def badge(page, key: str) -> str:
    return page.locator(f"#stage-{key} .badge").inner_text().strip()


def test_the_demo_project_from_its_page_to_a_leaderboard_and_the_diagnostics(live_server, new_page, settings, tmp_path):
    settings.RELEASES_DIR = tmp_path / "releases"
    printed: list[str] = []
    # what `manage.py demo_setup` runs, without the shared XQ-MEval release (a clean clone has none)
    setup_demo(printed.append, shared=tmp_path / "no-shared")
    out = "\n".join(printed)
    accounts = {m[0]: (m[1], m[2], (m[3] or "").split(", ")) for m in PRINTED.findall(out)}
    admin_name = next(name for name, (_, role, _) in accounts.items() if role == "admin")
    annotators = {name: a for name, a in accounts.items() if a[1] == "annotator"}
    assert len(annotators) >= 3, out
    title = "Demo: 20 sentences into German, Chinese and Arabic"
    tour = Tour()

    admin = tour.watch(new_page())
    log_in(tour, admin, admin_name, accounts[admin_name][0])
    to_project(tour, admin, title)
    # "Next" points at the review, which the printed accounts can finish
    next_link = admin.locator("#next-step a")
    expect(next_link).to_contain_text("Review")
    next_link.click()
    expect(admin.locator("#stage-review")).to_be_in_viewport()

    for name, (password, _, _languages) in annotators.items():
        page = tour.watch(new_page())
        log_in(tour, page, name, password)
        review_everything(tour, page, name)
    assert not Candidate.objects.filter(segment__project__name="demo", status="pending").exists()

    # the admin's page, reloaded through the links: review done, agreement computed when it finished
    to_project(tour, admin, title)
    assert badge(admin, "review") == "done"
    assert badge(admin, "agreement") != "to do", admin.locator("#stage-agreement").inner_text()
    expect(admin.locator("#next-step a")).to_contain_text("Benchmark")
    admin.locator("#next-step a").click()
    tour.click(admin, admin.get_by_role("button", name="Build the benchmark"))
    assert badge(admin, "benchmark") == "done", admin.locator("#stage-benchmark").inner_text()
    expect(admin.locator("#next-step a")).to_contain_text("Releases")
    admin.locator("#next-step a").click()
    admin.get_by_label("Version").fill("1.0.0")
    tour.click(admin, admin.get_by_role("button", name="Make a release"))
    assert badge(admin, "releases") == "done", admin.locator("#stage-releases").inner_text()

    # scoring in the web process: chrF++ (ticked already) and BLEU
    expect(admin.locator("#next-step a")).to_contain_text("Scores")
    admin.locator("#next-step a").click()
    scores = admin.locator("#stage-scores")
    scores.get_by_label("BLEU", exact=True).check()
    expect(scores.get_by_label("chrF++", exact=True)).to_be_checked()
    tour.click(admin, scores.get_by_role("button", name="Start scoring"))
    assert set(ScoringJob.objects.values_list("status", flat=True)) == {"done"}, list(
        ScoringJob.objects.values_list("metric", "direction__code", "error")
    )
    assert badge(admin, "scores") == "done" and badge(admin, "metaeval") == "done"
    shot(admin, "demo-tour-scored")

    tour.click(admin, admin.locator("#metaeval-pages").get_by_role("link", name="Leaderboard"))
    expect(admin.get_by_role("heading", level=1)).to_contain_text("Leaderboard")
    board = admin.locator("main").inner_text()
    assert "chrF++" in board and "BLEU" in board and "Nothing to show yet" not in board, board[:2000]
    shot(admin, "demo-tour-leaderboard")
    tour.click(admin, admin.locator("nav.breadcrumbs, .breadcrumbs").get_by_role("link", name=title))
    tour.click(admin, admin.locator("#metaeval-pages").get_by_role("link", name="Known-answer diagnostics"))
    expect(admin.get_by_role("heading", level=1)).to_contain_text("diagnostics")
    assert "Nothing to show yet" not in admin.locator("main").inner_text()
    assert MetricScore.objects.filter(release__project__name="demo", metric__in=["chrF++", "BLEU"]).count() > 0
    assert not tour.failed, tour.failed
