"""Rows written once for a whole test module, for the tests that only read them or change them inside their
own transaction (rolled back after each test): ``module_data``. Registered in ``tests/conftest.py``."""

from __future__ import annotations

import pytest


def empty_the_database(django_db_blocker) -> None:
    """Every table emptied, as a transactional test leaves the database (no migration seeds rows)."""
    from django.core.management import call_command

    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture(scope="module")
def module_data(django_db_setup, django_db_blocker):
    """Rows written once for a whole test module: ``module_data(make)`` commits what ``make()`` writes
    (outside any test's transaction) and returns its result. Each test still runs in a transaction that is
    rolled back after it, so a test may change these rows and the next one finds them as made. The database
    is emptied before (a run stopped midway may have left rows in a reused database) and after the module.
    Only for modules without transactional tests: their flush would take the rows away."""
    empty_the_database(django_db_blocker)

    def make(build):
        with django_db_blocker.unblock():
            return build()

    yield make
    empty_the_database(django_db_blocker)
