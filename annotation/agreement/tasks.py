"""Celery task of the agreement stage, and the triggers that queue it (see ``annotation.agreement.refresh``).

Idempotent: a scope whose rows are unchanged is a cache hit. Tasks are entry points like views: this module
imports ``refresh`` (state and the run), never the reverse. The review and rating stages do not import
this module either: their services send ``annotation.signals.annotations_written``, and
``AnnotationConfig.ready()`` connects ``on_annotations_written`` here.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.core.cache import cache
from django.db import InterfaceError, OperationalError, transaction
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from annotation.agreement import refresh

logger = logging.getLogger(__name__)

# Faults that a later attempt can get past: the database or the Redis cache briefly unreachable, a lock
# or statement timeout. Anything else (a bug, a bad setting) fails at once.
TRANSIENT = (OperationalError, InterfaceError, RedisConnectionError, RedisTimeoutError)


@shared_task(name="annotation.refresh_agreement", bind=True, max_retries=5)
def refresh_agreement(self, project_id: int) -> dict:
    """Compute and cache the project's agreement report for every dashboard scope (see refresh).

    Retries and failures are recorded here rather than in on_retry/on_failure, which Celery skips when a
    task runs in-process with CELERY_TASK_EAGER_PROPAGATES (development): the state must be there too."""
    try:
        result = refresh.refresh_project(project_id)
    except TRANSIENT as exc:
        # In-process, a retry would only keep the waiting request longer: the next trigger runs it again.
        if self.request.is_eager or self.request.retries >= self.max_retries:
            refresh.record_failure(project_id, exc)
            raise
        refresh.record_retry(project_id, exc, self.request.retries + 1)
        countdown = get_exponential_backoff_interval(
            factor=2, retries=self.request.retries, maximum=120, full_jitter=True
        )
        raise self.retry(exc=exc, countdown=countdown) from exc
    except Exception as exc:
        refresh.record_failure(project_id, exc)
        raise
    return result.as_dict() if result else {"project": project_id, "missing": True}


# ---- triggers --------------------------------------------------------------------------------------


def request_refresh(project_id: int, *, countdown: int = 0) -> bool:
    """Queue one refresh of the project unless one is already queued. True when this call queued it.

    Without a broker (development) the task runs here, in-process; a failure is then recorded and logged,
    not raised, so a page that asked still renders."""
    if not refresh.claim_pending(project_id, countdown=countdown):
        return False
    try:
        refresh_agreement.apply_async((project_id,), countdown=countdown or None, queue=refresh.queue_name())
    except Exception as exc:
        if refresh_agreement.app.conf.task_always_eager:
            return True  # it ran here and failed; the task recorded and logged why
        refresh.release_pending(project_id, exc)
        return False
    return True


def refresh_agreement_queued() -> bool:
    """Whether a refresh goes to a worker queue (a broker is configured) rather than running in-process."""
    return not refresh_agreement.app.conf.task_always_eager


def page_missed(project_id: int) -> bool:
    """A page found no report of the current rows: queue a refresh now (someone is waiting), unless the
    last run failed less than a minute ago. True when one was queued (or, without a broker, has run)."""
    if not refresh.page_may_ask(project_id):
        return False
    return request_refresh(project_id)


def after_write(project_id: int) -> None:
    """Call inside the transaction that wrote decisions or ratings: after it commits, queue a refresh that
    runs ``delay_seconds()`` later, so a burst of writes is one computation. Nothing when the transaction
    rolls back.

    Without a broker a run would happen inside the annotator's submission, so only the submission that finishes
    the project's review runs it (in-process, once it commits): the project page then shows the agreement of the
    finished review without anyone opening the dashboard (#46.3). Other writes leave it to the dashboard's next
    view."""
    if refresh_agreement.app.conf.task_always_eager:
        # read inside the writing transaction (the counters already hold its writes): the commit runs it. Three
        # more queries a write, without a broker only (tests/annotation/review/test_query_budget.py counts a
        # submission as production runs it, with one)
        if refresh.review_finished(project_id):
            transaction.on_commit(lambda: refresh.safely(request_refresh, project_id))
        return
    transaction.on_commit(lambda: refresh.safely(request_refresh, project_id, countdown=refresh.delay_seconds()))


def on_annotations_written(sender, *, project_id: int, **kwargs) -> None:
    """Receiver of ``annotation.signals.annotations_written``."""
    after_write(project_id)


# ---- span agreement (#47) -------------------------------------------------------------------------------


@shared_task(name="annotation.refresh_span_agreement", bind=True, max_retries=5)
def refresh_span_agreement(self, task_id: int, languages: list[str] | None = None) -> dict:
    """Compute and cache one span task's agreement figures for one scope (idempotent: a cache hit when the
    annotations are unchanged); transient faults retried with backoff."""
    from annotation.agreement import selectors
    from annotation.models import SpanTask

    scope = frozenset(languages) if languages is not None else None
    try:
        task = SpanTask.objects.filter(pk=task_id).first()
        if task is None:
            return {"task": task_id, "missing": True}
        figures = selectors.span_agreement(task, scope)
    except TRANSIENT as exc:
        if self.request.is_eager or self.request.retries >= self.max_retries:
            raise
        countdown = get_exponential_backoff_interval(
            factor=2, retries=self.request.retries, maximum=120, full_jitter=True
        )
        raise self.retry(exc=exc, countdown=countdown) from exc
    finally:
        cache.delete(_span_pending_key(task_id, scope))
    return {"task": task_id, "directions": len(figures)}


def _span_pending_key(task_id: int, scope: frozenset[str] | None) -> str:
    return f"agreement:span-pending:{task_id}:{sorted(scope) if scope is not None else '*'}"


def span_page_missed(task_id: int, scope: frozenset[str] | None) -> bool:
    """A page found no span figures of the current annotations: queue one computation for the scope unless one
    is queued already (for 5 minutes at most). Without a broker it runs here; a failure is logged, not raised,
    so the page still answers. True when one was queued (or has run)."""
    if not cache.add(_span_pending_key(task_id, scope), 1, 300):
        return False
    languages = sorted(scope) if scope is not None else None
    try:
        refresh_span_agreement.apply_async((task_id, languages), queue=refresh.queue_name())
    except Exception:
        logger.exception("span agreement of task %s failed", task_id)
        cache.delete(_span_pending_key(task_id, scope))
    return True
