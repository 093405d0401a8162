"""Transient database faults on demand, for the tests of the tasks that must retry them: new connections that
give up waiting for a lock after 300 ms (an OperationalError), and a poll for what a worker does meanwhile."""
from __future__ import annotations

import time

import pytest
from django.db import connection

from tests.conftest import need


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
