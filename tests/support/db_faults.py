"""Transient database faults on demand, for the tests of the tasks that must retry them: new connections that
give up waiting for a lock after 300 ms (an OperationalError), a table held by another session, a queue of the
test's own for a worker on the Redis broker, and a poll for what the worker does meanwhile."""

from __future__ import annotations

import time
import uuid
from contextlib import contextmanager

import pytest
from django.db import connection

from tests.conftest import need
from tests.support.celery_queue import tasks_queued_to


@pytest.fixture
def lock_timeout(db):
    """New connections to the test database give up waiting for a lock after 300 ms (an OperationalError)."""
    need(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL=postgres://…)")
    name = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:
        cursor.execute(f'ALTER DATABASE "{name}" SET lock_timeout = 300')
    yield
    with connection.cursor() as cursor:
        cursor.execute(f'ALTER DATABASE "{name}" RESET lock_timeout')


def wait_until(condition, what: str, timeout: float = 30.0):
    """``condition()``'s first truthy value, polled until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def worker_queue(redis_url):
    """Celery on the Redis broker instead of in-process, with a queue of this test's own for its worker."""
    with tasks_queued_to(redis_url):
        yield f"retry-test-{uuid.uuid4().hex}"


@contextmanager
def table_held(table: str):
    """Another session holds ``table`` (ACCESS EXCLUSIVE) until its ``rollback()`` or the block's end."""
    import psycopg

    d = connection.settings_dict
    holder = psycopg.connect(
        dbname=d["NAME"], user=d["USER"], host=d["HOST"], port=d["PORT"] or 5432, password=d["PASSWORD"] or None
    )
    try:
        holder.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        yield holder
    finally:
        holder.close()
