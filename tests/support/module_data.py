"""Rows written once for a whole test module, for the tests that only read them or change them inside their
own transaction (rolled back after each test): ``module_data``. Registered in ``tests/conftest.py``.

The rows are there from the first test that asks for them to the last one in the module (in the order of
collection, which the runs keep: ``bin/test`` hands out whole files to its xdist workers, ``--dist
loadfile``). After that last one the database is emptied, so the module's later tests, transactional ones
included, find it as they would without the rows."""

from __future__ import annotations

import pytest

_LAST_USER: dict[str, str] = {}  # module -> node id of its last test (of this run) that uses module_data
_LIVE: dict[str, object] = {}  # module -> the function that empties the database, while the module's rows are there
_RELEASED: set[str] = set()  # modules whose rows were taken away after their last user


def empty_the_database(django_db_blocker) -> None:
    """Every table emptied, as a transactional test leaves the database (no migration seeds rows)."""
    from django.core.management import call_command

    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture(scope="module")
def module_data(request, django_db_setup, django_db_blocker):
    """Rows written once for a whole test module: ``module_data(make)`` commits what ``make()`` writes
    (outside any test's transaction) and returns its result. Each test still runs in a transaction that is
    rolled back after it, so a test may change these rows and the next one finds them as made. The database
    is emptied before (a run stopped midway may have left rows in a reused database) and after the module's
    last test that uses them. A transactional test among those would take the rows away with its flush."""
    module = request.module.__name__

    def empty() -> None:
        empty_the_database(django_db_blocker)

    empty()
    _LIVE[module] = empty

    def make(build):
        with django_db_blocker.unblock():
            return build()

    yield make
    if _LIVE.pop(module, None) is not None:
        empty()
    _RELEASED.discard(module)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Each module's last test that uses ``module_data``, once the run's tests are chosen (``-m``, ``-k``)."""
    _LAST_USER.clear()
    for item in items:
        if "module_data" in getattr(item, "fixturenames", ()):
            _LAST_USER[item.module.__name__] = item.nodeid


def pytest_runtest_setup(item):
    module = getattr(item, "module", None)
    if module is not None and module.__name__ in _RELEASED and "module_data" in getattr(item, "fixturenames", ()):
        pytest.fail(f"{item.nodeid} runs after the last test that uses {module.__name__}'s module_data")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # the test's own transaction is rolled back first
    module = getattr(item, "module", None)
    if module is None or _LAST_USER.get(module.__name__) != item.nodeid:
        return
    if nextitem is not None and getattr(nextitem, "module", None) is module:  # else the fixture's end empties it
        empty = _LIVE.pop(module.__name__, None)
        if empty is not None:
            empty()
            _RELEASED.add(module.__name__)
