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

import hashlib
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, transaction
from django.db.models import Count, Sum

from core import bulk
from core.http import body_copy
from core.models import Direction
from core.storage import WORKER_PARTS, ReleaseFiles, local_copy, storage_get
from exports.models import MetricScore, PartUpload, Release, ScoreSummary, ScoringJob, WorkerToken
from exports.scores.domain import PartRefused, ScoringError, check_part_identity, open_part
from exports.scores.selectors import JobState, backend_state, progress_key, scores_dir
from scoring.api import (
    DIRECTION_RE,
    Family,
    JudgeConfig,
    MetricError,
    MetricSpec,
    get_metric,
    metric_slug,
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
        path, metric=metric, direction=direction.code, id_length=MetricScore._meta.get_field("triplet_id").max_length
    )
    stored = 0
    with transaction.atomic():
        MetricScore.objects.filter(release=release, metric=metric, direction=direction).delete()
        for rows in part.batches():
            bulk.insert_objects(
                MetricScore,
                [
                    MetricScore(
                        release=release,
                        metric=metric,
                        direction=direction,
                        triplet_id=row.triplet_id,
                        level=row.level,
                        score=row.score,
                        signature=part.signature,
                        spans=row.spans,
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


# ---- Workers without a shared file system: tokens, release files, uploaded parts ----------------------

TOKEN_PREFIX = "xqw_"
_CHUNK = 1024 * 1024


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_create(*, name: str, created_by=None) -> tuple[WorkerToken, str]:
    """A new worker token and its secret: the only time the secret exists outside the worker (only its
    sha256 is stored)."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = WorkerToken.objects.create(
        name=name.strip(), token_hash=_token_hash(secret), prefix=secret[:10], created_by=created_by
    )
    return token, secret


def tokens_revoke(*, tokens) -> int:
    from django.utils import timezone

    return tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def token_authenticate(*, secret: str) -> WorkerToken | None:
    """The active token with this secret, or None. Marks it used (at most once a minute)."""
    from datetime import timedelta

    from django.utils import timezone

    if not secret.startswith(TOKEN_PREFIX):
        return None
    token = WorkerToken.objects.filter(token_hash=_token_hash(secret), revoked_at__isnull=True).first()
    if token is not None:
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
            WorkerToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
    return token


def release_files_list(*, release: Release, only: str | None = None) -> dict[str, dict[str, Any]]:
    """Per direction of a ready release (or just ``only``): its ``test.parquet`` (``name`` in the release's
    files, bytes, sha256: the manifest's record, else hashed once, streamed from the storage, and cached by
    name, size and modification time). Read through the ``releases`` storage (``core.storage``)."""
    from django.core.cache import cache

    if release.status != Release.Status.READY:
        return {}
    files = ReleaseFiles.for_release(release)
    if files is None:
        return {}
    recorded = (release.manifest or {}).get("files") or {}
    out = {}
    for code in [only] if only else files.directions():
        rel = f"{code}/test.parquet"
        if not DIRECTION_RE.match(code) or not files.exists(rel):
            continue
        size = files.size(rel)
        info = recorded.get(rel) if isinstance(recorded.get(rel), dict) else {}
        sha = info.get("sha256") if info.get("bytes") == size else None
        if sha is None:
            key = "workers:sha256:" + hashlib.sha256(files.version_key(rel).encode()).hexdigest()
            sha = cache.get(key)
            if sha is None:
                sha = files.sha256(rel)
                cache.set(key, sha, timeout=None)
        out[code] = {"name": rel, "bytes": size, "sha256": sha, "files": files}
    return out


def part_receive(
    *, release: Release, metric: str, direction: str, declared_sha256: str, body, length: int, worker: WorkerToken
) -> tuple[PartUpload, bool]:
    """Take a part file a worker uploads (``body``: a stream of ``length`` bytes), verify it and store it.

    Refuses (``PartRefused`` naming the field) a body that is not ``length`` bytes or past the size bound,
    whose sha256 is not the declared one, or whose content belongs to another metric, direction or release;
    and a (release, metric, direction) with no scoring job. Idempotent by content: a part already stored for
    the job returns (its upload, False) and writes nothing. Nothing is stored unless everything checks."""
    declared = (declared_sha256 or "").strip().lower()
    if len(declared) != 64 or any(c not in "0123456789abcdef" for c in declared):
        raise PartRefused("sha256", "declare the part's sha256 (64 hex digits) in the X-Part-SHA256 header")
    job = (
        ScoringJob.objects.filter(release=release, metric=metric, direction__code=direction)
        .select_related("direction")
        .first()
    )
    if job is None:
        field = "metric" if not ScoringJob.objects.filter(release=release, metric=metric).exists() else "direction"
        raise PartRefused(field, f"release {release.pk} has no scoring job for {metric} {direction}")
    limit = settings.WORKER_PART_MAX_BYTES
    if length > limit:
        raise PartRefused("size", f"a part may have at most {limit} bytes, this one declares {length}")
    existing = PartUpload.objects.filter(job=job, sha256=declared).first()
    fd, tmp_name = tempfile.mkstemp(prefix="xqmeval-upload-", suffix=".parquet")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            sha256, received = body_copy(body, out, length=length, chunk=_CHUNK)
        if received != length:  # the worker was cut off mid-upload: keep nothing of it
            raise PartRefused("body", f"received {received} of the {length} bytes declared")
        if sha256 != declared:
            raise PartRefused("sha256", f"the body's sha256 is {sha256}, the upload declares {declared}")
        if existing is not None:
            return existing, False
        versions = {
            release.version,
            str((release.manifest or {}).get("version", "")),
        }  # as the worker's manifest.json says
        check_part_identity(tmp, metric=metric, direction=direction, versions=versions)
        try:
            open_part(tmp, metric=metric, direction=direction)
        except ScoringError as exc:
            raise PartRefused("body", str(exc).replace(str(tmp), "part")) from None
        storage = storage_get(WORKER_PARTS)
        name = f"release-{release.pk}/{job.pk}-{_metric_file(metric)}-{direction}/{declared}.parquet"
        if not storage.exists(name):
            with open(tmp, "rb") as fh:
                name = storage.save(name, File(fh, name=name))
        try:
            with transaction.atomic():
                upload = PartUpload.objects.create(
                    job=job, worker=worker, sha256=declared, size=received, storage_name=name
                )
        except IntegrityError:  # the same part sent twice at once: the first one stored it
            return PartUpload.objects.get(job=job, sha256=declared), False
        return upload, True
    finally:
        tmp.unlink(missing_ok=True)


def _metric_file(metric: str) -> str:
    return metric_slug(metric)
