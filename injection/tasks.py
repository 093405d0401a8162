"""Celery tasks of the injection stage, and the function that starts one. Task names start with
``injection.``: settings route them to the ``llm`` queue. Thin over ``injection.services`` (which never
imports this module); idempotent (only pending items are generated)."""
from __future__ import annotations

from celery import shared_task
from django.db import transaction

from injection import services
from injection.models import InjectionRun


@shared_task(name="injection.execute_run", acks_late=True)
def execute_run_task(run_id: int) -> dict:
    run = services.execute_run(run_id)
    return {"run": run.pk, "status": run.status, "done": run.done, "failed": run.failed, "total": run.total}


def enqueue(*, run: InjectionRun) -> None:
    """Execute a run on the `llm` Celery queue once the surrounding transaction commits."""
    transaction.on_commit(lambda: execute_run_task.delay(run.pk))
