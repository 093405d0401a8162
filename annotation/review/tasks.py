"""Celery tasks of review and agreement. Idempotent: running one twice changes nothing the second time."""
from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.db import InterfaceError, OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from annotation.agreement import refresh as agreement_refresh
from annotation.review import services

# Faults that a later attempt can get past: the database or the Redis cache briefly unreachable, a lock
# or statement timeout. Anything else (a bug, a bad setting) fails at once.
TRANSIENT = (OperationalError, InterfaceError, RedisConnectionError, RedisTimeoutError)


@shared_task(name="annotation.release_expired_locks")
def release_expired_locks() -> int:
    """Delete expired review locks (they already no longer count; this keeps the lock table small)."""
    return services.release_expired_locks()


@shared_task(name="annotation.refresh_agreement", bind=True, max_retries=5)
def refresh_agreement(self, project_id: int) -> dict:
    """Compute and cache the project's agreement report for every dashboard scope (see agreement_refresh).

    Retries and failures are recorded here rather than in on_retry/on_failure, which Celery skips when a
    task runs in-process with CELERY_TASK_EAGER_PROPAGATES (development): the state must be there too."""
    try:
        result = agreement_refresh.refresh_project(project_id)
    except TRANSIENT as exc:
        # In-process, a retry would only keep the waiting request longer: the next trigger runs it again.
        if self.request.is_eager or self.request.retries >= self.max_retries:
            agreement_refresh.record_failure(project_id, exc)
            raise
        agreement_refresh.record_retry(project_id, exc, self.request.retries + 1)
        countdown = get_exponential_backoff_interval(factor=2, retries=self.request.retries, maximum=120, full_jitter=True)
        raise self.retry(exc=exc, countdown=countdown)
    except Exception as exc:
        agreement_refresh.record_failure(project_id, exc)
        raise
    return result.as_dict() if result else {"project": project_id, "missing": True}
