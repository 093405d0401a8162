"""Login throttling (issue 12 item 9): the login form, the admin login and API Basic auth lock an account, or
a client address, after AXES_FAILURE_LIMIT failures, with a clear 429. Real requests through the middleware."""

import base64
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import Client

from tests.conftest import REPO

pytestmark = pytest.mark.django_db
LIMIT = settings.AXES_FAILURE_LIMIT


def form_login(client, username, password, url="/accounts/login/"):
    return client.post(url, {"username": username, "password": password})


def basic(username, password):
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}


def test_the_login_form_locks_an_account_after_the_limit(annotator_de):
    client = Client(REMOTE_ADDR="10.0.0.1")
    for _ in range(LIMIT - 1):
        assert form_login(client, "anna_de", "wrong").status_code == 200  # the form again, with its error
    assert form_login(client, "anna_de", "wrong").status_code == 429  # the failure that reaches the limit
    locked = form_login(Client(REMOTE_ADDR="10.0.0.2"), "anna_de", "anna-pass-123")  # right password, another client
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode() and "locked for 15 minute(s)" in locked.content.decode()
    assert "_auth_user_id" not in Client().session


def test_a_client_is_locked_after_the_limit_across_accounts(annotator_de, annotator_zh):
    client = Client(REMOTE_ADDR="10.0.0.3")
    for i in range(LIMIT):
        form_login(client, f"nobody{i}", "wrong")
    assert form_login(client, "li_zh", "li-pass-123").status_code == 429  # this client, any account
    ok = form_login(Client(REMOTE_ADDR="10.0.0.4"), "li_zh", "li-pass-123")  # another client: li is not locked
    assert ok.status_code == 302


def test_a_success_before_the_limit_resets_the_count(annotator_de):
    client = Client(REMOTE_ADDR="10.0.0.5")
    for _ in range(LIMIT - 1):
        form_login(client, "anna_de", "wrong")
    assert form_login(client, "anna_de", "anna-pass-123").status_code == 302
    for _ in range(LIMIT - 1):
        form_login(Client(REMOTE_ADDR="10.0.0.5"), "anna_de", "wrong")
    assert form_login(Client(REMOTE_ADDR="10.0.0.5"), "anna_de", "anna-pass-123").status_code == 302


def test_the_admin_login_is_throttled(admin_user):
    client = Client(REMOTE_ADDR="10.0.0.6")
    for _ in range(LIMIT):
        form_login(client, "admin", "wrong", "/admin/login/")
    locked = form_login(client, "admin", "admin-pass-123", "/admin/login/")
    assert locked.status_code == 429 and "Too many failed logins" in locked.content.decode()


def test_api_basic_auth_is_throttled_with_a_json_answer(annotator_de):
    client = Client(REMOTE_ADDR="10.0.0.7")
    assert client.get("/api/review/decisions/", **basic("anna_de", "anna-pass-123")).status_code == 200
    for _ in range(LIMIT - 1):
        assert client.get("/api/review/decisions/", **basic("anna_de", "wrong")).status_code in (401, 403)
    client.get("/api/review/decisions/", **basic("anna_de", "wrong"))
    locked = client.get("/api/review/decisions/", **basic("anna_de", "anna-pass-123"))
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.json()["detail"]


def test_the_client_address_behind_proxies_comes_from_x_forwarded_for(settings, annotator_de):
    settings.XQMEVAL_PROXY_COUNT = 1
    for i in range(LIMIT):
        form_login(Client(REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR=f"1.2.3.4, 192.0.2.{i}"), f"x{i}", "wrong")
    # one proxy: the client is the last X-Forwarded-For entry; these were 5 different clients, none locked
    assert (
        form_login(
            Client(REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="192.0.2.99"), "anna_de", "anna-pass-123"
        ).status_code
        == 302
    )


def _setting(env: dict, expression: str) -> str:
    env = {**{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}, **env}
    code = f"import django; django.setup(); from django.conf import settings; print({expression})"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**env, "DJANGO_SETTINGS_MODULE": "xqmeval.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_basic_auth_can_be_turned_off_and_limits_come_from_the_environment(tmp_path):
    expression = "settings.REST_FRAMEWORK['DEFAULT_AUTHENTICATION_CLASSES'], settings.AXES_FAILURE_LIMIT, settings.AXES_COOLOFF_TIME"
    on = _setting({"XQMEVAL_DATA_DIR": str(tmp_path)}, expression)
    off = _setting(
        {
            "XQMEVAL_DATA_DIR": str(tmp_path),
            "API_BASIC_AUTH": "0",
            "AXES_FAILURE_LIMIT": "9",
            "AXES_COOLOFF_MINUTES": "30",
        },
        expression,
    )
    assert "BasicAuthentication" in on and "BasicAuthentication" not in off
    assert off.endswith(" 9 0.5")
