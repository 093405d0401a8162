"""A real Celery worker consuming the `llm` queue (Redis broker) executes a run queued by `inject --queue`."""

from __future__ import annotations

import os
import time

import pytest

from tests.conftest import REPO
from tests.support.celery_worker import celery_worker
from tests.support.worker_database import WorkerDatabase, manage

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_queued_run_is_executed_by_an_llm_worker(tmp_path, stub, redis_url):
    db = WorkerDatabase(tmp_path, suffix="llm", demo=True)
    env = {
        **os.environ,
        "DATABASE_URL": db.url,
        "OPENAI_API_KEY": "sk-local",
        "PYTHONPATH": str(REPO),
        "CELERY_BROKER_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
    }
    try:
        with celery_worker(env, tmp_path / "worker.log", queues="llm", name="llm"):
            queued = manage(
                env,
                "inject",
                "demo",
                "--directions",
                "en-de",
                "--backend",
                "openai",
                "--base-url",
                stub.base_url,
                "--model",
                "gpt-4o",
                "--types",
                "Addition,Untranslated",
                "--name",
                "queued",
                "--queue",
            )
            out, _ = queued.communicate(timeout=120)
            assert queued.returncode == 0 and "queued on 'llm'" in out, out
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and db.rows(
                "select status from injection_injectionrun where name='queued'"
            ) != [("done",)]:
                time.sleep(0.3)
            assert db.rows("select status, done, failed, total from injection_injectionrun where name='queued'") == [
                ("done", 12, 0, 12)
            ], (tmp_path / "worker.log").read_text()[-3000:]
            assert db.count("select count(*) from injection_candidate") == 12
            assert "injection.execute_run" in (tmp_path / "worker.log").read_text()
    finally:
        db.drop()
