"""Keeping a project's agreement report computed ahead of the pages that show it.

At XQ-MEval scale the report takes seconds (bootstrap intervals for every table), so the dashboard never
computes it: the task ``annotation.refresh_agreement`` (queue ``default``) computes and caches it for every
scope the dashboard serves (``annotation.agreement.selectors.dashboard_scopes``), and the pages show what the cache
holds: the report of the current rows, else the last one computed (marked as of its time), else a
"being computed" state; either way they ask for a refresh. Downloads and ``manage.py agreement`` still
compute on a miss, through the same function, so every place shows the same numbers.

Triggers (``annotation.agreement.tasks``): decisions, adjudications and ratings (``after_write``, the
receiver of the ``annotations_written`` signal that the review and rating services send; it queues once
the transaction commits), a page that misses (``page_missed``; after a failure at most once a minute, as
waiting pages reload themselves), and ``manage.py agreement --prewarm`` (runs ``refresh_project`` in the
command). This module holds the state and the run; it never imports the task module.

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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from annotation.agreement import selectors as sel
from annotation.review import changes
from annotation.review import selectors as review_selectors
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


def review_finished(project_id: int) -> bool:
    """Whether every candidate of the project has left review (none pending): the moment its agreement is final."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return False
    statuses = review_selectors.candidate_statuses(project)
    return bool(statuses) and not any(by_status.get("pending") for by_status in statuses.values())


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


# ---- the pending mark (debounce) ----------------------------------------------------------------------


def claim_pending(project_id: int, *, countdown: int = 0) -> bool:
    """Mark a refresh of the project as queued unless one already is. True when this call marked it (and
    so must queue the run: ``annotation.agreement.tasks.request_refresh``)."""
    if not cache.add(_pending_key(project_id), timezone.now(), timeout=countdown + PENDING_GRACE_SECONDS):
        return False
    _update_status(project_id, state="queued", queued_at=timezone.now())
    return True


def release_pending(project_id: int, exc: BaseException) -> None:
    """The broker refused the message: free the mark so the next trigger tries again, and record why."""
    cache.delete(_pending_key(project_id))
    record_failure(project_id, exc)


def page_may_ask(project_id: int) -> bool:
    """A page that missed may ask for a refresh, unless the last run failed less than a minute ago."""
    state = status(project_id)
    return not (
        state.get("state") == "failed"
        and timezone.now() - state["last_error_at"] < timedelta(seconds=PAGE_RETRY_AFTER_FAILURE_SECONDS)
    )


def safely(fn: Callable, *args, **kwargs) -> None:
    """Run ``fn``; log, never raise, when it fails (a trigger must not break the write that fired it)."""
    _safely(fn, *args, **kwargs)


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


def refresh_project(
    project_id: int, *, progress: Callable[[sel.Scope, bool], None] | None = None
) -> RefreshResult | None:
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
    # The change log's token, read before the rows (a write from now on makes what this run stores stale);
    # the log's older rows for the project are no longer needed by any token.
    changes.prune(project_id)
    token = changes.token(project_id)
    computed, hits = sel.warm_reports(project, scopes, progress, token=token)
    # the review admin page's figures over every decision (per-annotator statistics, disagreements): above
    # a size the page shows what this run computed rather than a pass over the decisions per view
    review_selectors.compute_decision_figures(project, token=token)
    result = RefreshResult(project_id, len(scopes), computed, hits, round(time.monotonic() - started, 3))
    _update_status(
        project_id, state="done", last_success_at=timezone.now(), computed=computed, hits=hits, seconds=result.seconds
    )
    logger.info(
        "agreement refresh of project %s (%s): %d scope(s), %d computed, %d cached, %.1f s",
        project_id,
        project.name,
        result.scopes,
        computed,
        hits,
        result.seconds,
    )
    return result
