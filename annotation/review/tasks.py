"""Celery task of the review stage. Idempotent: running it twice changes nothing the second time."""

from celery import shared_task

from annotation.review import services, tally


@shared_task(name="annotation.release_expired_locks")
def release_expired_locks() -> int:
    """Delete expired review locks (they already no longer count; this keeps the lock table small), and fold
    the review progress change log (readers fold it too, but only when they read)."""
    deleted = services.lock_clear_expired()
    if tally.available():
        tally.fold()
    return deleted
