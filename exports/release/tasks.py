"""Celery tasks of the release stage (queue ``default``), and the functions that start them.

Idempotent: a release regenerates the same bytes or is refused; a push skips files already on the Hub and
a commit already tagged. Transient database faults are retried with backoff; failures are recorded on the
release with their reason. Tasks are entry points like views: this module imports the services, never the
reverse. With RELEASE_WORKERS=http the direction tasks go to queue ``release``, to release workers that share
only the broker and HTTP with the platform (``release_direction_remote_task``, ``exports.release.transfer``)."""

from __future__ import annotations

from functools import partial

from celery import chord, group, shared_task
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import OperationalError, transaction

from core.models import Project
from core.task_retry import retry_note, retry_with_reason
from exports.benchmark.tasks import DIRECTION_RETRIES, RETRY
from exports.models import Release
from exports.release import services, transfer
from exports.workers.grants import JobScope, job_token_issue
from worker_client import backoff, is_transient


@shared_task(name="exports.create_release", bind=True, **RETRY)
def create_release_task(
    self,
    project_id: int,
    version: str,
    formats: list[str] | None = None,
    push_repo: str = "",
    private: bool = True,
    user_id: int | None = None,
) -> dict:
    """Start a release: a new (or failed, or interrupted) version is a chord, one ``release_direction_task``
    per direction left to stage (side by side on the workers), then ``finish_release_task``, which hashes,
    draws the pseudo systems and moves the release into place (and pushes it when asked). Run again, it
    resumes with the directions not staged or whose build changed. A released version is written again
    in one pass (same bytes or refused). The release's lease is this task's: its automatic retry after a
    transient database fault (same task id) takes it over instead of finding it held."""
    project = Project.objects.get(pk=project_id)
    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    existing = Release.objects.filter(project=project, version=version, status=Release.Status.READY).first()
    if existing is not None:
        release = services.release_create(project=project, version=version, formats=tuple(formats or ()), user=user)
        if push_repo:
            release = services.release_push(release=release, repo_id=push_repo, private=private)
        return {"release": release.pk, "content_hash": release.content_hash, "hub_revision": release.hub_revision}
    job = services.release_begin(
        project=project, version=version, formats=tuple(formats or ()), user=user, owner=self.request.id or ""
    ).to_dict()
    if settings.RELEASE_WORKERS == "http" and job["todo"]:
        services.release_job_record(job=services.ReleaseJob.from_dict(job))  # what the workers' uploads must match
    finish = finish_release_task.si(job, push_repo, private)
    result = (
        chord(group(_direction_signature(job, code) for code in job["todo"]), finish) if job["todo"] else finish
    ).apply_async()
    if result.ready():  # ran in this process (no broker): the release is written
        result.get(propagate=True, disable_sync_subtasks=False)
    release = Release.objects.get(pk=job["release_id"])
    return {
        "release": release.pk,
        "status": release.status,
        "content_hash": release.content_hash,
        "hub_revision": release.hub_revision,
    }


@shared_task(name="exports.release_direction", bind=True, max_retries=DIRECTION_RETRIES)
def release_direction_task(self, job: dict, direction: str) -> dict:
    # `direction` is a code ("en-de"); the task's keyword keeps its name, as queued messages carry it
    return _stage_shared(self, job, direction)


def _stage_shared(self, job: dict, direction_code: str) -> dict:
    release_job = services.ReleaseJob.from_dict(job)
    try:
        return {
            "direction": direction_code,
            **services.release_direction_run(job=release_job, direction_code=direction_code),
        }
    except OperationalError as exc:
        retry_with_reason(
            self,
            exc,
            partial(services.release_retry_record, job=release_job, direction_code=direction_code),
            maximum=60,
        )


def _direction_signature(job: dict, direction_code: str):
    """The task that stages ``direction``: on the platform's workers (the shared file system, the default), or
    with RELEASE_WORKERS=http on queue ``release``, whose workers need only the broker and HTTP."""
    if settings.RELEASE_WORKERS == "http":  # the worker's job token opens this direction of this release only
        token = job_token_issue(JobScope("release", int(job["release_id"]), direction_code))
        return release_direction_remote_task.si(job, direction_code, token)
    return release_direction_task.si(job, direction_code)


