"""A whole campaign on the site, clicking only (#37's "done when"): an admin (the one account made outside the
site) creates a project with two directions, invites three annotators who set their own passwords, assigns
two reviewers to en-de and one to en-zh and sees the coverage warning, fixes it, imports a corpus per
direction through the form after a French file filed as en-de is refused, starts a rule-based injection
run; the annotators review in their own browsers with a skip (taken back from their skip list) and an undo
(Previous, Withdraw, decide again); the admin makes Likert items from the accepted candidates, the
annotators rate them, the admin builds the benchmark and releases it. axe-core checks every page on the way
(no serious or critical WCAG 2.1 A/AA violation). Only reads go to the ORM, to check what the pages say."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import LikertRating, RatingItem, ReviewDecision, ReviewSkip
from core.models import ReviewerAssignment
from core.services import user_create
from exports.models import Release
from injection.models import Candidate, InjectionRun
from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import login, shot
from tests.support.asserts import every

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TITLE = "Campaign: news into German and Chinese"
PASSWORDS = {"anke": "anke-Campaign-2026", "bert": "bert-Campaign-2026", "chen": "chen-Campaign-2026"}
GERMAN = [
    (
        "On Monday, scientists announced the invention of a new diagnostic tool.",
        "Am Montag haben Wissenschaftler die Erfindung eines neuen Diagnosewerkzeugs bekanntgegeben.",
    ),
    (
        "Lead researchers say this may bring early detection of cancer to patients in poor countries.",
        "Führende Forscher sagen, dass dies Patienten in armen Ländern die Früherkennung von Krebs bringen könnte.",
    ),
]
FRENCH = [  # filed as en-de by mistake: the language check refuses it
    (
        "On Monday, scientists announced the invention of a new diagnostic tool.",
        "Lundi, des scientifiques ont annoncé l'invention d'un nouvel outil de diagnostic.",
    ),
    (
        "Lead researchers say this may bring early detection of cancer to patients in poor countries.",
        "Les chercheurs principaux affirment que cela pourrait permettre de détecter le cancer plus tôt chez les patients.",
    ),
]
CHINESE = [
    (
        "On Monday, scientists announced the invention of a new diagnostic tool.",
        "周一，斯坦福大学医学院的科学家宣布，他们发明了一种可以将细胞按类型分类的新型诊断工具。",
    ),
    (
        "Lead researchers say this may bring early detection of cancer to patients in poor countries.",
        "主要研究人员表示，这可以让低收入国家/地区的患者尽早发现癌症、肺结核、艾滋病毒和疟疾。",
    ),
]


class Walk:
    """The pages visited, each checked by axe once it has loaded."""

    def __init__(self):
        self.visited: list[str] = []

    def check(self, page, where: str) -> None:
        assert_accessible(page, where, self.visited)

    def click(self, page, locator, where: str) -> None:
        """Click something that loads a page, then check the page it loaded."""
        with page.expect_navigation():
            locator.click()
        self.check(page, where)


def corpus(path, rows) -> str:
    lines = ["id\tsource\treference"] + [f"{i}\t{source}\t{reference}" for i, (source, reference) in enumerate(rows, 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def candidate_id(page) -> int:
    return int(re.search(r"/candidate/(\d+)/", page.url).group(1))


def to_project(walk: Walk, page) -> None:
    walk.click(page, page.get_by_role("navigation", name="Main").get_by_role("link", name="Projects"), "projects")
    walk.click(page, page.get_by_role("link", name=TITLE), "project page")


def invite(walk: Walk, admin, new_page, username: str):
    """The admin invites; the annotator opens the link in her own browser, sets a password and logs in."""
    walk.click(admin, admin.get_by_role("navigation", name="Main").get_by_role("link", name="Annotators"), "annotators")
    admin.get_by_label("Username").fill(username)
    walk.click(admin, admin.get_by_role("button", name="Create and get invitation link"), "annotators (invited)")
    link = admin.inner_text("#invite-link").strip()
    page = new_page()
    page.goto(link)  # what she got by mail
    walk.check(page, f"invitation ({username})")
    page.fill("#id_new_password1", PASSWORDS[username])
    page.fill("#id_new_password2", PASSWORDS[username])
    walk.click(page, page.get_by_role("button", name="Set password"), "login (after the invitation)")
    expect(page.locator(".messages")).to_contain_text("Password set")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORDS[username])
    with page.expect_navigation():
        page.keyboard.press("Enter")
    walk.check(page, f"home ({username})")
    return page


def assign(walk: Walk, page, direction: str, reviewers: list[str]) -> None:
    group = page.get_by_role("group", name=f"Reviewers of {direction}")
    for name in PASSWORDS:
        box = group.get_by_label(name, exact=True)
        box.check() if name in reviewers else box.uncheck()
    walk.click(
        page, page.get_by_role("button", name=f"Save the reviewers of {direction}"), "settings (reviewers saved)"
    )
    expect(page.locator(".messages")).to_contain_text(f"Reviewers of {direction}: {', '.join(sorted(reviewers))}")


def start_reviewing(walk: Walk, page, who: str, lang: str) -> None:
    walk.click(page, page.get_by_role("navigation", name="Main").get_by_role("link", name="Review"), f"queue ({who})")
    with page.expect_navigation(url=re.compile(r"/candidate/\d+/")):
        page.locator(f"a[data-start][href$='lang={lang}']").click()
    page.wait_for_selector("#candidate-text")
    walk.check(page, f"review screen ({who}, {lang})")


def press(walk: Walk, page, keys: list[str], where: str) -> None:
    """Keys on the review screen; the last one loads the next page (an item, or the empty queue)."""
    for key in keys[:-1]:
        page.keyboard.press(key)
    with page.expect_navigation():
        page.keyboard.press(keys[-1])
    page.wait_for_selector("#candidate-text, #queue-empty")
    walk.check(page, where)


def queue_empty(page) -> bool:
    return page.locator("#queue-empty").count() == 1


def review_all(walk: Walk, page, who: str, lang: str, reject: set[int] = frozenset()) -> list[int]:
    """Decide every item of the queue: accept, or reject (the reason 'the type is wrong') its ordinal in
    ``reject``."""
    start_reviewing(walk, page, who, lang)
    seen = []
    while not queue_empty(page):
        seen.append(candidate_id(page))
        keys = ["r", "1", "Enter"] if len(seen) in reject else ["a"]
        press(walk, page, keys, f"review screen ({who}, {lang})")
    return seen


def test_a_whole_campaign_on_the_site(live_server, new_page, settings, tmp_path):
    settings.RELEASES_DIR = tmp_path / "releases"
    user_create(username="admin", password="admin-pass-123", role="admin")  # the first admin: made on the command line
    walk = Walk()
    admin = new_page()

    # 1. a project with two directions
    login(admin, "admin", "admin-pass-123", next_url="/")
    walk.check(admin, "projects (empty)")
    walk.click(admin, admin.get_by_role("link", name="New project", exact=True), "new project")
    admin.get_by_label("Title").fill(TITLE)
    admin.get_by_label("Slug").fill("campaign")
    admin.get_by_label("Directions").fill("en-de, en-zh")
    admin.check("input[name=error_types][value=Omission]")
    admin.get_by_label("Maximum errors per pseudo translation").fill("1")
    walk.click(admin, admin.get_by_role("button", name="Create the project"), "project page (new)")
    assert admin.url.endswith("/projects/campaign/")

    # 2. three annotators, invited from the site
    annotators = {name: invite(walk, admin, new_page, name) for name in PASSWORDS}

    # 3. two reviewers for en-de, one for en-zh: the warning names en-zh and the one missing
    to_project(walk, admin)
    walk.click(admin, admin.get_by_role("link", name="Settings and directions"), "settings")
    assign(walk, admin, "en-de", ["anke", "bert"])
    assign(walk, admin, "en-zh", ["chen"])
    warning = admin.locator("#coverage-warning")
    expect(warning).to_contain_text("en-zh: 1 assigned, 1 missing")
    expect(warning).not_to_contain_text("en-de")
    to_project(walk, admin)
    expect(admin.locator("#coverage-warning")).to_contain_text("en-zh: 1 assigned, 1 missing")
    # fixed: bert reviews en-zh too
    walk.click(admin, admin.get_by_role("link", name="Settings and directions"), "settings")
    assign(walk, admin, "en-zh", ["bert", "chen"])
    expect(admin.locator("#coverage-warning")).to_have_count(0)
    assert ReviewerAssignment.objects.filter(project__name="campaign").count() == 4
    to_project(walk, admin)
    expect(admin.locator("#coverage-warning")).to_have_count(0)

    # 4. the corpus through the form: a French file filed as en-de is refused, then the right files
    walk.click(admin, admin.get_by_role("link", name="Import a corpus"), "corpus import")
    admin.get_by_label("Direction").select_option("en-de")
    admin.set_input_files("#id_file", corpus(tmp_path / "french.tsv", FRENCH))
    walk.click(admin, admin.get_by_role("button", name="Import the corpus"), "corpus import (refused)")
    refusal = admin.inner_text(".messages")
    assert "do not read as de" in refusal and "nothing imported" in refusal, refusal
    assert not Candidate.objects.exists()
    for direction, rows in (("en-de", GERMAN), ("en-zh", CHINESE)):
        admin.get_by_label("Direction").select_option(direction)
        admin.set_input_files("#id_file", corpus(tmp_path / f"{direction}.tsv", rows))
        walk.click(admin, admin.get_by_role("button", name="Import the corpus"), f"project page ({direction} imported)")
        expect(admin.locator(".messages")).to_contain_text(f"2 gold segments imported into {direction}")
        if direction == "en-de":
            walk.click(admin, admin.get_by_role("link", name="Import a corpus"), "corpus import")

    # 5. inject with the offline rule backend
    walk.click(admin, admin.get_by_role("link", name="Start an injection run"), "injection start form")
    admin.get_by_label("en-de").check()
    admin.get_by_label("en-zh").check()
    with admin.expect_navigation():
        admin.get_by_role("button", name="Start the run").click()
    admin.wait_for_function("document.getElementById('run-status').textContent.trim() === 'done'")
    walk.check(admin, "injection run")
    run = InjectionRun.objects.get(project__name="campaign")
    assert run.status == "done" and run.failed == 0 and run.total >= 4
    per_direction = {
        code: Candidate.objects.filter(segment__direction__code=code).count() for code in ("en-de", "en-zh")
    }
    assert every(per_direction.values()), per_direction

    # 6. review, each annotator in her own browser
    # anke: accept, skip the second item, accept the third, then on the fourth go back (P), withdraw (W) and
    # reject the third instead; Next resumes the fourth; the skipped one comes back from her skip list
    anke = annotators["anke"]
    start_reviewing(walk, anke, "anke", "de")
    first = candidate_id(anke)
    press(walk, anke, ["a"], "review screen (anke)")
    skipped = candidate_id(anke)
    press(walk, anke, ["s", "3", "Enter"], "review screen (anke, after a skip)")  # 3: the item is broken
    third = candidate_id(anke)
    press(walk, anke, ["a"], "review screen (anke)")
    fourth = candidate_id(anke)
    assert len({first, skipped, third, fourth}) == 4
    press(walk, anke, ["p"], "review screen (anke, previous item)")
    assert candidate_id(anke) == third
    expect(anke.locator("#own-notice")).to_contain_text("You accepted this candidate")
    with anke.expect_navigation():
        anke.get_by_role("button", name="Withdraw my decision").click()
    anke.wait_for_selector("#candidate-text")
    walk.check(anke, "review screen (anke, withdrawn)")
    assert candidate_id(anke) == third and anke.locator("#own-notice").count() == 0
    assert not ReviewDecision.objects.filter(candidate_id=third).exists()
    press(walk, anke, ["r", "1", "Enter"], "review screen (anke, decided again)")
    assert candidate_id(anke) == fourth
    changed = ReviewDecision.objects.get(candidate_id=third, reviewer__username="anke")
    assert (changed.decision, changed.reason) == ("reject", "wrong_type")
    while not queue_empty(anke):
        press(walk, anke, ["a"], "review screen (anke)")
    walk.click(anke, anke.get_by_role("link", name="My decisions"), "my decisions (anke)")
    skips = anke.locator("#skips-table")
    expect(skips.locator("tbody tr")).to_have_count(1)
    expect(skips.locator("tbody tr")).to_contain_text("item is broken or unreadable")
    with anke.expect_navigation():
        skips.get_by_role("link", name="open the item").click()
    anke.wait_for_selector("#candidate-text")
    walk.check(anke, "review screen (anke, a skipped item)")
    assert candidate_id(anke) == skipped
    expect(anke.locator("#own-notice")).to_contain_text("You skipped this candidate (item is broken or unreadable)")
    press(walk, anke, ["a"], "review screen (anke, the skip decided)")
    assert not ReviewSkip.objects.exists()

    # bert reviews both directions and agrees with anke (he rejects his third de item too); chen reviews zh
    bert_de = review_all(walk, annotators["bert"], "bert", "de", reject={3})
    assert bert_de[2] == third  # N = 2: both reviewers are given the items in the same order
    review_all(walk, annotators["bert"], "bert", "zh")
    review_all(walk, annotators["chen"], "chen", "zh")
    assert not Candidate.objects.filter(status="pending").exists()
    assert Candidate.objects.get(pk=third).status == "rejected"

    to_project(walk, admin)
    expect(admin.locator("#stage-review .badge")).to_have_text("done")

    # 7. Likert items from the accepted en-de candidates, rated by its two reviewers
    walk.click(admin, admin.locator("#stage-review").get_by_role("link", name="Likert items"), "Likert items")
    admin.get_by_label("Accepted candidates").check()
    admin.get_by_label("Direction").select_option("en-de")
    walk.click(admin, admin.get_by_role("button", name="Make the items"), "Likert items (made)")
    accepted_de = Candidate.objects.filter(segment__direction__code="en-de", status="accepted").count()
    assert RatingItem.objects.filter(project__name="campaign").count() == accepted_de > 0
    for who in ("anke", "bert"):
        page = annotators[who]
        walk.click(
            page, page.get_by_role("navigation", name="Main").get_by_role("link", name="Review"), f"queue ({who})"
        )
        with page.expect_navigation(url=re.compile(r"/review/rate/\d+/")):
            page.get_by_role("link", name="Rate").click()
        walk.check(page, f"Likert screen ({who})")
        while page.locator("#queue-empty").count() == 0:
            for key in ("4", "5", "3", "4"):
                page.keyboard.press(key)
            with page.expect_navigation():
                page.keyboard.press("Enter")
            page.wait_for_selector("#rating-form, #queue-empty")
            walk.check(page, f"Likert screen ({who})")
    assert LikertRating.objects.count() == 2 * accepted_de

    # 8. build (every direction decided: no confirmation asked) and release
    to_project(walk, admin)
    walk.click(admin, admin.get_by_role("button", name="Build the benchmark"), "project page (built)")
    expect(admin.locator("#stage-benchmark .badge")).to_have_text("done")
    admin.get_by_label("Version").fill("0.1.0")
    walk.click(admin, admin.get_by_role("button", name="Make a release"), "project page (released)")
    release = Release.objects.get(project__name="campaign", version="0.1.0")
    assert release.status == "ready", release.error
    expect(admin.locator("#stage-releases")).to_contain_text("0.1.0")
    assert sorted(release.directions) == ["en-de", "en-zh"], release.directions
    walk.click(
        admin, admin.locator("#stage-releases").get_by_role("link", name="Releases and Hub pushes"), "benchmark page"
    )
    shot(admin, "campaign-released")
    assert len(walk.visited) >= 80, len(walk.visited)
