"""No form of the site answers 5xx when its backend cannot start (#37.6): no LLM key, an LLM endpoint
nobody listens at, no Celery broker, no Hub token.

The forms are found, not listed: every page the permission matrix serves to an admin (its rows classify
every URL the resolver serves, ``test_every_url_has_a_permission_row``) is fetched, and every form on it
is submitted empty, as shown (its prefilled values), and with each choice of each select or radio in turn
(so the injection form is sent with the OpenAI backend). A new page with a form is covered by its row."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse

from llm_client.endpoints import Endpoint
from tests.hardening.test_permissions_matrix import PAGE, ROWS, shared_world, world  # noqa: F401 (the fixtures)

pytestmark = pytest.mark.django_db

MAX_CHOICES = 8  # options tried per select or radio group: enough to reach every backend, bounded per page
ADMIN_PAGES = [row for row in ROWS if row.method == "get" and row.kind == PAGE and row.expect[-1] == "O"]


class Forms(HTMLParser):
    """The forms of a page: action, method, the values it would send as shown, and each choice field's options."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append(
                {
                    "action": a.get("action") or "",
                    "method": (a.get("method") or "get").lower(),
                    "values": {},
                    "choices": {},
                }
            )
            return
        if not self.forms or not a.get("name"):
            return
        form, name = self.forms[-1], a["name"]
        if tag == "input":
            kind = (a.get("type") or "text").lower()
            if kind in ("submit", "button", "image", "reset", "file"):
                return
            if kind in ("checkbox", "radio"):
                if kind == "radio":
                    form["choices"].setdefault(name, []).append(a.get("value", "on"))
                if "checked" in a:
                    form["values"].setdefault(name, []).append(a.get("value", "on"))
                return
            form["values"].setdefault(name, []).append(a.get("value", ""))
        elif tag == "select":
            self._select = name
            form["choices"].setdefault(name, [])
        elif tag == "option" and self._select:
            form["choices"][self._select].append(a.get("value", ""))
            if "selected" in a:
                form["values"].setdefault(self._select, []).append(a.get("value", ""))
        elif tag == "textarea":
            self._textarea = name
            form["values"].setdefault(name, [""])

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data):
        if self._textarea and self.forms:
            self.forms[-1]["values"][self._textarea] = [data]


def _posts(form: dict) -> list[dict]:
    """Empty, as shown, then as shown with each choice of each choice field (the CSRF token kept in each)."""
    shown = form["values"]
    token = {k: v for k, v in shown.items() if k == "csrfmiddlewaretoken"}
    bodies = [token, shown]
    for name, options in form["choices"].items():
        for option in [o for o in options if o][:MAX_CHOICES]:
            bodies.append({**shown, name: [option]})
    return bodies


@pytest.fixture
def no_backend(settings, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    settings.CELERY_BROKER_URL = ""
    settings.LLM_ENDPOINTS = (
        Endpoint(name="openai", key_env="XQMEVAL_TEST_UNSET_KEY"),  # its key is not set
        Endpoint(name="local", base_url="http://127.0.0.1:9/v1"),  # nothing listens at port 9 (discard)
    )


def test_no_form_answers_5xx_with_a_backend_that_cannot_start(world, no_backend):  # noqa: F811
    admin = world.users["admin"]
    client = Client(raise_request_exception=False)
    logout = reverse("logout")
    failures, submitted, actions = [], 0, set()
    for row in ADMIN_PAGES:
        client.force_login(admin)
        page_url = row.url(world)
        page = client.get(page_url)
        if page.status_code >= 500:
            failures.append(f"GET {page_url}: {page.status_code}")
        if page.status_code != 200 or "html" not in page.get("Content-Type", ""):
            continue
        parser = Forms()
        parser.feed(page.content.decode("utf-8", "replace"))
        for form in parser.forms:
            action = form["action"] or page_url
            if action == logout:  # it ends the session the walk needs; it takes no input
                continue
            for body in _posts(form):
                client.force_login(admin)  # a form may have changed who is logged in
                answer = client.post(action, body) if form["method"] == "post" else client.get(action, body)
                submitted += 1
                actions.add(action.split("?")[0])
                if answer.status_code >= 500:
                    failures.append(
                        f"{form['method'].upper()} {action} from {page_url} with {body}: {answer.status_code}"
                    )
    slug, release = world.project.name, world.release
    expected = {  # the forms #37.6 names: if the walk stops reaching one, it proves nothing about it
        reverse("projects:new"),
        reverse("projects:settings", args=[slug]),
        reverse("projects:assignments", args=[slug]),
        reverse("projects:direction_add", args=[slug]),
        reverse("projects:corpus", args=[slug]),
        reverse("projects:xqmeval", args=[slug]),
        reverse("projects:rating_items", args=[slug]),
        reverse("injection:runs"),  # the run form, sent with each backend
        reverse("review:manage", args=[slug]),
        reverse("review:annotators"),  # the invitation form
        reverse("benchmarks:build", args=[slug]),
        reverse("benchmarks:release", args=[slug]),
        reverse("benchmarks:push", args=[slug, release.version]),
        reverse("scores:start", args=[release.pk]),
        reverse("agreement:annotators", args=[slug]),
    }
    assert not expected - actions, f"forms the walk did not reach: {sorted(expected - actions)}"
    assert not failures, "\n".join(failures)
