"""Write operations of the scoring stage: ScoringJob rows for the worker queues, and ingesting the parquet
files the workers write into MetricScore.

The workers run the Django-free ``scoring`` package in their own virtualenv (``scoring/worker.py``);
``exports.scores.tasks`` sends tasks to them by name, and this module never imports torch or Celery. Without a
broker, ``job_run_here`` runs a job through ``scoring.api.score_task`` in this process (sacrebleu, or an LLM
judge's endpoint, loaded there). A part file is checked by the pure ``exports.scores.domain`` before anything is written.

A job's Celery task id is derived from the job (``xqmeval-score-<job id>``), so its state and progress
can be read from the result backend at any time without storing anything else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Count, Sum

from core import bulk
from core.domain.records import fields_of
from core.models import Direction
from core.storage import WORKER_PARTS, ReleaseFiles, local_copy, storage_get
from exports.models import MetricScore, PartUpload, Release, ScoreSummary, ScoringJob
from exports.scores.domain import ScoringError, open_part
from exports.scores.selectors import JobState, backend_state, progress_key, scores_dir
from scoring.api import (
    Family,
    JudgeConfig,
    MetricError,
    MetricSpec,
    get_metric,
    part_path,
    route_options,
    score_task,
)


def release_directions_list(*, release: Release) -> list[str]:
    """The directions of the release's files (a ``test.parquet`` per direction folder), read through the
    ``releases`` storage (``core.storage``)."""
    files = ReleaseFiles.for_release(release)
    if files is None:
        raise ScoringError(f"release {release}: no files at {release.path or '(no path)'} nor in the releases storage")
    found = files.directions()
    if not found:
        raise ScoringError(f"{files.describe('')}: no direction config found (expected e.g. en-de/test.parquet)")
    return found


def task_options_make(
    *, metrics: list[str], options: dict[str, Any] | None, metric_options: dict[str, dict[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """Each metric's task options: the shared ones, with ``options["extra"]`` (``--option`` values: KEY or
    METRIC:KEY) routed to the metrics that take them (``scoring.registry.route_options``) and ``metric_options``
    (the scores page's switches, metric name -> options) added to their own metric's. An option that no metric of
    the request takes, or a judge setting out of its range, is an error here, before any job is recorded, rather
    than a failed task on a worker."""
    judge = (options or {}).get("judge") or {}
    try:
        specs = [get_metric(m) for m in metrics]
        routed = route_options(specs, dict((options or {}).get("extra") or {}))
        if judge and any(spec.family == Family.LLM for spec in specs):  # concurrency=-1, a URL without http://
            JudgeConfig.from_options({k: v for k, v in judge.items() if k != "prompt_files"})
    except MetricError as exc:
        raise ScoringError(str(exc)) from None
    shared = {k: v for k, v in (options or {}).items() if k != "extra"}
    out = {}
    for spec in specs:
        extra = {**routed[spec.name], **(metric_options or {}).get(spec.name, {})}
        out[spec.name] = {**shared, "extra": extra} if extra else dict(shared)
    return out


def scoring_prepare(
    *, release: Release, metrics: list[str], directions: list[str] | None = None, force: bool = False
) -> tuple[list[ScoringJob], list[tuple[ScoringJob, MetricSpec, str]]]:
    """Check a scoring request and record one job per (metric, direction), inside the caller's transaction.

    Returns every job, and those to send (new, failed, or all with ``force``) as (job, metric, direction
    code); jobs done or still in flight are left alone."""
    if release.status != Release.Status.READY:
        raise ScoringError(f"release {release} is {release.status}, not ready")
    try:
        # a metric or direction named twice (chrF,chrf) is one job, listed once
        specs = list({spec.name: spec for spec in (get_metric(m) for m in metrics)}.values())
    except MetricError as exc:
        raise ScoringError(str(exc)) from None
    if not specs:
        raise ScoringError("no metric named")
    available = release_directions_list(release=release)
    wanted = list(dict.fromkeys(directions)) if directions else available
    unknown = [d for d in wanted if d not in available]
    if unknown:
        raise ScoringError(f"release {release} has no direction {', '.join(unknown)} (it has {', '.join(available)})")
    by_code = {d.code: d for d in Direction.objects.filter(code__in=wanted)}
    missing = [d for d in wanted if d not in by_code]
    if missing:
        raise ScoringError(f"direction(s) {', '.join(missing)} are not known to the platform")
    scores_dir(release)
    jobs, to_send = [], []
    for spec in specs:
        for code in wanted:
            job, created = ScoringJob.objects.select_for_update().get_or_create(
                release=release, metric=spec.name, direction=by_code[code]
            )
            jobs.append(job)
            if not (created or force or job.status == ScoringJob.Status.FAILED):
                continue  # done, or queued and still in flight
            job.status = ScoringJob.Status.PENDING
            job.error = ""
            job.output_path = ""
            job.save(update_fields=["status", "error", "output_path", "updated_at"])
            to_send.append((job, spec, code))
    return jobs, to_send


def jobs_sync(*, release: Release, app) -> list[JobState]:
    """Bring every job of ``release`` up to date with its task (``app``: the Celery app whose result backend
    holds the states); ingest the files of finished ones, record the reasons of failed ones."""
    states = []
    for job in (
        ScoringJob.objects.filter(release=release).select_related("direction").order_by("metric", "direction__code")
    ):
        js = backend_state(job, app)
        if js.state in ("STARTED", "PROGRESS", "RETRY") and job.status == ScoringJob.Status.PENDING:
            job.status = ScoringJob.Status.RUNNING
            job.save(update_fields=["status", "updated_at"])
        elif js.state == "SUCCESS" and job.status not in (ScoringJob.Status.DONE, ScoringJob.Status.FAILED):
            try:
                js.done = js.total = job_ingest(job=job, result=js.info)
            except ScoringError as exc:
                _fail(job, str(exc))
        elif js.state == "FAILURE" and job.status not in (ScoringJob.Status.DONE, ScoringJob.Status.FAILED):
            info = js.info
            _fail(job, f"{type(info).__name__}: {info}" if isinstance(info, BaseException) else str(info))
        states.append(js)
    return states


# What the web environment scores itself when no broker reaches a scoring worker: the string metrics (sacrebleu is
# in requirements.txt) and the LLM judges, which only call an endpoint. Neural metrics need .venv-scoring's torch.
IN_PROCESS_FAMILIES = frozenset({Family.SEQUENCE, Family.LLM})
PROGRESS_SECONDS = 24 * 3600


def scoring_check_in_process(*, metrics: list[str]) -> list[str]:
    """The metrics of ``metrics`` that this process cannot score (they need a scoring worker); an unknown name is
    ``scoring_prepare``'s to refuse."""
    specs = []
    for name in metrics:
        try:
            specs.append(get_metric(name))
        except MetricError:
            continue
    return [spec.name for spec in specs if spec.family not in IN_PROCESS_FAMILIES]


def job_run_here(*, job: ScoringJob, options: dict[str, Any] | None) -> ScoringJob:
    """Score one job in this process (no broker: the scoring package runs here, as a worker would on the shared
    file system), then ingest its part. Progress goes to the cache for the pages (``selectors.backend_state``);
    a failure is recorded on the job with its reason, never raised."""
    from django.core.cache import cache

    job.status = ScoringJob.Status.RUNNING
    job.save(update_fields=["status", "updated_at"])
    key = progress_key(job)

    def progress(done: int, total: int) -> None:
        cache.set(key, {"done": done, "total": total}, timeout=PROGRESS_SECONDS)

    try:
        score_task(
            job.release.path, job.metric, job.direction.code, str(scores_dir(job.release)), options, progress=progress
        )
        job_ingest(job=job)
    except Exception as exc:  # the reason is the job's, shown on the scores page (a bad option, an endpoint down)
        _fail(job, f"{type(exc).__name__}: {exc}")
    finally:
        cache.delete(key)
    return job


def _fail(job: ScoringJob, reason: str) -> None:
    job.status = ScoringJob.Status.FAILED
    job.error = reason[:4000]
    job.output_path = ""
    job.save(update_fields=["status", "error", "output_path", "updated_at"])


def job_ingest(*, job: ScoringJob, result: Any = None) -> int:
    """Read the worker's part file for this job and replace the job's MetricScore rows with it: the part it
    uploaded when its result names one (``part_sha256``: a worker without the shared file system), else
    the file it wrote next to the release."""
    release = job.release
    sha = result.get("part_sha256") if isinstance(result, dict) else None
    if sha:
        upload = PartUpload.objects.filter(job=job, sha256=sha).first()
        if upload is None:
            raise ScoringError(
                f"the worker reported part {sha[:12]}… of {job.metric} {job.direction.code}, but no upload of it reached the platform"
            )
        with local_copy(storage_get(WORKER_PARTS), upload.storage_name) as path:
            n = part_ingest(release=release, metric=job.metric, direction=job.direction, path=path)
        where = f"{WORKER_PARTS}:{upload.storage_name}"
    else:
        path = part_path(scores_dir(release), job.metric, job.direction.code)
        n = part_ingest(release=release, metric=job.metric, direction=job.direction, path=path)
        where = str(path)
    job.status = ScoringJob.Status.DONE
    job.error = ""
    job.output_path = where
    job.save(update_fields=["status", "error", "output_path", "updated_at"])
    return n


def part_ingest(*, release: Release, metric: str, direction: Direction, path: Path) -> int:
    """Replace the (release, metric, direction) scores with the rows of a worker's part file.

    Streamed: the pure ``exports.scores.domain`` reads and checks ``INGEST_BATCH`` rows at a time and each
    batch is written inside one transaction, so memory is bounded by a batch (plus the set of triplet ids
    seen, to refuse duplicates) and a bad row anywhere leaves the previous scores in place."""
    part = open_part(
        path,
        metric=metric,
        direction_code=direction.code,
        id_length=MetricScore._meta.get_field("triplet_id").max_length,
    )
    stored = 0
    with transaction.atomic():
        MetricScore.objects.filter(release=release, metric=metric, direction=direction).delete()
        for rows in part.batches():
            bulk.insert_objects(
                MetricScore,
                [
                    MetricScore(
                        release=release, metric=metric, direction=direction, signature=part.signature, **fields_of(row)
                    )
                    for row in rows
                ],
            )
            stored += len(rows)
        scores_summarize(release=release, metric=metric, direction=direction)  # with the scores, in their transaction
    return stored


def scores_summarize(*, release: Release, metric: str | None = None, direction: Direction | None = None) -> int:
    """Write the ``ScoreSummary`` rows of the release's scores (of one metric and direction when given) from
    the scores stored now, replacing the old ones: one grouped pass over those scores, by their index. The
    ingest calls it for each part file; whatever else writes scores calls it after them. Returns the rows
    written."""
    scores = MetricScore.objects.filter(release=release)
    summaries = ScoreSummary.objects.filter(release=release)
    if metric is not None:
        scores, summaries = scores.filter(metric=metric), summaries.filter(metric=metric)
    if direction is not None:
        scores, summaries = scores.filter(direction=direction), summaries.filter(direction=direction)
    with transaction.atomic():
        summaries.delete()
        rows = (
            scores.values("metric", "direction_id", "level")
            .annotate(n=Count("id"), total=Sum("score"))
            .order_by("metric", "direction_id", "level")
        )
        return len(ScoreSummary.objects.bulk_create(ScoreSummary(release=release, **row) for row in rows))
