"""Production hygiene (issue 12 item 10): /healthz under SSL redirect, the Content-Security-Policy, Swagger
UI from our own static files, who may read the schema, and the docs' configuration names."""

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.support.asserts import every

PRODUCTION = {
    "DJANGO_ENV": "production",
    "SECRET_KEY": "ZS0Ei0CfTinrAzdHVABZVzjSQcfgqTNv2vEKtobCJhTIIEWvcOnnaFVcQe9o",  # random, for these tests only
    "ALLOWED_HOSTS": "testserver",
    "DEBUG": "",
}

PROBE = """
import django, json
django.setup()
from django.test import Client
c = Client()
out = {}
for url in ("/healthz", "/accounts/login/"):
    r = c.get(url)
    out[url] = [r.status_code, r.get("Location", "")]
r = c.get("/healthz", secure=True)
out["secure"] = [r.status_code, r.get("Content-Security-Policy", "")]
print(json.dumps(out))
"""


def test_healthz_is_exempt_from_the_ssl_redirect_under_production_settings(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
        **PRODUCTION,
        "XQMEVAL_DATA_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path}/probe.sqlite3",
    }  # SELECT 1 needs no shared database
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    import json

    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["/healthz"][0] == 200  # plain HTTP: a load balancer's probe
    assert out["/accounts/login/"] == [301, "https://testserver/accounts/login/"]  # everything else goes to HTTPS
    assert out["secure"][0] == 200 and "default-src 'self'" in out["secure"][1]


@pytest.mark.django_db
def test_every_page_sends_a_content_security_policy_without_unsafe_inline(client):
    policy = client.get("/accounts/login/")["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if " " in part.strip())
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


INLINE = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style[\s>]|\sstyle=\"|\son[a-z]+=\"", re.I)


def test_templates_have_no_inline_scripts_styles_or_handlers():
    found = [
        f"{path.relative_to(REPO)}:{text[: m.start()].count(chr(10)) + 1}: {m.group()}"
        for path in sorted((REPO / "templates").rglob("*.html"))
        for text in [path.read_text(encoding="utf-8")]
        for m in INLINE.finditer(text)
    ]
    assert found == []


@pytest.mark.django_db
def test_api_docs_come_from_our_static_files_and_need_a_login(client, admin_user):
    assert client.get("/api/schema/").status_code in (401, 403)
    assert client.get("/api/docs/").status_code in (401, 403)
    client.force_login(admin_user)
    page = client.get("/api/docs/").content.decode()
    assert "cdn" not in page.lower() and "unpkg" not in page.lower()
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert any("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in a for a in assets)
    assert every(a.startswith("/") for a in assets), assets
    settings_script = next(a for a in assets if "script" in a)
    assert client.get(settings_script).status_code == 200
    assert client.get("/api/schema/?format=json").json()["info"]["title"] == "xqmeval API"


@pytest.mark.django_db
def test_api_docs_link_back_to_the_site(client, admin_user):
    client.force_login(admin_user)
    page = client.get("/api/docs/").content.decode()
    back = re.search(r'<a href="([^"]+)">([^<]+)</a>', page)
    assert back is not None, "the API docs page has no link back to the site"
    assert back.group(1) == "/" and "xqmeval" in back.group(2)
    assert client.get(back.group(1)).status_code == 200


def _configuration_table() -> str:
    """The platform's settings table of the docs site (the configuration page's first section)."""
    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    table = page[page.index("## Settings of the platform") :]
    return table[: table.index("\n## ", 5)]


def test_every_setting_the_docs_name_is_read_by_the_code():
    names = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)`", _configuration_table(), re.M))
    assert "DEBUG" in names or "DJANGO_DEBUG" in names
    code = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in (
            "xqmeval",
            "core",
            "annotation",
            "injection",
            "exports",
            "scoring",
            "llm_client",
            "worker_client",
        )
        for p in (REPO / folder).rglob("*.py")
    )
    unread = sorted(n for n in names if not re.search(rf"[\"']{n}[\"']", code))
    assert unread == []


def test_every_variable_the_settings_read_is_in_the_docs():
    settings = (REPO / "xqmeval" / "settings.py").read_text(encoding="utf-8")
    read = set(re.findall(r"(?:environ\.get|environ\[|env_bool|env_list)\(?\s*\"([A-Z][A-Z0-9_]+)\"", settings))
    assert {"DATABASE_URL", "SECRET_KEY", "CACHE_URL"} <= read  # the pattern finds what settings.py reads
    named = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", _configuration_table()))
    assert sorted(read - named) == []