@shared_task(name="exports.release_direction_remote", bind=True, max_retries=DIRECTION_RETRIES)
def release_direction_remote_task(self, job: dict, direction: str, job_token: str = "") -> dict:
    """Stage one direction on a release worker (queue ``release``). With ``XQMEVAL_PLATFORM_URL`` and a worker
    token in its environment it touches neither the database nor the platform's files: it reads the rows
    over HTTP, writes the direction on its own disk (``XQMEVAL_WORKER_DATA``) and uploads it
    (``exports.release.transfer``); the platform records it. Without them it is ``release_direction_task``:
    a worker on the shared file system, with the database. A network fault or a platform 5xx is retried
    with backoff (said on the release page); any other failure is reported to the platform, which fails
    the release naming the direction, as on the shared file system. ``job_token``: what the platform
    lets this task touch (``exports.workers.grants``), sent with each of its requests."""
    direction_code = direction  # a code; the task's keyword stays `direction`, as queued messages carry it
    platform = transfer.ReleasePlatform.from_env()
    if platform is None:
        return _stage_shared(self, job, direction_code)
    release_id = int(job["release_id"])
    try:
        return {
            "direction": direction_code,
            **transfer.direction_stage(
                platform, release_id=release_id, direction_code=direction_code, job_token=job_token
            ),
        }
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        if is_transient(exc) and not self.request.is_eager and self.request.retries < self.max_retries:
            countdown = round(backoff(self.request.retries, base=2, maximum=60))
            note = retry_note(reason, attempt=self.request.retries + 1, of=self.max_retries, countdown=countdown)
            platform.direction_report(release_id, direction_code, status="retrying", error=note, job_token=job_token)
            raise self.retry(exc=exc, countdown=countdown) from None
        platform.direction_report(release_id, direction_code, status="failed", error=reason, job_token=job_token)
        raise


@shared_task(name="exports.finish_release", **RETRY)
def finish_release_task(job: dict, push_repo: str = "", private: bool = True) -> dict:
    release = services.release_finish(job=services.ReleaseJob.from_dict(job))
    if push_repo:
        push_release_task.delay(release.pk, push_repo, private)
    return {"release": release.pk, "status": release.status, "content_hash": release.content_hash}


@shared_task(name="exports.push_release", bind=True, max_retries=3)
def push_release_task(self, release_id: int, repo_id: str, private: bool = True) -> dict:
    release = Release.objects.select_related("project").get(pk=release_id)
    try:
        release = services.release_push(release=release, repo_id=repo_id, private=private)
    except services.HubPushError as exc:
        if not exc.transient:
            raise  # bad request, refused by the Hub: recorded on the release; retrying cannot help
        # network fault or Hub 5xx: retry with backoff; the push resumes where it stopped
        raise self.retry(exc=exc, countdown=min(300, 10 * 2**self.request.retries)) from exc
    except services.ReleaseError as exc:
        services.push_refusal_record(release=release, reason=str(exc))
        raise  # a request the worker cannot carry out: retrying cannot help
    return {"release": release.pk, "hub_revision": release.hub_revision}


def start_release(
    *, project: Project, version: str, formats=(), push_repo: str = "", private: bool = True, user=None
) -> None:
    """Validate a release request from the UI and hand it to the worker; the Release row shows progress."""
    services.release_request_check(project=project, version=version, push_repo=push_repo, formats=formats)
    services.release_check_not_running(project=project)  # a second start shows the running one
    user_id = user.pk if getattr(user, "pk", None) else None
    transaction.on_commit(
        lambda: create_release_task.delay(project.pk, version, list(formats), push_repo, private, user_id)
    )


def push_outcome(release: Release, repo_id: str) -> tuple[int, str]:
    """(message level, text) for a push just started: without a broker it has already run in the request."""
    from django.contrib import messages

    from exports.benchmark.tasks import queued

    release.refresh_from_db()
    if not queued() and release.push_status == Release.PushStatus.DONE:
        return messages.SUCCESS, f"Release {release.version} pushed to {repo_id} (revision {release.hub_revision})."
    return messages.INFO, f"Push of {release.version} to {repo_id} started."


def start_push(*, release: Release, repo_id: str, private: bool = True) -> None:
    """Validate a push request from the UI, mark the release, and hand the push to the worker."""
    services.push_prepare(release=release, repo_id=repo_id)
    transaction.on_commit(lambda: push_release_task.delay(release.pk, repo_id, private))
