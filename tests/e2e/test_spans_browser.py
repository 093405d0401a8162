"""Error-span annotation in chromium (#47): ESA and MQM items annotated by mouse and by keyboard alone, in
en-de and en-ar (right to left); pre-filled ESA-AI spans kept, edited and deleted; undo, a reload that
resumes the unsent work, a submission kept on this device through a network error; an attention item failed;
then the admin's quality page, where the failing annotator is excluded. axe finds no serious or critical
violation on any of these pages."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotation.models import ErrorSpan, SpanAnnotation, SpanAnnotatorAction, SpanItem
from annotation.spans import domain as rules
from annotation.spans import services
from core.services import user_create
from exports import span_items
from tests.annotation.review.factories import make_candidates
from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DE_TEXT = "Die Katze saß heute auf der roten Matte."
AR_TEXT = "الكتاب قديم جدا."
AI = [  # what a metric marked: kept, edited and deleted below
    {"start": 0, "end": 3, "severity": "major"},
    {"start": 4, "end": 9, "severity": "minor"},
    {"start": 14, "end": 19, "severity": "major"},
]


def item(task, direction, ext, source, translation, **kw):
    services.span_items_add(
        task=task,
        entries=[
            {
                "direction_id": direction.pk,
                "kind": "file",
                "external_id": ext,
                "source": source,
                "translation": translation,
                **kw,
            }
        ],
    )


def tok(page, side, start):
    return page.locator(f"#{side}-text .tok[data-s='{start}']")


def drag(page, side, first, last):
    tok(page, side, first).hover()
    page.mouse.down()
    tok(page, side, last).hover()
    page.mouse.up()


def tab_to(page, element_id, limit=60):
    """Keyboard alone: Tab until ``element_id`` has the focus."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement && document.activeElement.id") == element_id:
            return
    raise AssertionError(f"Tab never reached #{element_id}")


def open_task(page, project, task):
    page.goto(f"/spans/{project}/{task}/")
    page.wait_for_selector("#start-button")
    # the Start button has autofocus; a page of a second browser context may not have the focus yet
    if page.evaluate("document.activeElement && document.activeElement.id") != "start-button":
        tab_to(page, "start-button")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.wait_for_selector("#target-text")


def submit_and_wait(page, key="Enter"):
    with page.expect_navigation(url="**/spans/**"):
        page.keyboard.press(key)
    page.wait_for_load_state("load")


@pytest.fixture
def tasks(project, languages, admin_user):
    esa = services.span_task_create(
        actor=admin_user, project=project, name="esa", protocol="esa", ai_metric="xcomet", seed=1
    )
    item(esa, languages["en-de"], "1", "The cat sat on the red mat today.", DE_TEXT, ai_spans=AI, ai_metric="xcomet")
    item(esa, languages["en-ar"], "1", "The book is very old.", AR_TEXT)
    mqm = services.span_task_create(actor=admin_user, project=project, name="mqm", protocol="mqm", seed=1)
    item(mqm, languages["en-de"], "1", "The train leaves at noon.", "Der Bus fährt mittags ab.")
    item(mqm, languages["en-ar"], "1", "The book is new.", "الكتاب قديم.")
    return esa, mqm


