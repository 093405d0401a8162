"""Corpus imports from the Hugging Face Hub as jobs (``core.models.CorpusImport``): recorded by the corpus
page, run by ``core.corpus.tasks`` (a worker, or in-process without a broker), never inside a request (#36.4).

Idempotent: the gold segments and the job's outcome are written in one transaction, so a job is done with
its counts or wrote nothing; a job taken again once done does nothing. One pending or running import per
project and direction (the project's row lock serialises starts; the constraint
``one_live_corpus_import_per_direction`` holds without it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.corpus.domain import Columns, CorpusError, HubUnreachable, hub_id_problem
from core.models import CorpusImport, JobStatus, Project
from core.selectors import active_directions
from core.services import ImportRejected, import_corpus_rows, read_corpus_source

INTERRUPTED = "interrupted: its process stopped before the import finished"


class CorpusImportRejected(ImportRejected):
    """A Hub import cannot be queued as asked (a bad dataset id, a direction not the project's)."""


class CorpusImportRunning(Exception):
    """An import into the project's direction is pending or running: it is not started twice."""

    def __init__(self, job: CorpusImport):
        super().__init__(
            f"an import of {job.dataset} into {job.direction.code} is already {job.status} "
            f"(import {job.pk}); nothing else was started"
        )
        self.job = job


def _lease_end():
    return timezone.now() + timedelta(seconds=settings.CORPUS_IMPORT_LEASE_SECONDS)


def _live(project: Project, direction_id: int) -> CorpusImport | None:
    return (
        CorpusImport.objects.select_related("project", "direction")
        .filter(project=project, direction_id=direction_id, status__in=CorpusImport.LIVE)
        .first()
    )


def _close_interrupted(job: CorpusImport) -> None:
    job.status, job.error, job.finished_at = JobStatus.FAILED, INTERRUPTED, timezone.now()
    job.lease_owner, job.lease_expires_at = "", None
    job.save(update_fields=["status", "error", "finished_at", "lease_owner", "lease_expires_at"])


def queue_hub_import(
    project: Project,
    *,
    direction: str,
    dataset: str,
    config: str = "",
    split: str = "test",
    columns: Columns | None = None,
    check_language: bool = True,
    user=None,
) -> CorpusImport:
    """Record a Hub import to run (``core.corpus.tasks.start_hub_import`` hands it to the worker). A live
    import of the direction raises ``CorpusImportRunning``; one whose process died is closed as failed
    (with the reason) and this one takes its place."""
    columns = columns or Columns()
    problems = [hub_id_problem(dataset)] if hub_id_problem(dataset) else []
    target = next((d for d in active_directions(project) if d.code == direction), None)
    if target is None:
        problems.append(f"direction: {direction!r} is not one of {project.name}'s active directions")
    if problems:
        raise CorpusImportRejected(dataset[:100], problems)
    try:
        with transaction.atomic():
            Project.objects.select_for_update().filter(pk=project.pk).exists()
            live = _live(project, target.pk)
            if live is not None:
                if not live.interrupted:
                    raise CorpusImportRunning(live)
                _close_interrupted(live)
            return CorpusImport.objects.create(
                project=project,
                direction=target,
                dataset=dataset,
                config=config or "",
                split=split or "test",
                columns={"id": columns.id, "source": columns.source, "reference": columns.reference},
                check_language=check_language,
                created_by=user if getattr(user, "pk", None) else None,
                lease_expires_at=_lease_end(),
            )
    except IntegrityError:  # a concurrent start won (the constraint, where the lock did not serialise)
        live = _live(project, target.pk)
        if live is None:
            raise
        raise CorpusImportRunning(live) from None


def requeue_hub_import(job: CorpusImport) -> CorpusImport:
    """Make a failed or interrupted import pending again (its page's Retry). Refused with
    ``CorpusImportRunning`` while it, or another import of its direction, is live."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=job.project_id).exists()
        row = CorpusImport.objects.select_related("project", "direction").get(pk=job.pk)
        if row.status == JobStatus.DONE:
            raise CorpusImportRejected(row.dataset, [f"import {row.pk} is done: there is nothing to retry"])
        live = _live(row.project, row.direction_id)
        if live is not None and not live.interrupted:
            raise CorpusImportRunning(live)
        if live is not None and live.pk != row.pk:
            _close_interrupted(live)
        row.status, row.error, row.note, row.finished_at = JobStatus.PENDING, "", "", None
        row.lease_owner, row.lease_expires_at = "", _lease_end()
        row.save(update_fields=["status", "error", "note", "finished_at", "lease_owner", "lease_expires_at"])
        return row


def _take(job_id: int, owner: str) -> CorpusImport | None:
    """Mark the import running under ``owner`` (the task's id), or None when it is not this process's to
    run: finished, or running under another task's live lease (a duplicate does nothing). The same task
    again (its retry, or the broker's redelivery after its worker died: same id) takes its own lease over."""
    now = timezone.now()
    lapsed = Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now)
    may_take = Q(status=JobStatus.PENDING) | Q(status=JobStatus.RUNNING) & (lapsed | Q(lease_owner=owner))
    taken = CorpusImport.objects.filter(may_take, pk=job_id).update(
        status=JobStatus.RUNNING,
        lease_owner=owner,
        lease_expires_at=now + timedelta(seconds=settings.CORPUS_IMPORT_LEASE_SECONDS),
        started_at=now,
        attempts=F("attempts") + 1,
    )
    if not taken:
        return None
    return CorpusImport.objects.select_related("project", "direction").get(pk=job_id)


@dataclass(frozen=True)
class Outcome:
    job: CorpusImport
    ran: bool  # False: not this process's to run (finished, or another process holds it)


def _finish(job: CorpusImport, status: str, *, error: str = "", **fields) -> None:
    job.status, job.error, job.finished_at = status, error, timezone.now()
    job.lease_owner, job.lease_expires_at = "", None
    for name, value in fields.items():
        setattr(job, name, value)
    job.save(update_fields=["status", "error", "finished_at", "lease_owner", "lease_expires_at", "note", *fields])


def run_hub_import(job_id: int, *, owner: str) -> Outcome:
    """Run one recorded import in this process: read the dataset from the Hub (each call with
    ``HF_HUB_TIMEOUT``), validate it as an upload is validated, write the gold segments and the outcome in
    one transaction. A dataset that cannot be imported fails the job with every problem; an unreachable Hub
    fails it with the reason and raises ``HubUnreachable`` for the task to try again later."""
    job = _take(job_id, owner)
    if job is None:
        return Outcome(CorpusImport.objects.select_related("project", "direction").get(pk=job_id), ran=False)
    columns = Columns(**job.columns) if job.columns else Columns()
    try:
        name, rows = read_corpus_source(
            hf_dataset=job.dataset, hf_config=job.config or None, hf_split=job.split, columns=columns
        )
    except HubUnreachable as exc:
        _finish(job, JobStatus.FAILED, error="\n".join(exc.errors), note="")
        raise
    except CorpusError as exc:
        _finish(job, JobStatus.FAILED, error="\n".join(exc.errors), note="")
        return Outcome(job, ran=True)
    try:
        with transaction.atomic():
            result = import_corpus_rows(
                job.project,
                job.direction.code,
                rows,
                name,
                known_direction=True,
                check_language=job.check_language,
            )
            _finish(
                job,
                JobStatus.DONE,
                created=result.created,
                unchanged=result.unchanged,
                warnings=result.warnings,
                note="",
            )
    except ImportRejected as exc:
        _finish(job, JobStatus.FAILED, error="\n".join(exc.errors), note="")
    return Outcome(job, ran=True)


def record_retry(job_id: int, exc: Exception, *, attempt: int, of: int, countdown: float) -> None:
    """An import whose Hub did not answer, tried again in ``countdown`` seconds: pending again, with why."""
    from core.task_retry import retry_note

    reason = exc.errors[0] if isinstance(exc, CorpusError) and exc.errors else f"{type(exc).__name__}: {exc}"
    CorpusImport.objects.filter(pk=job_id).exclude(status=JobStatus.DONE).update(
        status=JobStatus.PENDING,
        note=retry_note(reason, attempt=attempt, of=of, countdown=countdown)[:500],
        lease_expires_at=timezone.now() + timedelta(seconds=countdown + settings.CORPUS_IMPORT_LEASE_SECONDS),
    )
