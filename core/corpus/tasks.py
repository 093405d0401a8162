"""Celery task of the corpus stage (queue ``default``): a Hub corpus import recorded by the corpus page, and
the function that starts one. Thin over ``core.corpus.services`` (which never imports this module);
idempotent (a done import is not run again, a running one is not run twice)."""

from __future__ import annotations

from functools import partial

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction

from core.corpus import services
from core.corpus.domain import HubUnreachable
from core.models import CorpusImport
from core.task_retry import retry_after_fault

# Faults a later try can get past: the Hub not answering (network, timeout, 429/5xx), the database briefly
# away. A missing dataset, config or split, or a bad row, fails the import at once with every problem.
TRANSIENT = (HubUnreachable, OperationalError, InterfaceError)


@shared_task(name="core.import_hub_corpus", bind=True, acks_late=True, max_retries=settings.HF_IMPORT_RETRIES)
def import_hub_corpus_task(self, job_id: int) -> dict:
    try:
        outcome = services.corpus_import_run(job_id=job_id, owner=self.request.id or f"import-{job_id}")
    except TRANSIENT as exc:
        if self.request.is_eager and isinstance(exc, HubUnreachable):
            # in-process (no broker): the failure and its reason are recorded; the corpus page offers Retry
            return summary(CorpusImport.objects.get(pk=job_id))
        retry_after_fault(self, exc, partial(services.corpus_import_retry_record, job_id=job_id, exc=exc), maximum=300)
    return summary(outcome.job)


def summary(job: CorpusImport) -> dict:
    return {"import": job.pk, "status": job.status, "created": job.created, "unchanged": job.unchanged}


def queued() -> bool:
    """Whether imports go to a worker (a broker is configured) rather than run in-process, after the request
    that starts them has written its answer's job."""
    return not import_hub_corpus_task.app.conf.task_always_eager


def start_hub_import(project, *, user=None, **request) -> CorpusImport:
    """Record a Hub import (``services.queue_hub_import``) and hand it to the worker once the transaction
    commits."""
    job = services.corpus_import_queue(project=project, user=user, **request)
    transaction.on_commit(lambda: import_hub_corpus_task.delay(job.pk))
    return job


def retry_hub_import(job: CorpusImport) -> CorpusImport:
    """Queue a failed or interrupted import again (the corpus page's Retry)."""
    job = services.corpus_import_requeue(job=job)
    transaction.on_commit(lambda: import_hub_corpus_task.delay(job.pk))
    return job
