"""Retrying a Celery task after a transient fault, the same way in every stage: jittered exponential backoff,
and a note on the job's page saying why and when it is tried again."""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from celery.utils.time import get_exponential_backoff_interval
from django.db import DatabaseError


def retry_note(reason: str, *, attempt: int, of: int, countdown: float) -> str:
    return f"{reason} — retrying in {countdown:.0f} s (retry {attempt} of {of})"


def retry_after_fault(task, exc: Exception, record: Callable[..., None], *, maximum: int) -> NoReturn:
    """Retry ``task`` after a transient fault (a lock or statement timeout, a deadlock, the database briefly
    away) in up to ``maximum`` seconds, once ``record(attempt=, of=, countdown=)`` has said so on its job.
    In-process (no broker), where a retry would only keep the request waiting, or out of tries, ``exc`` is
    raised and stays recorded as the failure."""
    if task.request.is_eager or task.request.retries >= task.max_retries:
        raise exc
    countdown = get_exponential_backoff_interval(
        factor=2, retries=task.request.retries, maximum=maximum, full_jitter=True
    )
    try:
        record(attempt=task.request.retries + 1, of=task.max_retries, countdown=countdown)
    except DatabaseError:
        pass  # the database is still away: the page keeps the failure until the retry records its outcome
    raise task.retry(exc=exc, countdown=countdown)


def retry_with_reason(task, exc: Exception, record: Callable[..., None], *, maximum: int) -> NoReturn:
    """``retry_after_fault`` for a job whose note is one text: ``record(reason=…)`` is given the fault and when
    it is tried again (``retry_note``)."""
    reason = f"{type(exc).__name__}: {exc}"
    retry_after_fault(task, exc, lambda **when: record(reason=retry_note(reason, **when)), maximum=maximum)
