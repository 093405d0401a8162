"""The production configuration, as a deployment runs it: ``DJANGO_ENV=production``, PostgreSQL, the demo
data, ``collectstatic`` into the manifest storage, gunicorn, and a TLS-terminating proxy (played by the
test: ``X-Forwarded-Proto: https``, cookies sent back by hand because they are ``Secure``).

As the admin and as an annotator it follows every link the pages show (breadth first, the Django admin's
own pages apart), and checks what only production can break: a page that fails with DEBUG off, a
``{% static %}`` name missing from the manifest (a 500 on every page that uses it), a static file
whitenoise does not serve, a link shown to a user that answers 403/404 to that user, and the headers and
cookie flags a deployment promises."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections import deque
from html.parser import HTMLParser
from http.cookies import SimpleCookie
from urllib.parse import urljoin, urlsplit

import pytest

from tests.conftest import REPO, stop_process_group
from tests.support.worker_database import WorkerDatabase

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]

SECRET = "IX1MiDn0Qv4MnJetHKYhxZNlwCodbQSufJ2sum12WzWhatJK3ZNqCkQEfT7M"  # random, for this test only
HASHED = re.compile(r"\.[0-9a-f]{12}\.[a-z0-9]+$")  # ManifestStaticFilesStorage's name.<hash>.ext
SKIP = re.compile(r"^/(accounts/logout/|admin/.+)|/(download|export)|\.(csv|json|jsonl|parquet|zip)$")
MAX_PAGES = 120  # per user: every menu page, a project's pages and the lists they link


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.pages, self.assets = [], []  # pages, fragments and plots to request; static files

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.pages.append(a["href"])
        if a.get("hx-get"):  # fragments htmx loads (a project's stages, progress)
            self.pages.append(a["hx-get"])
        if tag == "img" and a.get("src"):  # plots drawn by views
            self.pages.append(a["src"])
        for name in ("src", "href"):
            if tag in ("script", "img", "link") and a.get(name):
                self.assets.append(a[name])


class Browser:
    """HTTP as a browser behind a TLS proxy: the proxy's header on every request, ``Secure`` cookies kept."""

    def __init__(self, base: str):
        import httpx

        self.base = base
        self.http = httpx.Client(base_url=base, timeout=60, follow_redirects=False)
        self.cookies: dict[str, str] = {}
        self.set_cookie_headers: list[str] = []

    def request(self, method: str, path: str, **kw):
        headers = {"X-Forwarded-Proto": "https", "Referer": f"https://{urlsplit(self.base).netloc}/accounts/login/"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        response = self.http.request(method, path, headers=headers, **kw)
        for header in response.headers.get_list("set-cookie"):
            self.set_cookie_headers.append(header)
            for name, morsel in SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return response

    def login(self, username: str, password: str) -> None:
        self.request("GET", "/accounts/login/")
        r = self.request(
            "POST",
            "/accounts/login/",
            data={
                "username": username,
                "password": password,
                "csrfmiddlewaretoken": self.cookies["csrftoken"],
                "next": "/",
            },
        )
        assert r.status_code == 302 and r.headers["Location"] == "/", (r.status_code, r.text[:500])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(env, *args, timeout=600):
    proc = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"manage.py {' '.join(args)}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def shape(target: str) -> str:
    """One page per kind: ids and page numbers aside (/review/p/candidate/1/?round=1 is /review/p/candidate/N/?round)."""
    url = urlsplit(target)
    return (
        re.sub(r"\d+", "N", url.path)
        + "?"
        + ",".join(sorted({part.split("=")[0] for part in url.query.split("&") if part}))
    )


def crawl(browser: Browser, start: list[str]) -> tuple[dict[str, int], set[str]]:
    """Status of every kind of page reached by following links from ``start`` (same site, GET), and the
    static files those pages load."""
    seen, statuses, assets = {shape(p) for p in start}, {}, set()
    queue = deque(start)

    def follow(target: str) -> None:
        if shape(target) not in seen:
            seen.add(shape(target))
            queue.append(target)

    while queue and len(statuses) < MAX_PAGES:
        path = queue.popleft()
        r = browser.request("GET", path)
        statuses[path] = r.status_code
        if r.status_code in (301, 302) and r.headers["Location"].startswith("/"):
            if not r.headers["Location"].startswith("/accounts/login/"):
                follow(r.headers["Location"])
            continue
        if r.status_code != 200 or "text/html" not in r.headers.get("content-type", ""):
            continue
        parser = Links()
        parser.feed(r.text)
        assets.update(p for p in (urlsplit(urljoin(path, a)).path for a in parser.assets) if p.startswith("/static/"))
        for href in parser.pages:
            url = urlsplit(urljoin(path, href))
            if (
                url.netloc
                or url.scheme not in ("", "http", "https")
                or url.path.startswith("/static/")
                or SKIP.search(url.path)
            ):
                continue
            follow(url.path + (f"?{url.query}" if url.query else ""))
    return statuses, assets


def test_the_production_configuration_serves_every_linked_page_and_static_file(tmp_path, shared_data):
    db = WorkerDatabase(tmp_path, suffix="production")
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DJANGO_ALLOW_ASYNC_UNSAFE", "CELERY_BROKER_URL")},
        "DJANGO_ENV": "production",
        "DEBUG": "",
        "SECRET_KEY": SECRET,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": db.url,
        "XQMEVAL_DATA_DIR": str(tmp_path / "data"),
        "STATIC_ROOT": str(tmp_path / "static"),
        "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(REPO),
    }
    server = None
    log = open(tmp_path / "gunicorn.log", "w")
    try:
        _run(env, "migrate", "--noinput", "-v0")
        # unscored: the crawl would compute every meta-evaluation page of the 63k-triplet release in its request
        # (tests/exports/metaeval covers those pages; tests/e2e/test_demo_tour.py the demo's own scored pages)
        _run(
            env, "demo_setup", "--no-scores"
        )  # accounts, the demo project and its candidates, the XQ-MEval release 1.0.0
        _run(env, "collectstatic", "--noinput", "-v0")
        assert "no issues" in _run(env, "check", "--deploy", "--fail-level", "WARNING")  # Django's deployment checklist
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "xqmeval.wsgi",
                "-b",
                f"127.0.0.1:{port}",
                "-w",
                "2",
                "--timeout",
                "120",
            ],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        import httpx

        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, (tmp_path / "gunicorn.log").read_text()[
                -3000:
            ]
            time.sleep(0.3)

        # plain HTTP: only the load balancer's probe answers; everything else goes to HTTPS
        assert httpx.get(f"{base}/accounts/login/").headers["Location"] == f"https://127.0.0.1:{port}/accounts/login/"

        static_files: set[str] = set()
        for username, password, start in (
            ("anna", "demo-anna-pass", ["/", "/review/", "/review/mine/", "/agreement/", "/benchmarks/", "/scores/"]),
            (
                "admin",
                "demo-admin-pass",
                ["/", "/review/", "/injection/", "/agreement/", "/benchmarks/", "/scores/", "/admin/", "/api/docs/"],
            ),
        ):
            browser = Browser(base)
            browser.login(username, password)
            statuses, assets = crawl(browser, start)
            broken = {path: code for path, code in statuses.items() if code not in (200, 301, 302)}
            assert not broken, (
                f"{username}: links that do not answer: {broken}\n{(tmp_path / 'gunicorn.log').read_text()[-3000:]}"
            )
            assert len(statuses) >= 15, statuses  # it did get past the menu
            static_files |= assets

            page = browser.request("GET", "/")
            assert page.headers["Strict-Transport-Security"].startswith("max-age=31536000")
            assert "default-src 'self'" in page.headers["Content-Security-Policy"]
            assert page.headers["X-Content-Type-Options"] == "nosniff"
            session = next(h for h in browser.set_cookie_headers if h.startswith("sessionid="))
            assert "Secure" in session and "HttpOnly" in session
            assert "Secure" in next(h for h in browser.set_cookie_headers if h.startswith("csrftoken="))
            schema = browser.request("GET", "/api/schema/")  # what the API docs page loads by script
            assert schema.status_code == 200 and "openapi:" in schema.text
            missing = browser.request("GET", "/projects/no-such-project/")
            assert (
                missing.status_code == 404 and "Page not found" in missing.text
            )  # the site's page, its static files hashed

        assert any(f.startswith("/static/css/app.") for f in static_files), static_files
        unhashed = sorted(f for f in static_files if not HASHED.search(f))
        assert not unhashed, f"static files outside the manifest (no content hash, so no long caching): {unhashed}"
        for path in sorted(static_files):
            r = httpx.get(base + path, headers={"X-Forwarded-Proto": "https"})
            assert r.status_code == 200, path
            assert "immutable" in r.headers.get("Cache-Control", ""), (path, r.headers.get("Cache-Control"))
    finally:
        if server is not None:
            stop_process_group(server)
        log.close()
        db.drop()