def test_esa_by_mouse_with_ai_spans_in_en_de(project, tasks, annotator_de, new_page):
    page = new_page()
    login(page, "anna_de", "anna-pass-123", next_url="/spans/demo/")
    assert_accessible(page, "span tasks")
    page.goto("/spans/demo/esa/")
    assert_accessible(page, "span task start")
    open_task(page, "demo", "esa")
    expect(page.locator("#span-list li")).to_have_count(3)  # the metric's spans, pre-filled
    expect(page.locator("#span-list .badge")).to_have_count(3)
    assert_accessible(page, "ESA screen (en-de, AI spans)")
    # keep the first, edit the second (major now), delete the third
    page.locator("#span-list li").nth(1).locator("select.span-severity").select_option("major")
    page.locator("#span-list li").nth(2).get_by_role("button").click()
    expect(page.locator("#span-list li")).to_have_count(2)
    # a new span by mouse drag over "roten Matte.", snapped to whole words
    drag(page, "target", DE_TEXT.index("roten"), DE_TEXT.index("Matte"))
    expect(page.locator("#span-list li")).to_have_count(3)
    expect(page.locator("#span-list li").nth(2).locator(".excerpt")).to_have_text("roten Matte.")
    # one too many, undone
    drag(page, "target", DE_TEXT.index("auf"), DE_TEXT.index("auf"))
    expect(page.locator("#span-list li")).to_have_count(4)
    page.get_by_role("button", name="Undo").click()
    expect(page.locator("#span-list li")).to_have_count(3)
    page.locator("#score").fill("62")
    # a reload resumes the unsent work (the draft on this device)
    page.reload()
    page.wait_for_selector("#target-text")
    expect(page.locator("#selection-status")).to_contain_text("Resumed")
    expect(page.locator("#span-list li")).to_have_count(3)
    expect(page.locator("#score")).to_have_value("62")
    shot(page, "spans-01-esa-de")
    # the network fails once: the submission is kept on this device and sent again
    failed = {"n": 0}

    def fail_once(route):
        if failed["n"] == 0:
            failed["n"] += 1
            route.abort("internetdisconnected")
        else:
            route.continue_()

    page.route("**/api/spans/annotations/*/submit/", fail_once)
    with page.expect_navigation(url="**/spans/**done/**", timeout=20000):
        page.locator("#spans-submit").click()
    assert failed["n"] == 1
    annotation = SpanAnnotation.objects.get(annotator=annotator_de, item__task__name="esa")
    assert annotation.score == 62 and annotation.ai_fates == ["kept", "edited", "deleted"]
    assert annotation.active_ms and annotation.active_ms > 0
    assert sorted(annotation.spans.values_list("start", "end", "severity", "origin")) == [
        (0, 3, "major", "metric"),
        (4, 9, "major", "metric"),
        (DE_TEXT.index("roten"), len(DE_TEXT), "minor", "human"),
    ]
    assert_accessible(page, "span task done")


def test_esa_by_keyboard_alone_in_en_ar(project, tasks, new_page):
    user_create(username="sara_ar", password="sara-pass-123", languages=["ar"])
    page = new_page()
    login(page, "sara_ar", "sara-pass-123", next_url="/spans/demo/")
    open_task(page, "demo", "esa")
    expect(page.locator("#target-text")).to_have_attribute("dir", "rtl")
    assert_accessible(page, "ESA screen (en-ar, right to left)")
    tab_to(page, "target-text")
    page.keyboard.press("ArrowLeft")  # right to left: the next word in reading order is on the left
    page.keyboard.press("Shift+ArrowLeft")
    page.keyboard.press("2")  # major
    expect(page.locator("#span-list li .excerpt")).to_have_text("قديم جدا.")
    tab_to(page, "source-text")
    page.keyboard.press("End")
    page.keyboard.press("1")  # an omission, marked minor on the source
    page.keyboard.press("s")  # changed to major under the cursor
    expect(page.locator("#span-list li")).to_have_count(2)
    tab_to(page, "score")
    page.keyboard.type("35")
    shot(page, "spans-02-esa-ar")
    submit_and_wait(page)
    annotation = SpanAnnotation.objects.get(annotator__username="sara_ar", item__task__name="esa")
    assert annotation.score == 35
    assert sorted(annotation.spans.values_list("side", "start", "end", "severity")) == [
        ("source", 17, 21, "major"),
        ("target", AR_TEXT.index("قديم"), len(AR_TEXT), "major"),
    ]


