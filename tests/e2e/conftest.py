"""Browser tests: Playwright's sync API driving Debian's chromium against pytest-django's live server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import need

# Playwright's sync API runs an event loop in this thread; Django's ORM calls from the test body are safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(os.environ.get("E2E_SCREENSHOTS", "/tmp/xqmeval-e2e"))


@pytest.fixture(scope="module")
def browser():
    """Module-scoped: Playwright's sync API keeps an asyncio loop running in the main thread until it stops,
    which would break asyncio.run() in every test collected after the browser tests."""
    need(Path(CHROMIUM).exists(), f"chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture
def new_page(browser, live_server):
    contexts = []

    def make(viewport: dict | None = None):
        context = browser.new_context(viewport=viewport or {"width": 1280, "height": 900}, base_url=live_server.url)
        context.set_default_timeout(15000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def login(page, username: str, password: str, next_url: str = "/review/") -> None:
    page.goto(f"/accounts/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def shot(page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each browser test starts with an empty cache: figures kept under a project's id and change-log token would
    otherwise outlive an earlier test whose flush gave the next project the same id and an empty log."""
    from django.core.cache import cache

    cache.clear()
