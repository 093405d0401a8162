"""The scoring worker: a Celery app of its own (no Django), one task per (metric, direction).

Queues are resources: ``gpu`` carries metrics that need a GPU, ``scoring`` carries metrics that run
anywhere (string metrics, SBERT). A GPU machine consumes both, a CPU machine only ``scoring``::

    CELERY_BROKER_URL=redis://host:6379/0 .venv-scoring/bin/celery -A scoring.worker worker -Q gpu,scoring -c 1
    CELERY_BROKER_URL=redis://host:6379/0 .venv-scoring/bin/celery -A scoring.worker worker -Q scoring

LLM judges (gemba-mqm, askqe, cef, dcr) go to the ``judge`` queue: a worker that reaches the judge endpoint
(``-Q judge`` in .venv-scoring), or one in .venv-vllm running the judge in-process (options
``judge={"backend": "vllm", "model": ...}``)::

    CELERY_BROKER_URL=redis://host:6379/0 .venv-scoring/bin/celery -A scoring.worker worker -Q judge -c 1

The platform (``exports.scores.tasks``) sends tasks by name; results (a small summary) and progress go
to the result backend (CELERY_RESULT_BACKEND, default: the broker). Scores themselves are written as
parquet files next to the release, which the platform ingests; a worker that shares no file system with
the platform (``--platform-url`` and a worker token, ``scoring.transfer``) fetches the release over HTTP
into its own directory and uploads its part files instead::

    XQMEVAL_WORKER_TOKEN=xqw_… CELERY_BROKER_URL=redis://host:6379/0 .venv-scoring/bin/celery -A scoring.worker \
        worker -Q scoring --platform-url https://platform.example.org --worker-data /scratch/xqmeval
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from celery import Celery

# `celery -A scoring.worker` run from the repository root (as docs/operations.md says) finds this package only
# because Celery puts the working directory on sys.path while it loads the app, and takes it off again after:
# a metric module imported later, in a pool's process, would then miss the packages beside this one
# (llm_client, #46.4). So the directory that holds this package is appended to the path (an entry of its own,
# which Celery's removal of the one it inserted leaves in place), whatever the pool.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from scoring.faults import is_transient, retry_delay
from scoring.queues import ANY_QUEUE, GPU_QUEUE, JUDGE_QUEUE, TASK_NAME, queue_for  # noqa: F401
from scoring.registry import MetricError, get_metric

ALLOW_CPU_ENV = "XQMEVAL_ALLOW_GPU_METRICS_ON_CPU"  # tests and small CPU-only setups


broker = os.environ.get("CELERY_BROKER_URL", "")
app = Celery(
    "xqmeval-scoring", broker=broker or None, backend=os.environ.get("CELERY_RESULT_BACKEND") or broker or None
)
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    result_serializer="json",
    task_acks_late=True,  # a worker killed mid-task leaves the message; the next one resumes from checkpoints
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,  # one model-sized task at a time per process
    task_track_started=True,
    result_extended=True,
    task_default_queue=ANY_QUEUE,
    # Redis hands an unacknowledged task (its worker killed) to another worker after this long; as the
    # platform's CELERY_VISIBILITY_TIMEOUT, longer than the longest task.
    broker_transport_options={"visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", str(6 * 3600)))},
)


def _add_worker_options() -> None:
    """``celery -A scoring.worker worker --platform-url URL [--worker-data DIR]``: a worker with no shared
    file system (scoring.transfer; the token comes from the environment, never the command line)."""
    from celery import bootsteps
    from click import Option

    from scoring import transfer

    app.user_options["worker"].add(
        Option(["--platform-url"], default=None, help="the platform's URL: fetch releases and upload parts over HTTP")
    )
    app.user_options["worker"].add(
        Option(["--worker-data"], default=None, help="this worker's own data directory (with --platform-url)")
    )

    class PlatformOptions(bootsteps.Step):
        def __init__(self, parent, platform_url=None, worker_data=None, **options):
            if platform_url:
                os.environ[transfer.URL_ENV] = platform_url
            if worker_data:
                os.environ[transfer.DATA_ENV] = worker_data
            # a platform URL without a token fails at start, not on the first task; the client (its TLS
            # context takes a while to build) is made once here, for every task of this process
            platform = transfer.Platform.from_env()
            if platform is not None:
                platform.connect()
            super().__init__(parent, **options)

    app.steps["worker"].add(PlatformOptions)


_add_worker_options()


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


@app.task(name=TASK_NAME, bind=True, max_retries=5)
def score_direction_task(
    self,
    release_dir: str,
    metric: str,
    direction: str,  # a code ("en-de"); the keyword queued messages carry, so it keeps its name
    out_dir: str | None = None,
    options: dict | None = None,
    release_id: int | None = None,
    hub_repo: str | None = None,
    hub_revision: str | None = None,
    job_token: str | None = None,
) -> dict:
    try:
        return _score_direction(
            self, release_dir, metric, direction, out_dir, options, release_id, hub_repo, hub_revision, job_token
        )
    except Exception as exc:
        if not is_transient(exc):  # a missing model offline, a bad option: a retry cannot help
            raise
        # broker/backend hiccups, a Hub that is down: try again later; the checkpoints keep what was scored
        raise self.retry(exc=exc, countdown=retry_delay(self.request.retries)) from exc


def _progress_reporter(task, metric: str, direction_code: str, judge):
    """The task's progress callback (segments done, total) for the runner: it reports the task's state to the
    result backend, one write a second at most (and at the end), with an LLM judge's calls sent and estimated
    cost so far, which each answer the judge receives reports too."""
    last = [0.0]
    seen = {"done": 0, "total": 0}

    def report(force: bool = False) -> None:
        now = time.monotonic()
        if force or now - last[0] > 1.0:  # throttled: one backend write a second at most
            last[0] = now
            meta = {**seen, "metric": metric, "direction": direction_code}
            if judge is not None:  # LLM judges: calls answered and estimated cost so far
                stats = judge.stats
                meta.update(sent=stats.sent, cost_usd=round(stats.spent_usd, 6))
            task.update_state(state="PROGRESS", meta=meta)

    def progress(done: int, total: int) -> None:
        seen.update(done=done, total=total)
        report(force=done >= total)

    if judge is not None:
        judge.on_answer = lambda _stats: report()
    return progress


def _score_direction(
    self,
    release_dir: str,
    metric: str,
    direction_code: str,
    out_dir: str | None,
    options: dict | None,
    release_id: int | None = None,
    hub_repo: str | None = None,
    hub_revision: str | None = None,
    job_token: str | None = None,
) -> dict:
    from scoring.release import open_release
    from scoring.runner import ScoreOptions, part_path, score_direction
    from scoring.transfer import Platform

    # No shared file system: the release comes from the Hub when it was pushed there (else the platform)
    # into this worker's own directory, and the part goes back to the platform (with a shared one,
    # nothing is copied).
    platform = Platform.from_env() if release_id is not None else None
    fetched = {}
    if platform is not None:
        release_dir = str(platform.fetch_release(release_id, [direction_code], hub_repo, hub_revision, job_token))
        out_dir = str(platform.scores_dir(release_id))
        fetched = dict(platform.sources)

    spec = get_metric(metric)
    if spec.device == "gpu" and not _has_gpu() and os.environ.get(ALLOW_CPU_ENV) != "1":
        raise MetricError(
            f"{spec.name} needs a GPU and this worker has none; run it on a worker consuming queue {GPU_QUEUE!r}"
        )
    options = dict(options or {})
    extra = options.pop("extra", {}) or {}
    opts = ScoreOptions(**options, extra=extra)
    release = open_release(release_dir)
    out = out_dir or str(release.root / "scores")
    scorer = spec.build(**opts.for_metric(spec, Path(out)))
    progress = _progress_reporter(self, spec.name, direction_code, getattr(scorer, "judge", None))
    try:
        # Over HTTP the part file is the whole result: the worker holds one direction of the release, so
        # it writes no whole-metric file (which would copy the part) and no summary beside it.
        summary = score_direction(
            release, spec, direction_code, out, opts, progress, scorer=scorer, assemble=platform is None
        )
    finally:
        scorer.close()
    part = part_path(Path(out), spec.name, direction_code)
    if platform is None:
        return {"output_path": str(part), "summary": summary}
    sent = platform.upload_part(release_id, spec.name, direction_code, part, job_token)
    return {
        "output_path": str(part),
        "summary": summary,
        "part_sha256": sent["sha256"],
        "uploaded": sent["status"],
        "fetched_from": fetched.get(direction_code, ""),
    }
