"""The demo (``bin/demo``) serves the site's own error pages, as production does (#37.6): in the demo's
environment (``bin/demo-env``, which ``bin/demo`` sources) DEBUG is off, so an unknown URL answers the
site's "Page not found", never Django's technical page with the URL list."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO

PROBE = """
import django
django.setup()
from django.conf import settings
from django.test import Client
response = Client(raise_request_exception=False).get("/no-such-page/", HTTP_HOST="127.0.0.1")
print(settings.DEBUG, response.status_code)
print(response.content.decode())
"""


def test_the_demo_environment_serves_the_sites_own_404(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL")}
    env.update(XQMEVAL_DATA_DIR=str(tmp_path), PYTHONPATH=str(REPO))
    # sourced by bash as bin/demo sources it, then the probe runs in that environment
    done = subprocess.run(
        ["bash", "-c", f'source bin/demo-env && exec {sys.executable} -c "$PROBE"'],
        cwd=REPO,
        env={**env, "PROBE": PROBE},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, _, page = done.stdout.partition("\n")
    assert first == "False 404"
    assert "Page not found" in page and "/no-such-page/" in page
    assert "Using the URLconf" not in page and "technical" not in page.lower()
