"""Celery tasks of the benchmark stage (queue ``default``), and the function that starts one.

Idempotent: a build only rewrites changed gold pairs. Transient database faults are retried with backoff;
failures are recorded on the build with their reason. Tasks are entry points like views: this module
imports the services, never the reverse."""
from __future__ import annotations

from celery import shared_task
from django.db import OperationalError, transaction

from core.models import Project
from exports.benchmark import services
from exports.models import BenchmarkBuild

RETRY = dict(autoretry_for=(OperationalError,), retry_backoff=True, retry_backoff_max=60, max_retries=3)


@shared_task(name="exports.build_benchmark", **RETRY)
def build_benchmark_task(build_id: int, force: bool = False) -> dict:
    build = BenchmarkBuild.objects.select_related("project").get(pk=build_id)
    services.run_build(build, force=force)
    return {"build": build.pk, "status": build.status, "pseudo_created": build.pseudo_created}


def start_build(*, project: Project, user=None, force: bool = False) -> BenchmarkBuild:
    """Record a build and hand it to the worker once the transaction commits (in-process without a broker)."""
    build = services.create_build(project=project, user=user)
    transaction.on_commit(lambda: build_benchmark_task.delay(build.pk, force))
    return build
