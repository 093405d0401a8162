"""Shared fixtures. Real database (SQLite by default, PostgreSQL with DATABASE_URL), nothing of ours mocked.

REQUIRE_SERVICES=1 (set by the README's test command and CI) turns every 'service missing' skip into a
failure, so a green run always means PostgreSQL, Redis and the browser were used. The shared XQ-MEval data
(``XQMEVAL_SHARED_DATA``, default ``../shared/data/xqmeval``) is mandatory in CI (``CI=true``, or
``REQUIRE_SHARED_DATA=1``); elsewhere — a fresh clone has no ``../shared`` — the tests that read it skip,
and the run ends with one line saying how many and how to provide the data.
"""

from __future__ import annotations

import inspect
import os
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis's health checks on how fast examples are generated measure the machine, not the code: on a loaded
# 2-core runner "input generation is slow" failed tests/unit/test_units.py once. No deadline either, for the same
# reason. Examples stay derandomised per test, so a run is repeatable; HYPOTHESIS_PROFILE=explore draws new ones.
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# fixtures shared by several folders' tests
pytest_plugins = ["tests.support.db_faults", "tests.support.module_data"]

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("XQMEVAL_SHARED_DATA", REPO.parent / "shared" / "data" / "xqmeval"))
REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"
IN_CI = os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")
REQUIRE_SHARED_DATA = IN_CI or os.environ.get("REQUIRE_SHARED_DATA") == "1"
SHARED_DATA_MISSING = "shared XQ-MEval data"  # the start of the skip reason, counted at the end of the run


def stop_process_group(proc, timeout: float = 20) -> None:
    """Stop a worker started with ``start_new_session=True``: SIGTERM to its group, SIGKILL if it lingers."""
    import signal
    import subprocess

    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def need(condition: bool, what: str, required: bool | None = None) -> None:
    """Skip when a service or data set is absent, or fail when the run requires it (``required``; by default
    ``REQUIRE_SERVICES``)."""
    if condition:
        return
    if REQUIRE_SERVICES if required is None else required:
        pytest.fail(f"required but missing: {what}")
    pytest.skip(f"missing: {what}")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    need((SHARED_DATA / "candidates").is_dir(), f"{SHARED_DATA_MISSING} at {SHARED_DATA}", required=REQUIRE_SHARED_DATA)
    return SHARED_DATA


def shared_data_skips(terminalreporter) -> int:
    """How many tests of this run skipped for want of the shared data."""
    count = 0
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        count += f"missing: {SHARED_DATA_MISSING}" in reason
    return count


def pytest_unconfigure(config):
    """The last line of a run in which tests skipped for want of the shared data: how many, and how to
    provide it (after pytest's own summary, so it is the line a newcomer sees)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    skipped = shared_data_skips(reporter)
    if skipped:
        reporter.write_line(
            f"{skipped} test(s) skipped: no {SHARED_DATA_MISSING} at {SHARED_DATA}. To run them, put the XQ-MEval release "
            "there (candidates/*.parquet and decisions.csv) or point XQMEVAL_SHARED_DATA at such a directory; "
            "CI=true makes them mandatory.",
            yellow=True,
            bold=True,
        )


# Markers that follow from what a test uses, so `-m` selects the same tests whoever forgot a decorator:
# a fixture (its whole closure: a fixture that needs redis_url needs Redis too) implies the marker.
MARKER_BY_FIXTURE = {
    "browser": {"browser", "new_page"},
    "redis": {"redis_url"},
    "shared_data": {"shared_data"},
}


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:  # nested functions, lambdas, comprehensions
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def starts_processes(obj, seen: set[int] | None = None) -> bool:
    """Whether a test function, fixture or test helper reaches ``subprocess``: through its own code, or
    through the functions and classes of the test suite it names (a worker fixture, ``stop_process_group``,
    a helper from another test module). Library code is not followed: a library that spawns processes is
    the browser (marked ``browser``) and nothing else here."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    if isinstance(obj, type):
        return any(starts_processes(member, seen) for member in vars(obj).values() if inspect.isfunction(member))
    obj = inspect.unwrap(obj)
    if not inspect.isfunction(obj):
        return False
    names = _code_names(obj.__code__)
    if names & {"subprocess", "Popen"}:
        return True
    for name in names:
        target = obj.__globals__.get(name)
        if (inspect.isfunction(target) or isinstance(target, type)) and target.__module__.startswith("tests."):
            if starts_processes(target, seen):
                return True
    return False


def pytest_collection_modifyitems(config, items):
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in MARKER_BY_FIXTURE.items():
            if used & fixtures:
                item.add_marker(marker)
        fixturedefs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        code = [getattr(item, "function", None)] + [d.func for defs in fixturedefs.values() for d in defs]
        if any(starts_processes(func) for func in code if func is not None):
            item.add_marker("subprocess")
    items[:] = longest_modules_first(items)


# Rough seconds of a test by its markers, to hand out the longest files first. bin/test's xdist workers take
# whole files in this order (--dist loadfile --no-loadscope-reorder): xdist's own order, by number of tests,
# left the one-test browser tours (minutes each) to the end of the full run, with one worker idle meanwhile.
COST_BY_MARKER = {"browser": 30.0, "subprocess": 10.0, "slow": 15.0, "shared_data": 2.0}


def estimated_seconds(item) -> float:
    return max((COST_BY_MARKER.get(mark.name, 0.0) for mark in item.iter_markers()), default=0.0) or 0.1


def longest_modules_first(items: list) -> list:
    """The items grouped by file, the files in descending estimated cost (stable: equal costs keep their
    collection order), each file's own tests in their order."""
    by_module: dict[str, list] = {}
    for item in items:
        by_module.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    cost = {module: sum(estimated_seconds(item) for item in tests) for module, tests in by_module.items()}
    return [item for module in sorted(by_module, key=lambda m: -cost[m]) for item in by_module[module]]


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database, empty: one kept by ``--reuse-db`` may hold the rows of a run stopped midway (a
    transactional test's, or a module's shared rows: ``module_data`` in ``tests/support/module_data.py``)."""
    from django.core.management import call_command

    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def languages(db):
    from core.services import direction_ensure

    return {code: direction_ensure(code=code) for code in ("en-de", "en-zh", "en-ar", "en-ja")}


@pytest.fixture
def project(db, languages):
    from core.services import project_directions_add, project_ensure

    project, _ = project_ensure(name="demo", title="Demo project")
    project_directions_add(project=project, codes=languages.keys())
    return project


@pytest.fixture
def admin_user(db):
    from core.services import user_create

    return user_create(username="admin", password="admin-pass-123", role="admin")


@pytest.fixture
def annotator_de(db):
    from core.services import user_create

    return user_create(username="anna_de", password="anna-pass-123", languages=["de"])


@pytest.fixture
def annotator_zh(db):
    from core.services import user_create

    return user_create(username="li_zh", password="li-pass-123", languages=["zh"])


@pytest.fixture
def redis_url() -> str:
    import redis

    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except Exception as exc:  # connection refused, timeout
        need(False, f"Redis at {url} ({exc})")
    return url
