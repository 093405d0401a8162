"""The run task retries a transient database fault with backoff on a real worker (Redis broker), and the
retry resumes the run with its pending items: no candidate twice."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from injection import services
from injection.models import Candidate, InjectionRun
from tests.support.db_faults import table_held, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def test_a_lock_timeout_fails_the_attempt_and_the_worker_retries_the_run(segments, worker_queue, lock_timeout):
    from celery.contrib.testing.worker import start_worker

    from injection.tasks import execute_run_task
    from xqmeval.celery import app

    run = services.run_plan(
        spec=services.RunSpec(
            project=segments[0].project, kind="mqm", backend="rule", directions=["en-zh"], error_types=["Addition"]
        )
    )

    def waiting_on_candidates() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "select count(*) from pg_locks where relation = 'injection_candidate'::regclass and not granted"
            )
            return cursor.fetchone()[0] > 0

    # Another session holds the candidates table: the run's first results cannot be saved.
    with table_held("injection_candidate") as holder:
        with start_worker(
            app, pool="solo", perform_ping_check=False, queues=[worker_queue], loglevel="WARNING", shutdown_timeout=30
        ):
            execute_run_task.apply_async((run.pk,), queue=worker_queue)
            wait_until(waiting_on_candidates, "the run waiting for the lock")
            time.sleep(0.6)  # past the 300 ms lock timeout: the first attempt has failed
            holder.rollback()  # the lock goes; the retry (due within 2 s) saves the results
            wait_until(lambda: InjectionRun.objects.get(pk=run.pk).status == "done", "the retried run", timeout=60)
    run.refresh_from_db()
    assert (run.done, run.failed, run.total, run.error) == (4, 0, 4, "")
    assert Candidate.objects.filter(run=run).count() == 4


def test_a_retry_is_recorded_on_the_run_and_a_cancel_stands(segments):
    """What the page shows while the worker waits to retry: pending, the reason and when."""
    from django.db import OperationalError

    run = services.run_plan(
        spec=services.RunSpec(
            project=segments[0].project, kind="mqm", backend="rule", directions=["en-zh"], error_types=["Addition"]
        )
    )
    InjectionRun.objects.filter(pk=run.pk).update(
        status=InjectionRun.Status.FAILED, error="OperationalError: lock timeout"
    )
    services.retry_record(
        run_id=run.pk, exc=OperationalError("canceling statement due to lock timeout"), attempt=1, of=5, countdown=2
    )
    run.refresh_from_db()
    assert run.status == "pending" and "lock timeout" in run.error and "retrying in 2 s (retry 1 of 5)" in run.error
    services.run_cancel(run=run)
    services.retry_record(run_id=run.pk, exc=OperationalError("again"), attempt=2, of=5, countdown=4)
    run.refresh_from_db()
    assert run.status == "cancelled"
