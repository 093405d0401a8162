"""The test run's settings: the platform's own (``xqmeval.settings``) with two costs taken out.

Only what makes tests slow without changing what they check is overridden here. Workers and servers that
tests start in a subprocess name ``xqmeval.settings`` themselves, so they run the production configuration.
"""

from __future__ import annotations

import os
from pathlib import Path

# Under pytest-xdist each worker gets its own data folder (releases, media, the SQLite file) and its own
# Redis database (Celery queues, locks), set in the environment before the platform's settings read it so
# that the workers and servers the tests start inherit them too. PostgreSQL test databases are already
# one per worker (pytest-django suffixes their names with the worker id).
# A subprocess that inherits these settings (and the environment already set) must not shift them twice.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER and os.environ.get("XQMEVAL_TEST_WORKER") != _WORKER:
    os.environ["XQMEVAL_TEST_WORKER"] = _WORKER
    _index = int(_WORKER.removeprefix("gw"))
    _data = Path(os.environ.get("XQMEVAL_DATA_DIR") or Path(__file__).resolve().parent.parent / "var" / "tests")
    os.environ["XQMEVAL_DATA_DIR"] = str(_data / _WORKER)
    _redis = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15")
    _base, _, _db = _redis.rpartition("/")
    if not _db.isdigit() or int(_db) < _index:
        raise RuntimeError(f"REDIS_URL={_redis}: xdist worker {_WORKER} takes database number minus {_index}")
    os.environ["REDIS_URL"] = f"{_base}/{int(_db) - _index}"

from xqmeval.settings import *  # noqa: E402, F403  (an overlay: every setting, then the few below)

# PBKDF2 at Django's 1M iterations costs ~0.26 s a user; a test's users guard nothing worth that. The
# production hashers follow so a hash made by a subprocess (demo_setup) still verifies here.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
]

# The API's rate limit: a test run sends thousands of requests a minute as the same few users (ids repeat
# across tests), far past a person's rate. tests/hardening/test_api_throttle.py sets the real rates back.
API_THROTTLE_RATES = {"user": "1000000/minute"}

# Process-local cache whatever CACHE_URL says, so tests never share cached figures through a Redis that
# another run (or another xdist worker) also uses. Tests of the Redis cache set settings.CACHES themselves
# and carry the ``redis`` marker.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# The PostgreSQL backend with a flush that deletes the few rows a transactional test leaves instead of
# truncating every table (tests/support/postgresql/base.py): the teardowns of the transactional tests of
# tests/injection/test_one_run_at_a_time.py, tests/exports/test_direction_retry.py and tests/core/test_bulk.py
# took 0.5 s together instead of 1.8 to 3 s.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    DATABASES["default"]["ENGINE"] = "tests.support.postgresql"  # noqa: F405
