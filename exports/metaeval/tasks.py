"""Celery task of the meta-evaluation stage, and the function that queues it: the project page's headline
(tau per direction, system-level tau, cross-lingual CV) of one metric on a release, computed by a worker
into the cache (``exports.metaeval.selectors.compute_headline``); pages only read it."""

from __future__ import annotations

from celery import shared_task
from django.core.cache import cache

from exports.benchmark.tasks import RETRY
from exports.metaeval import selectors
from exports.models import Release


@shared_task(name="exports.metaeval_headline", **RETRY)
def metaeval_headline_task(release_id: int, metric: str) -> dict:
    """The project page's meta-evaluation headline of one metric on a release, into the cache."""
    return selectors.compute_headline(Release.objects.get(pk=release_id), metric)


def request_headline(release: Release, metric: str) -> None:
    """Queue the headline's computation once (a pending key debounces repeated page views)."""
    key = selectors.headline_key(release, metric)
    if cache.add(f"{key}:pending", True, timeout=selectors.HEADLINE_PENDING_SECONDS):
        metaeval_headline_task.delay(release.pk, metric)


@shared_task(name="exports.metaeval_result", **RETRY)
def metaeval_result_task(release_id: int, metric: str, variant: str, directions: list[str] | None) -> None:
    """The meta-evaluation page's result of one metric, variant and scope, into the cache."""
    selectors.compute_meta_evaluation(Release.objects.get(pk=release_id), metric, variant, directions)


def request_result(release: Release, metric: str, variant: str, directions: list[str] | None) -> None:
    """Queue the page's computation once per key (page views while it runs find the pending key)."""
    key = selectors.result_key(release, metric, variant, directions)
    if cache.add(f"{key}:pending", True, timeout=selectors.RESULT_PENDING_SECONDS):
        metaeval_result_task.delay(release.pk, metric, variant, directions)


def queued() -> bool:
    """Whether tasks go to a worker (a broker is configured) rather than run in-process."""
    return not metaeval_result_task.app.conf.task_always_eager


@shared_task(name="exports.metaeval_taskset", **RETRY)
def metaeval_taskset_task(release_id: int, metrics: list[str], directions: list[str] | None) -> None:
    """The diagnostics page's WMT24 task-set table of these metrics and directions, into the cache."""
    from exports.metaeval import taskset_selectors

    taskset_selectors.compute_task_set(Release.objects.get(pk=release_id), metrics, directions)


def request_task_set(release: Release, metrics: list[str], directions: list[str] | None) -> None:
    """Queue the table's computation once per key (page views while it runs find the pending key)."""
    from exports.metaeval import taskset_selectors

    key = taskset_selectors.taskset_key(
        release, metrics, taskset_selectors.PAGE_TASK_SET, taskset_selectors.PAGE_K, directions
    )
    if cache.add(f"{key}:pending", True, timeout=taskset_selectors.TASKSET_PENDING_SECONDS):
        metaeval_taskset_task.delay(release.pk, metrics, directions)
