"""Celery tasks of the injection stage, and the function that starts one. Task names start with
``injection.``: settings route them to the ``llm`` queue. Thin over ``injection.services`` (which never
imports this module); idempotent (only pending items are generated)."""

from __future__ import annotations

from functools import partial

from celery import shared_task
from django.db import InterfaceError, OperationalError, transaction

from core.task_retry import retry_after_fault
from injection import services
from injection.models import InjectionRun

# Faults a later attempt can get past: the database briefly unreachable, a lock or statement timeout, a
# deadlock. The run resumes with its pending items (recording is exactly once). LLM faults are retried per
# request by llm_client; anything else (a bug, a missing key) fails the run at once.
TRANSIENT = (OperationalError, InterfaceError)
RUN_RETRIES = 5


@shared_task(name="injection.execute_run", bind=True, acks_late=True, max_retries=RUN_RETRIES)
def execute_run_task(self, run_id: int) -> dict:
    try:
        run = services.run_execute(run_id=run_id)
    except TRANSIENT as exc:
        # run_execute recorded the run failed with the reason; in-process (no broker) the run's page offers
        # to resume it.
        retry_after_fault(self, exc, partial(services.retry_record, run_id=run_id, exc=exc), maximum=120)
    return {"run": run.pk, "status": run.status, "done": run.done, "failed": run.failed, "total": run.total}


def queued() -> bool:
    """Whether runs go to a worker on queue `llm` (a broker is configured) rather than run in-process, in
    the request that starts them."""
    return not execute_run_task.app.conf.task_always_eager


def enqueue(*, run: InjectionRun) -> None:
    """Execute a run on the `llm` Celery queue once the surrounding transaction commits."""
    transaction.on_commit(lambda: execute_run_task.delay(run.pk))
