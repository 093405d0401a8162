"""The database of a worker a test starts in another process (``manage.py inject``, a Celery worker): its own
database (PostgreSQL when the tests run on it, else a SQLite file), inspected with plain SQL, since the test's
Django connection is elsewhere.

``WorkerDatabase(tmp_path, demo=True)`` starts as a copy of a database migrated and loaded with the small
demo gold pairs once per test process (``CREATE DATABASE … TEMPLATE``, or a copy of the SQLite file): about
0.1 s instead of two Django processes (``migrate``, then the loading script) of 3 to 6 s for every test.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import REPO

SETUP = """
from core.corpus.services import corpus_rows_import
from core.services import project_ensure
from core.corpus.domain import CorpusRow
from tests.injection.conftest import PAIRS
project, _ = project_ensure(name="demo")
for direction, pairs in PAIRS.items():
    rows = [CorpusRow(str(i), s, r, f"line {i}") for i, (s, r) in enumerate(pairs)]
    corpus_rows_import(project=project, direction_code=direction, rows=rows, source_name="inline")
"""


def manage(env: dict, *args: str, **kwargs) -> subprocess.Popen:
    """``manage.py ARGS`` in another process, its output (stdout and stderr together) as text."""
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kwargs,
    )


def prepare(env: dict) -> None:
    """Migrate the database at ``env["DATABASE_URL"]`` and load the small gold pairs (project demo), as a worker
    will see them."""
    for args in (("migrate", "-v0"), ("shell", "-c", SETUP)):
        proc = manage(env, *args)
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out


def _main_url() -> str:
    return os.environ.get("DATABASE_URL", "")


def _name(suffix: str) -> str:
    """A database name of this run and xdist worker: two workers (or two people on one server) never share one."""
    base = _main_url().rsplit("/", 1)[-1].split("?")[0] or "xqmeval"
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return f"test_{base}_{worker}_{suffix}"


_DEMO: dict[str, str] = {}  # the demo template of this process: its database name or SQLite file


def _demo_template() -> str:
    """The migrated database with the demo gold pairs, made on first use in this process."""
    if "template" in _DEMO:
        return _DEMO["template"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CELERY_BROKER_URL", None)  # loading the pairs enqueues nothing; no broker, whatever the test's
    if _main_url().startswith("postgres"):
        import psycopg

        name = _name("demo_template")
        with psycopg.connect(_admin_url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        env["DATABASE_URL"] = _main_url().rsplit("/", 1)[0] + "/" + name
        template = name
    else:
        template = str(Path(tempfile.mkdtemp(prefix="xqmeval-demo-")) / "demo.sqlite3")
        env["DATABASE_URL"] = f"sqlite:///{template}"
    prepare(env)
    _DEMO["template"] = template
    atexit.register(_drop_demo_template)
    return template


def _drop_demo_template() -> None:
    template = _DEMO.pop("template", "")
    if template and _main_url().startswith("postgres"):
        import psycopg

        with psycopg.connect(_admin_url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
    elif template:
        shutil.rmtree(Path(template).parent, ignore_errors=True)


def _admin_url() -> str:
    return _main_url().rsplit("/", 1)[0] + "/postgres"  # the maintenance database always exists


class WorkerDatabase:
    """The worker's own database, inspected with plain SQL (the test's Django connection is elsewhere).
    ``demo=True``: migrated, with the demo gold pairs (``prepare``) already there; else empty."""

    def __init__(self, tmp_path: Path, suffix: str = "kill", *, demo: bool = False):
        if _main_url().startswith("postgres"):
            import psycopg

            self.admin_url = _admin_url()
            self.name = _name(suffix)
            template = f' TEMPLATE "{_demo_template()}"' if demo else ""
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}"')
                conn.execute(f'CREATE DATABASE "{self.name}"{template}')
            self.url = _main_url().rsplit("/", 1)[0] + "/" + self.name
            self.connect = lambda: psycopg.connect(self.url)
        else:
            self.admin_url = ""
            path = tmp_path / f"worker-{suffix}.sqlite3"
            if demo:
                shutil.copyfile(_demo_template(), path)
            self.url = f"sqlite:///{path}"
            self.connect = lambda: sqlite3.connect(path, timeout=30)

    def rows(self, sql: str) -> list[tuple]:
        conn = self.connect()
        try:
            return conn.execute(sql).fetchall()
        except Exception:
            return []  # tables not there yet
        finally:
            conn.close()

    def count(self, sql: str) -> int:
        rows = self.rows(sql)
        return int(rows[0][0]) if rows else 0

    def drop(self) -> None:
        if self.admin_url:
            import psycopg

            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
