"""Shared fixtures. Real database (SQLite by default, PostgreSQL with DATABASE_URL), nothing of ours mocked.

REQUIRE_SERVICES=1 (set by the README's test command and CI) turns every 'service or data missing' skip
into a failure, so a green run always means PostgreSQL, Redis, the browser and the shared data were used.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("XQMEVAL_SHARED_DATA", REPO.parent / "shared" / "data" / "xqmeval"))
REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"


def stop_process_group(proc, timeout: float = 20) -> None:
    """Stop a worker started with ``start_new_session=True``: SIGTERM to its group, SIGKILL if it lingers."""
    import signal
    import subprocess

    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def need(condition: bool, what: str) -> None:
    """Skip when a service or data set is absent, or fail when the run requires all of them."""
    if condition:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"required but missing: {what}")
    pytest.skip(f"missing: {what}")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    need((SHARED_DATA / "candidates").is_dir(), f"shared XQ-MEval data at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def languages(db):
    from core.services import ensure_direction

    return {code: ensure_direction(code) for code in ("en-de", "en-zh", "en-ar", "en-ja")}


@pytest.fixture
def project(db, languages):
    from core.services import add_directions, ensure_project

    project, _ = ensure_project("demo", title="Demo project")
    add_directions(project, languages.keys())
    return project


@pytest.fixture
def admin_user(db):
    from core.services import create_user

    return create_user("admin", "admin-pass-123", role="admin")


@pytest.fixture
def annotator_de(db):
    from core.services import create_user

    return create_user("anna_de", "anna-pass-123", languages=["de"])


@pytest.fixture
def annotator_zh(db):
    from core.services import create_user

    return create_user("li_zh", "li-pass-123", languages=["zh"])


@pytest.fixture
def redis_url() -> str:
    import redis

    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except Exception as exc:  # connection refused, timeout
        need(False, f"Redis at {url} ({exc})")
    return url