def test_mqm_by_keyboard_in_en_de_and_by_mouse_in_en_ar(project, tasks, annotator_de, new_page):
    page = new_page()
    login(page, "anna_de", "anna-pass-123", next_url="/spans/demo/")
    open_task(page, "demo", "mqm")
    tab_to(page, "target-text")
    page.keyboard.press("ArrowRight")  # "Bus"
    page.keyboard.press("2")  # major, with the category chosen for new errors
    tab_to(page, "source-text")
    page.keyboard.press("End")
    page.keyboard.press("1")  # minor on the source: "noon." left out … (an omission mark)
    expect(page.locator("#mqm-score")).to_have_text("-6")
    assert_accessible(page, "MQM screen (en-de)")
    tab_to(page, "source-text")
    submit_and_wait(page)
    a = SpanAnnotation.objects.get(annotator=annotator_de, item__task__name="mqm")
    assert a.score == -6.0
    assert sorted(a.spans.values_list("side", "severity", "category")) == [
        ("source", "minor", rules.MQM_CATEGORIES[0]),
        ("target", "major", rules.MQM_CATEGORIES[0]),
    ]

    user_create(username="sara_ar", password="sara-pass-123", languages=["ar"])
    page = new_page()
    login(page, "sara_ar", "sara-pass-123", next_url="/spans/demo/")
    open_task(page, "demo", "mqm")
    page.get_by_label("critical").check()
    page.locator("#new-category").select_option("accuracy/mistranslation")
    text = "الكتاب قديم."
    drag(page, "target", text.index("قديم"), text.index("قديم"))
    expect(page.locator("#mqm-score")).to_have_text("-25")
    assert_accessible(page, "MQM screen (en-ar)")
    with page.expect_navigation(url="**/spans/**"):
        page.locator("#spans-submit").click()
    a = SpanAnnotation.objects.get(annotator__username="sara_ar", item__task__name="mqm")
    assert a.score == -25.0 and list(a.spans.values_list("severity", "category")) == [
        ("critical", "accuracy/mistranslation")
    ]


def test_a_failed_attention_item_shows_on_the_admins_quality_page(
    project, languages, admin_user, annotator_de, new_page
):
    task = services.span_task_create(actor=admin_user, project=project, name="att", protocol="esa", seed=0)
    candidate = make_candidates(project, languages, "en-de", count=1)[0]
    candidate.status = "accepted"
    candidate.save(update_fields=["status"])
    span_items.make_span_items(task, span_items.ACCEPTED_CANDIDATES, attention=True)
    item(task, languages["en-de"], "r1", "It rains.", "Es regnet.")
    # the seed that puts anna's attention item first (the places are drawn per task and annotator)
    task.seed = next(s for s in range(1000) if rules.attention_slot(0, 0.5, f"{s}:{annotator_de.pk}"))
    task.save(update_fields=["seed"])
    attention = SpanItem.objects.get(task=task, is_attention=True)
    assert attention.translation == "Die schwarze Katze saß auf der Matte."

    page = new_page()
    login(page, "anna_de", "anna-pass-123", next_url="/spans/demo/")
    open_task(page, "demo", "att")
    config = json.loads(page.locator("#spans-config").text_content())
    assert config["annotation"] == SpanAnnotation.objects.get(item=attention).pk
    drag(page, "target", attention.translation.index("Matte"), attention.translation.index("Matte"))  # not the error
    page.locator("#score").fill("90")
    with page.expect_navigation(url="**/spans/a/**"):
        page.locator("#spans-submit").click()
    assert SpanAnnotation.objects.get(item=attention).attention_passed is False

    admin = new_page()
    login(admin, "admin", "admin-pass-123", next_url="/spans/demo/att/quality/")
    row = admin.locator("#quality-table tr[data-annotator='anna_de']")
    expect(row).to_contain_text("0 / 1")
    expect(row).to_contain_text("failing")
    expect(admin.locator("#agreement-link")).to_be_visible()  # the span agreement page's place (esastats)
    assert_accessible(admin, "span quality page")
    admin.goto("/projects/demo/span-tasks/att/items/")
    expect(admin.locator("main")).to_contain_text("1 attention items")
    assert_accessible(admin, "span items page")
    admin.goto("/spans/demo/att/quality/")
    shot(admin, "spans-03-quality")
    row.get_by_label("Reason for anna_de").fill("missed the known error")
    with admin.expect_navigation():
        row.get_by_role("button", name="Exclude").click()
    expect(admin.locator("#quality-table tr[data-annotator='anna_de']")).to_contain_text("excluded")
    action = SpanAnnotatorAction.objects.get()
    assert (action.action, action.reason, action.by_id) == ("exclude", "missed the known error", admin_user.pk)
    assert not ErrorSpan.objects.filter(annotation__excluded=False, annotation__item__task=task).exists()
