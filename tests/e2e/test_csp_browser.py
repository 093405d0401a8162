"""The Content-Security-Policy (issue 12 item 10) in chromium: every screen still works under it, nothing is
blocked, and the API docs load Swagger UI from our own static files (drf-spectacular-sidecar), no CDN."""

from __future__ import annotations

import pytest

from annotation.models import RatingItem
from tests.annotation.review.factories import make_candidates
from tests.e2e.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def watch(page) -> dict:
    """Collect CSP violations (console errors and securitypolicyviolation events) and off-site requests."""
    seen = {"violations": [], "offsite": []}
    page.on("console", lambda m: seen["violations"].append(m.text) if "Content Security Policy" in m.text else None)
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => console.error("
        "'Content Security Policy violation: ' + e.violatedDirective + ' ' + e.blockedURI));"
    )
    page.on(
        "request",
        lambda r: seen["offsite"].append(r.url) if not r.url.startswith(("http://localhost", "data:")) else None,
    )
    return seen


def test_screens_work_under_the_content_security_policy(project, languages, annotator_de, admin_user, new_page):
    make_candidates(project, languages, "en-de")
    RatingItem.objects.create(
        project=project,
        direction=languages["en-de"],
        kind="system_output",
        source="The cat sat.",
        reference="Die Katze saß.",
        text="Die Katze sitzt.",
        system="s",
    )
    page = new_page()
    seen = watch(page)
    login(page, "anna_de", "anna-pass-123")
    page.goto(f"/review/{project.name}/next/")
    page.wait_for_selector("#candidate-text")
    first = page.url
    with page.expect_navigation():
        page.keyboard.press("a")  # review.js runs: the keyboard accept moves to the next candidate
    page.wait_for_selector("#candidate-text")
    assert page.url != first
    page.goto(f"/review/{project.name}/rate/next/")
    page.wait_for_selector("[data-dimension]")
    assert seen["violations"] == [], seen["violations"]

    admin = new_page()
    seen = watch(admin)
    login(admin, "admin", "admin-pass-123", next_url="/")
    for url in (
        f"/agreement/{project.name}/",
        f"/agreement/{project.name}/annotators/",
        f"/benchmarks/{project.name}/",
        "/injection/candidates/",
        "/admin/",
        "/admin/core/project/",
    ):
        response = admin.goto(url)
        assert response.status == 200, url
        assert "script-src 'self'" in response.headers["content-security-policy"]
    admin.goto(f"/agreement/{project.name}/")
    assert admin.evaluate(
        "() => getComputedStyle(document.querySelector('.table-scroll') || document.body).overflowX"
    ) in ("auto", "visible")
    admin.goto("/api/docs/")
    assert admin.get_attribute("html", "lang") == "en"  # axe: html-has-lang (screen readers pick the voice by it)
    admin.wait_for_selector(".swagger-ui .info .title")
    assert "xqmeval API" in admin.inner_text(".swagger-ui .info .title")
    admin.wait_for_selector(".opblock-tag")  # the schema was fetched and rendered
    assert seen["violations"] == [], seen["violations"]
    assert seen["offsite"] == [], seen["offsite"]
