"""Celery tasks of the benchmark stage (queue ``default``), and the function that starts one.

Idempotent: a build only rewrites changed gold pairs. Transient database faults are retried with backoff;
failures are recorded on the build with their reason. Tasks are entry points like views: this module
imports the services, never the reverse."""

from __future__ import annotations

from functools import partial

from celery import chord, group, shared_task
from django.db import OperationalError, transaction

from core.models import FINISHED, JobStatus, Project
from core.task_retry import retry_with_reason
from exports.benchmark import services
from exports.models import BenchmarkBuild

RETRY = dict(autoretry_for=(OperationalError,), retry_backoff=True, retry_backoff_max=60, max_retries=3)
DIRECTION_RETRIES = 3


@shared_task(name="exports.build_benchmark", **RETRY)
def build_benchmark_task(build_id: int, force: bool = False) -> dict:
    """Start a recorded build: one task per direction left to merge (a chord over the workers), then
    ``finish_build_task``. Run again on an interrupted or failed build, it resumes with the directions not
    done; on a finished one, it runs all again (only changed gold pairs are rewritten)."""
    build = BenchmarkBuild.objects.select_related("project").get(pk=build_id)
    directions = services.build_begin(build=build)
    work = chord(
        group(build_direction_task.si(build_id, code, force) for code in directions), finish_build_task.si(build_id)
    )
    result = work.apply_async()
    if result.ready():  # ran in this process (no broker): the build is finished
        result.get(propagate=True, disable_sync_subtasks=False)  # already done: nothing to wait for
        build.refresh_from_db()
    return {"build": build.pk, "status": build.status, "pseudo_created": build.pseudo_created}


@shared_task(name="exports.build_direction", bind=True, max_retries=DIRECTION_RETRIES)
def build_direction_task(self, build_id: int, direction: str, force: bool = False) -> dict:
    direction_code = direction  # a code; the task's keyword stays `direction`, as queued messages carry it
    build = BenchmarkBuild.objects.select_related("project").get(pk=build_id)
    try:
        return {
            "build": build_id,
            "direction": direction_code,
            **services.build_direction_run(build=build, direction_code=direction_code, force=force),
        }
    except OperationalError as exc:
        retry_with_reason(
            self, exc, partial(services.build_retry_record, build=build, direction_code=direction_code), maximum=60
        )


@shared_task(name="exports.finish_build", **RETRY)
def finish_build_task(build_id: int) -> dict:
    build = services.build_finish(build=BenchmarkBuild.objects.select_related("project").get(pk=build_id))
    return {"build": build.pk, "status": build.status, "pseudo_created": build.pseudo_created}


def queued() -> bool:
    """Whether builds and releases go to a worker (a broker is configured) rather than run in-process, in
    the request that starts them."""
    return not build_benchmark_task.app.conf.task_always_eager


def build_outcome(build: BenchmarkBuild) -> tuple[int, str]:
    """(message level, text) for a build just started: without a broker it has already run in the request."""
    from django.contrib import messages

    build.refresh_from_db()
    if queued() or build.status not in FINISHED:
        return messages.INFO, f"Build {build.number} started."
    if build.status == JobStatus.DONE:
        return messages.SUCCESS, (
            f"Build {build.number} finished: {build.pseudo_created} pseudo translation(s) written, "
            f"{build.excluded} candidate(s) excluded."
        )
    return messages.ERROR, f"Build {build.number} {build.status}: {build.error}"


def start_build(
    *, project: Project, user=None, force: bool = False, acknowledged: list[str] | None = None
) -> BenchmarkBuild:
    """Record a build and hand it to the worker once the transaction commits (in-process without a broker)."""
    build = services.build_create(project=project, user=user, acknowledged=acknowledged)
    transaction.on_commit(lambda: build_benchmark_task.delay(build.pk, force))
    return build
