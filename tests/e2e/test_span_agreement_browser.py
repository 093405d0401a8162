"""The span agreement page in chromium (#47): the admin follows the quality page's link to it and reads each
direction's figures; axe finds no serious or critical violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.spans import services
from core.services import user_create
from tests.e2e.a11y import assert_accessible
from tests.e2e.conftest import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_admin_reads_span_agreement_from_the_quality_page(new_page, project, admin_user):
    task = services.span_task_create(
        actor=admin_user, project=project, name="esa-a", protocol="esa", annotators_per_item=2
    )
    rows = [
        {"id": "1", "source": "The cat sat on the mat.", "text": "Die Katze saß auf der Matte."},
        {"id": "2", "source": "كان القط هنا.", "text": "القطة كانت هنا."},
    ]
    services.span_items_import(task=task, direction_code="en-de", rows=rows[:1], source_name="de.tsv")
    services.span_items_import(task=task, direction_code="en-ar", rows=rows[1:], source_name="ar.tsv")
    for n, (name, lang) in enumerate([("a_de", "de"), ("b_de", "de"), ("a_ar", "ar"), ("b_ar", "ar")]):
        user = user_create(username=name, password=f"{name}-pass-123", languages=[lang])
        a = services.span_annotation_take_next(user=user, task=task)
        spans = [{"start": 0, "end": 3 + n % 2, "severity": "major"}]
        services.span_annotation_submit(user=user, annotation_id=a.pk, spans=spans, score=60 + n, idempotency_key=name)

    page = new_page()
    login(page, "admin", "admin-pass-123", next_url="/spans/demo/esa-a/quality/")
    with page.expect_navigation():
        page.locator("#agreement-link a").click()
    expect(page.locator("h1")).to_contain_text("Span agreement")
    expect(page.locator("#direction-en-de")).to_contain_text("Character F1 between annotators (any severity)")
    expect(page.locator("#direction-en-ar")).to_be_visible()
    assert_accessible(page, "span agreement page")
    shot(page, "spans-agreement")
