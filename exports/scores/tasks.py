"""Celery side of the scoring stage: sending one task per (metric, direction) to the scoring workers, and
the ``collect_scores`` task that ingests what they write.

Scoring tasks run on separate workers (``celery -A scoring.worker``, the Django-free ``scoring`` package in
its own virtualenv), so they are sent by name (``app.send_task``), with the app taken from
``celery.current_app`` rather than imported from ``xqmeval.celery``. Routing is by resource: metrics that
need a GPU go to queue ``gpu``, the rest to ``scoring`` (which GPU and CPU workers both consume). Each one
carries ``collect_scores`` as its callback (success or failure), queued on ``default`` for a platform
worker: finished files are ingested there, never by a page view.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from celery import current_app, shared_task
from django.core.cache import cache
from django.db import transaction

from exports.models import Release, ScoringJob
from exports.scores import selectors, services
from exports.scores.domain import ScoringError
from exports.scores.selectors import task_id_for
from exports.workers.grants import JobScope, job_token_issue
from scoring.api import TASK_NAME, queue_for

COLLECT_QUEUE = "default"
COLLECT_RETRIES = 10  # a callback may arrive just before the worker stores its result: look again
COLLECT_RETRY_SECONDS = 3
COLLECT_PENDING_SECONDS = 30  # a page asks at most this often while its collect_scores waits on the queue


def _collect_key(release_id: int) -> str:
    return f"scores:collect-pending:{release_id}"


@shared_task(name="exports.scoring_jobs.collect_scores", bind=True, max_retries=COLLECT_RETRIES)
def collect_scores(self, release_id: int, job_id: int | None = None) -> dict:
    """Sync job states and ingest the finished files of one release (default queue). With ``job_id`` (the
    job whose task just ended), look again shortly while the backend does not show that task finished."""
    cache.delete(_collect_key(release_id))  # a job ending from now on asks again
    release = Release.objects.filter(pk=release_id).first()
    if release is None:
        return {"release": release_id, "missing": True}
    states = services.jobs_sync(release=release, app=current_app)
    waiting = [
        s
        for s in states
        if s.job.pk == job_id and s.job.status in (ScoringJob.Status.PENDING, ScoringJob.Status.RUNNING)
    ]
    if waiting and not self.request.is_eager and self.request.retries < self.max_retries:
        raise self.retry(countdown=COLLECT_RETRY_SECONDS)
    counts: dict[str, int] = defaultdict(int)
    for s in states:
        counts[s.job.status] += 1
    return dict(counts)


NO_WORKER = (
    "without a broker this process scores the string metrics and the LLM judges itself; the other metrics run on "
    "scoring workers: set CELERY_BROKER_URL (and CELERY_RESULT_BACKEND) and start a scoring worker as "
    "docs/operations.md says"
)


@shared_task(name="exports.scoring_jobs.score_in_process")
def score_in_process(release_id: int, jobs: list[tuple[int, str]], options: dict[str, dict]) -> dict:
    """No broker: score the jobs here, one after another (``jobs``: job id and metric; ``options``: metric name ->
    its task options), and ingest each part as it is written. Idempotent: a part already scored with the same
    input and signature is not scored again (``scoring.runner``)."""
    counts: dict[str, int] = defaultdict(int)
    by_id = ScoringJob.objects.select_related("release", "direction").in_bulk([pk for pk, _ in jobs])
    for pk, metric in jobs:
        job = by_id.get(pk)
        if job is None or job.release_id != release_id:
            continue
        counts[services.job_run_here(job=job, options=options.get(metric)).status] += 1
    return dict(counts)


def worker_configured() -> bool:
    """Whether scoring tasks can reach a worker queue (a broker is configured)."""
    return selectors.worker_reachable(current_app)


def start_scoring(
    *,
    release: Release,
    metrics: list[str],
    directions: list[str] | None = None,
    options: dict[str, Any] | None = None,
    force: bool = False,
    metric_options: dict[str, dict[str, Any]] | None = None,
) -> list[ScoringJob]:
    """Queue one task per (metric, direction). Jobs done (or already queued) are left alone unless ``force``.
    ``options`` go to every task; ``metric_options`` (metric name -> scorer options) only to that metric's."""
    app = current_app
    here = not worker_configured()
    if here and (refused := services.scoring_check_in_process(metrics=metrics)):
        raise ScoringError(f"{', '.join(refused)}: {NO_WORKER}")
    out = str(selectors.scores_dir(release)) if release.path else ""
    per_metric = services.task_options_make(metrics=metrics, options=options, metric_options=metric_options)
    hub = selectors.hub_copy(release)
    with transaction.atomic():
        jobs, to_send = services.scoring_prepare(release=release, metrics=metrics, directions=directions, force=force)
        if here:
            if to_send:  # in this process once the jobs are committed, as builds and injection runs are
                queued = [(job.pk, spec.name) for job, spec, _code in to_send]
                transaction.on_commit(lambda: score_in_process.delay(release.pk, queued, per_metric))
            return jobs

        def send() -> None:
            for job, spec, code in to_send:
                tid = task_id_for(job)
                app.AsyncResult(tid).forget()  # a re-run must not be read as the previous attempt's result
                collect = collect_scores.si(release.pk, job.pk).set(queue=COLLECT_QUEUE)
                app.send_task(
                    TASK_NAME,
                    kwargs={
                        "release_dir": release.path,  # a worker on the shared file system reads it here
                        "release_id": release.pk,  # one with only HTTP fetches it (scoring.transfer)
                        **hub,  # from the Hub when the release was pushed there
                        "metric": spec.name,
                        "direction": code,
                        "out_dir": out,
                        "options": per_metric[spec.name],
                        # what a worker with only HTTP may touch: this job's release, metric and direction
                        "job_token": job_token_issue(JobScope("scoring", release.pk, code, spec.name)),
                    },
                    queue=queue_for(spec.name),
                    task_id=tid,
                    link=collect,
                    link_error=collect,
                )

        if to_send:  # a repeated request (a double click) leaves the queued jobs alone and enqueues nothing
            transaction.on_commit(send)
    return jobs


def collect_uploaded(*, release_id: int, job_id: int) -> bool:
    """A worker uploaded a part of the job: queue ``collect_scores`` for a platform worker. Without a
    broker no scoring task can have run (``start_scoring`` refuses), so there is nothing to collect."""
    if not worker_configured():
        return False
    collect_scores.apply_async((release_id, job_id), queue=COLLECT_QUEUE)
    return True


def request_collect(*, release: Release, states: list) -> bool:
    """A page saw a job whose task has ended but whose file is not ingested yet (its callback may not have
    reached a platform worker): queue ``collect_scores`` once (debounced). Without a platform worker
    (tasks in-process) it runs here, as the agreement refresh does; the page itself writes nothing. True
    when one was queued (or has run)."""
    ended = [
        s
        for s in states
        if s.state in ("SUCCESS", "FAILURE") and s.job.status in (ScoringJob.Status.PENDING, ScoringJob.Status.RUNNING)
    ]
    if not ended or not cache.add(_collect_key(release.pk), True, timeout=COLLECT_PENDING_SECONDS):
        return False
    collect_scores.apply_async((release.pk,), queue=COLLECT_QUEUE)
    return True
