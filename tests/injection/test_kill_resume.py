"""A worker killed mid-run (SIGKILL, no clean-up) and the run resumed: no duplicate, no loss.

The worker is `manage.py inject` in a subprocess on its own database (a fresh PostgreSQL database when
the tests run on PostgreSQL, else a SQLite file: ``tests/support/worker_database.py``), talking to the stub
server of this process over HTTP; the database is inspected directly with the driver.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import time

import pytest

from core.domain.units import halves_markup
from tests.conftest import REPO
from tests.support.worker_database import WorkerDatabase, manage

pytestmark = pytest.mark.slow

SILENT_S = 600.0  # a stub that answers only after this long has, for a worker waited for a tenth of it, gone quiet


def test_killed_worker_loses_nothing_and_duplicates_nothing(tmp_path, stub):
    db = WorkerDatabase(tmp_path, demo=True)  # migrated, the demo gold pairs loaded
    try:
        _kill_and_resume(db, stub)
    finally:
        db.drop()


def _kill_and_resume(db: WorkerDatabase, stub) -> None:
    env = {**os.environ, "DATABASE_URL": db.url, "OPENAI_API_KEY": "sk-local", "PYTHONPATH": str(REPO)}
    env.pop("CELERY_BROKER_URL", None)
    stub.state.latency = 0.25
    worker = manage(
        env,
        "inject",
        "demo",
        "--directions",
        "en-de,en-zh",
        "--kind",
        "mqm",
        "--backend",
        "openai",
        "--base-url",
        stub.base_url,
        "--model",
        "gpt-4o",
        "--concurrency",
        "2",
        "--name",
        "killed",
    )
    total = 5 * 8
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if db.count("select count(*) from injection_candidate") >= 6:
            break
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)
    done_before = db.count("select count(*) from injection_candidate")
    assert 6 <= done_before < total, "the worker must die mid-run"
    saved = db.rows(
        "select s.reference, d.code, i.error_type, i.position from injection_injectionitem i "
        "join core_goldsegment s on s.id = i.segment_id join core_direction d on d.id = s.direction_id where i.status = 'done'"
    )
    assert db.count("select count(*) from injection_injectionitem where status='done'") == done_before
    run_id = db.count("select id from injection_injectionrun where name='killed'")
    assert db.rows(f"select status from injection_injectionrun where id={run_id}") == [("running",)]

    stub.state.latency = 0.0
    resumed = manage(env, "inject", "--resume", str(run_id))
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out
    assert re.search(rf"run {run_id} done: {total} done, 0 failed of {total}", out), out

    assert db.count("select count(*) from injection_candidate") == total
    assert (
        db.count(
            "select count(*) from (select distinct segment_id, kind, error_type, position from injection_candidate) as d"
        )
        == total
    )
    assert (
        db.count("select count(*) from injection_injectionitem where status='done' and candidate_id is not null")
        == total
    )
    # Every item was asked; work saved before the kill was never asked again. Only answers in flight or
    # not yet committed (services.COMMIT_EVERY_S) were asked twice.
    asked = collections.Counter(c.prompt for c in stub.state.calls)
    assert len(asked) == total
    for reference, direction, error_type, position in saved:
        marked = halves_markup(reference, direction.split("-")[1])
        prompts = [
            p
            for p in asked
            if marked in p and f"exactly one {error_type} error" in p and f"<{position}> half only" in p
        ]
        assert len(prompts) == 1 and asked[prompts[0]] == 1, (error_type, position)
    assert sum(n - 1 for n in asked.values()) <= total - done_before


def test_cancel_stops_a_running_worker_and_resume_finishes_it(tmp_path, stub):
    db = WorkerDatabase(tmp_path, suffix="cancel", demo=True)  # migrated, the demo gold pairs loaded
    worker = None
    try:
        env = {**os.environ, "DATABASE_URL": db.url, "OPENAI_API_KEY": "sk-local", "PYTHONPATH": str(REPO)}
        env.pop("CELERY_BROKER_URL", None)
        stub.state.latency = 0.25
        worker = manage(
            env,
            "inject",
            "demo",
            "--backend",
            "openai",
            "--base-url",
            stub.base_url,
            "--concurrency",
            "2",
            "--name",
            "cancelled",
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and db.count("select count(*) from injection_candidate") < 4:
            time.sleep(0.1)
        # From here on the stub answers no request within the time the worker is given to exit: a worker that
        # waited for its answers, or went on to the end of the run, never exits. Only the cancel ends it (no new
        # request once it is seen, those in flight dropped after llm_client.chat.CANCEL_GRACE_S), whatever the
        # machine's speed; a wall-clock limit on how soon it exits measured the load instead.
        stub.state.latency = SILENT_S
        # What the admin's Cancel button does (services.run_cancel), from another process.
        conn = db.connect()
        try:
            conn.execute("update injection_injectionrun set status = 'cancelled' where name = 'cancelled'")
            conn.commit()
        finally:
            conn.close()
        out, _ = worker.communicate(timeout=SILENT_S / 10)
        assert worker.returncode == 0, out
        assert "run" in out and "cancelled" in out
        done = db.count("select count(*) from injection_candidate")
        total = db.count("select total from injection_injectionrun where name = 'cancelled'")
        assert done < total and db.rows("select status from injection_injectionrun where name = 'cancelled'") == [
            ("cancelled",)
        ]
        assert db.count("select count(*) from injection_injectionitem where status = 'pending'") == total - done
        run_id = db.count("select id from injection_injectionrun where name = 'cancelled'")
        stub.state.latency = 0.0
        resumed = manage(env, "inject", "--resume", str(run_id))
        out, _ = resumed.communicate(timeout=300)
        assert resumed.returncode == 0 and f"run {run_id} done: {total} done, 0 failed of {total}" in out, out
        assert db.count("select count(*) from injection_candidate") == total
    finally:
        if worker is not None and worker.poll() is None:  # one that missed the cancel waits on the silent stub
            worker.kill()
            worker.wait()
        db.drop()
