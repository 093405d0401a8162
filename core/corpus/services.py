"""Write operations of the corpus stage: gold pairs imported into a project's direction, from rows already
read (``corpus_rows_import``), from an upload (``corpus_source_import``) or from a Hugging Face dataset.
Atomic and idempotent; every problem is named with its file and line, and nothing is written.

Corpus imports from the Hugging Face Hub are jobs (``core.models.CorpusImport``): recorded by the corpus
page, run by ``core.corpus.tasks`` (a worker, or in-process without a broker), never inside a request (#36.4).
Idempotent: the gold segments and the job's outcome are written in one transaction, so a job is done with
its counts or wrote nothing; a job taken again once done does nothing. One pending or running import per
project and direction (the project's row lock serialises starts; the constraint
``one_live_corpus_import_per_direction`` holds without it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from core import bulk
from core.corpus.domain import Columns, CorpusError, CorpusRow, HubUnreachable, hub_id_problem
from core.corpus.selectors import corpus_limits
from core.domain import bidi
from core.domain.language_id import language_mismatch
from core.domain.languages import parse_direction
from core.models import CorpusImport, Direction, GoldSegment, JobStatus, Project
from core.selectors import active_directions
from core.services import ImportRejected, direction_ensure

ID_LENGTH = GoldSegment._meta.get_field("external_id").max_length


@dataclass
class CorpusImportResult:
    created: int = 0
    unchanged: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def corpus_rows_import(
    *,
    project: Project,
    direction_code: str,
    rows: list[CorpusRow],
    source_name: str,
    known_direction: bool = False,
    check_language: bool = False,
) -> CorpusImportResult:
    """Import gold pairs atomically and idempotently.

    Re-importing the same rows changes nothing; a row whose id exists with different text is an error.
    Any error rejects the whole file: nothing is written (no Direction either: the direction is checked
    against the project before it is created). The site's forms pass ``known_direction`` (the direction
    must be one of the project's active directions: adding one is a deliberate act in the settings, so a
    typo cannot make one) and ``check_language`` (the references must read as the direction's target)."""
    _check_direction(project, direction_code, rows, source_name, known_direction, check_language)
    errors = [
        f"{row.location}: id {row.external_id[:40]!r}… is {len(row.external_id)} characters long, at most {ID_LENGTH} fit"
        for row in rows
        if len(row.external_id) > ID_LENGTH
    ]
    if errors:
        raise ImportRejected(source_name, errors)
    direction = Direction.objects.filter(code=direction_code).first()
    existing = _stored_segments(project, direction) if direction else {}
    to_create: list[GoldSegment] = []
    result = CorpusImportResult()
    for row in rows:
        old = existing.get(row.external_id)
        if old is None:
            to_create.append(
                GoldSegment(project=project, external_id=row.external_id, source=row.source, reference=row.reference)
            )
        elif old.source == row.source and old.reference == row.reference:
            result.unchanged += 1
        else:
            errors.append(
                f"{row.location}: id {row.external_id!r} already exists in {project.name}/{direction_code} with different text"
            )
    if errors:
        raise ImportRejected(source_name, errors)
    with transaction.atomic():
        direction = direction_ensure(code=direction_code)
        project.directions.add(direction)
        for segment in to_create:
            segment.direction = direction
        bulk.insert_objects(GoldSegment, to_create)
    result.created = len(to_create)
    result.warnings = _bidi_warnings(rows)
    return result


def _check_direction(
    project: Project, direction_code: str, rows: list[CorpusRow], source_name: str, known: bool, check_language: bool
) -> None:
    """Refuse a direction the rows cannot go to: not the project's (``known``: one of its active ones), references
    not in its target language (``check_language``), or another source language than the project's."""
    if known and not active_directions(project).filter(code=direction_code).exists():
        raise ImportRejected(
            source_name,
            [
                f"direction: {direction_code} is not an active direction of project {project.name}; "
                "add it in the project's settings first"
            ],
        )
    if check_language:
        _, target = parse_direction(direction_code)
        if problem := language_mismatch((row.reference for row in rows), target):
            raise ImportRejected(
                source_name,
                [
                    f"{problem}, so it was not imported into {direction_code}; choose the right direction, "
                    "or tick “the references are in another language on purpose”"
                ],
            )
    try:
        source, _ = parse_direction(direction_code)
    except ValueError as exc:
        raise ImportRejected(source_name, [f"--direction: {exc}"]) from None
    if source != project.source_language.code:
        raise ImportRejected(
            source_name,
            [
                f"--direction: {direction_code} does not start from project {project.name}'s source language {project.source_language.code}"
            ],
        )


def _stored_segments(project: Project, direction: Direction) -> dict[str, GoldSegment]:
    """The project's gold segments of ``direction`` by id (their texts only)."""
    return {
        seg.external_id: seg
        for seg in GoldSegment.objects.filter(project=project, direction=direction).only(
            "external_id", "source", "reference"
        )
    }


def _bidi_warnings(rows: list[CorpusRow]) -> list[str]:
    """Bidirectional marks kept in the texts (usual in right-to-left text), said per row and column."""
    return [
        f"{row.location}: {col} has bidirectional mark(s) {', '.join(found)} (kept; usual in right-to-left text)"
        for row in rows
        for col, text in (("source", row.source), ("reference", row.reference))
        if (found := bidi.controls(text, bidi.MARKS))
    ]


def corpus_segments_create(*, rows: list[dict]) -> list[int] | None:
    """Store gold pairs given as column dicts in bulk (``core.bulk``: COPY on PostgreSQL) for an import that
    checked them itself (the XQ-MEval release); their ids in order, or None where the backend cannot reserve them."""
    return bulk.insert_dicts_with_ids(GoldSegment, rows)


def corpus_source_read(
    *,
    columns,
    upload_name: str = "",
    data: bytes | None = None,
    hf_dataset: str = "",
    hf_config: str | None = None,
    hf_split: str = "test",
    hub_only: bool = True,
) -> tuple[str, list[CorpusRow]]:
    """Read and validate a corpus: uploaded bytes, or a Hugging Face dataset through ``datasets`` (a Hub id,
    each Hub call timed out after ``HF_HUB_TIMEOUT``; a local dataset directory only with ``hub_only`` off,
    the command line's). Shared by the upload form, the Hub import job and ``import_corpus``. Returns
    (source name, rows); ``CorpusError`` (``HubUnreachable`` when the Hub did not answer) lists every problem."""
    from django.conf import settings

    from core.corpus.domain import read_corpus, read_hf_dataset

    if hf_dataset:
        rows = read_hf_dataset(
            hf_dataset,
            hf_config or None,
            hf_split or "test",
            columns,
            hub_only=hub_only,
            timeout=settings.HF_HUB_TIMEOUT,
            limits=corpus_limits(),
        )
        return hf_dataset, rows
    return upload_name, read_corpus(data or b"", upload_name, columns, limits=corpus_limits())


def corpus_source_import(
    *,
    project: Project,
    direction_code: str,
    columns,
    upload_name: str = "",
    data: bytes | None = None,
    known_direction: bool = False,
    check_language: bool = False,
) -> tuple[str, CorpusImportResult]:
    """Read an uploaded corpus file and import it with ``corpus_rows_import``: the same validation as the
    command; ``CorpusError`` or ``ImportRejected`` list every problem with its file and line, and nothing is
    written. Returns (source name, result). A Hub dataset is imported by a job (``hub_import_queue``), never
    inside a request."""
    name, rows = corpus_source_read(columns=columns, upload_name=upload_name, data=data)
    return name, corpus_rows_import(
        project=project,
        direction_code=direction_code,
        rows=rows,
        source_name=name,
        known_direction=known_direction,
        check_language=check_language,
    )


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


def corpus_import_queue(
    *,
    project: Project,
    direction_code: str,
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
    target = next((d for d in active_directions(project) if d.code == direction_code), None)
    if target is None:
        problems.append(f"direction: {direction_code!r} is not one of {project.name}'s active directions")
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


def corpus_import_requeue(*, job: CorpusImport) -> CorpusImport:
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


def corpus_import_run(*, job_id: int, owner: str) -> Outcome:
    """Run one recorded import in this process: read the dataset from the Hub (each call with
    ``HF_HUB_TIMEOUT``), validate it as an upload is validated, write the gold segments and the outcome in
    one transaction. A dataset that cannot be imported fails the job with every problem; an unreachable Hub
    fails it with the reason and raises ``HubUnreachable`` for the task to try again later."""
    job = _take(job_id, owner)
    if job is None:
        return Outcome(CorpusImport.objects.select_related("project", "direction").get(pk=job_id), ran=False)
    columns = Columns(**job.columns) if job.columns else Columns()
    try:
        name, rows = corpus_source_read(
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
            result = corpus_rows_import(
                project=job.project,
                direction_code=job.direction.code,
                rows=rows,
                source_name=name,
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


def corpus_import_retry_record(*, job_id: int, exc: Exception, attempt: int, of: int, countdown: float) -> None:
    """An import whose Hub did not answer, tried again in ``countdown`` seconds: pending again, with why."""
    from core.task_retry import retry_note

    reason = exc.errors[0] if isinstance(exc, CorpusError) and exc.errors else f"{type(exc).__name__}: {exc}"
    CorpusImport.objects.filter(pk=job_id).exclude(status=JobStatus.DONE).update(
        status=JobStatus.PENDING,
        note=retry_note(reason, attempt=attempt, of=of, countdown=countdown)[:500],
        lease_expires_at=timezone.now() + timedelta(seconds=countdown + settings.CORPUS_IMPORT_LEASE_SECONDS),
    )
