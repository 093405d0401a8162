"""Keeping a project's agreement report computed ahead of the pages that show it.

At XQ-MEval scale the report takes seconds (bootstrap intervals for every table), so the dashboard never
computes it: the task ``annotation.refresh_agreement`` (queue ``default``) computes and caches it for every
scope the dashboard serves (``agreement_selectors.dashboard_scopes``), and the pages show what the cache
holds: the report of the current rows, else the last one computed (marked as of its time), else a
"being computed" state; either way they ask for a refresh. Downloads and ``manage.py agreement`` still
compute on a miss, through the same function, so every place shows the same numbers.

Triggers: decisions, adjudications and ratings (``after_write``, from the services, once the transaction
commits), a page that misses (``page_missed``; after a failure at most once a minute, as waiting pages
reload themselves), and ``manage.py agreement --prewarm`` (runs ``refresh_project`` in the command).

Debounce: ``cache.add`` of a per-project pending key: the first trigger queues the task, the others find
the key and do nothing. The task deletes the key when it starts, before it reads the rows, so a change
made after that queues the next run and no change is left out. Writes wait ``AGREEMENT_REFRESH_DELAY``
seconds (30) before the run, so a burst of submissions from many annotators costs one computation.

Runs are idempotent (a scope whose rows are unchanged is a cache hit) and their state per project
(queued, running, retrying, done, failed with its reason) is kept in the cache for the pages; failures
are also logged. Transient faults (database, Redis) are retried with exponential backoff by the task.
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Callable

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from annotation import agreement_selectors as sel
from core.models import Project

logger = logging.getLogger(__name__)

STATUS_SECONDS = 30 * 24 * 3600
# How long a queued run may wait on a busy queue before another trigger may queue a second one (which is
# harmless: it finds the cache filled).
PENDING_GRACE_SECONDS = 600
# Pages reload themselves while they wait; after a failed run they ask again at most this often.
PAGE_RETRY_AFTER_FAILURE_SECONDS = 60


def delay_seconds() -> int:
    return int(getattr(settings, "AGREEMENT_REFRESH_DELAY", 30))


def queue_name() -> str:
    return getattr(settings, "AGREEMENT_QUEUE", "default")


def _pending_key(project_id: int) -> str:
    return f"agreement:refresh-pending:{project_id}"


def _status_key(project_id: int) -> str:
    return f"agreement:refresh-status:{project_id}"


# ---- state -----------------------------------------------------------------------------------------


def status(project_id: int) -> dict:
    """The project's refresh state: ``state`` (queued | running | retrying | done | failed), ``updated_at``,
    and where known ``last_success_at``, ``computed``, ``hits``, ``seconds``, ``last_error``,
    ``last_error_at``. Empty when nothing was ever run."""
    return cache.get(_status_key(project_id)) or {}


def _update_status(project_id: int, **fields) -> None:
    # Read-modify-write without a lock: a lost update costs a stale label, never a number.
    current = status(project_id)
    current.update(fields, updated_at=timezone.now())
    cache.set(_status_key(project_id), current, timeout=STATUS_SECONDS)


def failing(state: dict) -> bool:
    """True when the last attempt failed after the last success."""
    error_at, success_at = state.get("last_error_at"), state.get("last_success_at")
    return error_at is not None and (success_at is None or error_at > success_at)


def record_retry(project_id: int, exc: BaseException, attempt: int) -> None:
    logger.warning("agreement refresh of project %s: transient fault, retry %d: %s", project_id, attempt, _reason(exc))
    _safely(_update_status, project_id, state="retrying", last_error=_reason(exc), last_error_at=timezone.now())


def record_failure(project_id: int, exc: BaseException) -> None:
    logger.error("agreement refresh of project %s failed: %s", project_id, _reason(exc), exc_info=exc)
    _safely(_update_status, project_id, state="failed", last_error=_reason(exc), last_error_at=timezone.now())


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()[:500]


def _safely(fn: Callable, *args, **kwargs) -> None:
    # Recording a failure must not hide it: when the cache itself is down, the log line above is the record.
    try:
        fn(*args, **kwargs)
    except Exception:
        logger.exception("could not record the agreement refresh state")


# ---- triggers --------------------------------------------------------------------------------------


def request_refresh(project_id: int, *, countdown: int = 0) -> bool:
    """Queue one refresh of the project unless one is already queued. True when this call queued it.

    Without a broker (development) the task runs here, in-process; a failure is then recorded and logged,
    not raised, so a page that asked still renders."""
    from annotation.tasks import refresh_agreement

    if not cache.add(_pending_key(project_id), timezone.now(), timeout=countdown + PENDING_GRACE_SECONDS):
        return False
    _update_status(project_id, state="queued", queued_at=timezone.now())
    try:
        refresh_agreement.apply_async((project_id,), countdown=countdown or None, queue=queue_name())
    except Exception as exc:
        if refresh_agreement.app.conf.task_always_eager:
            return True  # it ran here and failed; the task recorded and logged why
        # The broker refused the message: free the key so the next trigger tries again.
        cache.delete(_pending_key(project_id))
        record_failure(project_id, exc)
        return False
    return True


def refresh_agreement_queued() -> bool:
    """Whether a refresh goes to a worker queue (a broker is configured) rather than running in-process."""
    from annotation.tasks import refresh_agreement

    return not refresh_agreement.app.conf.task_always_eager


def page_missed(project_id: int) -> bool:
    """A page found no report of the current rows: queue a refresh now (someone is waiting), unless the
    last run failed less than a minute ago. True when one was queued (or, without a broker, has run)."""
    state = status(project_id)
    if state.get("state") == "failed" and timezone.now() - state["last_error_at"] < timedelta(seconds=PAGE_RETRY_AFTER_FAILURE_SECONDS):
        return False
    return request_refresh(project_id)


def after_write(project_id: int) -> None:
    """Call inside the transaction that wrote decisions or ratings: after it commits, queue a refresh that
    runs ``delay_seconds()`` later, so a burst of writes is one computation. Nothing when the transaction
    rolls back.

    Without a broker nothing is queued: the run would happen inside the annotator's submission; the
    dashboard asks for it on its next view instead."""
    from annotation.tasks import refresh_agreement

    if refresh_agreement.app.conf.task_always_eager:
        return
    transaction.on_commit(lambda: _safely(request_refresh, project_id, countdown=delay_seconds()))


# ---- the run ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefreshResult:
    project: int
    scopes: int
    computed: int
    hits: int
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def refresh_project(project_id: int, *, progress: Callable[[sel.Scope, bool], None] | None = None) -> RefreshResult | None:
    """Compute and cache the report of every dashboard scope of the project whose rows changed since it was
    last computed; a scope with unchanged rows is a cache hit. ``None`` when the project no longer exists."""
    # Before reading any row: a write from now on must queue another run, as this one may not see it.
    cache.delete(_pending_key(project_id))
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        logger.info("agreement refresh: project %s no longer exists; nothing to do", project_id)
        return None
    _update_status(project_id, state="running", started_at=timezone.now())
    started = time.monotonic()
    scopes = sel.dashboard_scopes(project)
    computed, hits = sel.warm_reports(project, scopes, progress)
    result = RefreshResult(project_id, len(scopes), computed, hits, round(time.monotonic() - started, 3))
    _update_status(project_id, state="done", last_success_at=timezone.now(), computed=computed, hits=hits, seconds=result.seconds)
    logger.info("agreement refresh of project %s (%s): %d scope(s), %d computed, %d cached, %.1f s",
                project_id, project.name, result.scopes, computed, hits, result.seconds)
    return result
