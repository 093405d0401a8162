"""Scoring releases on the worker queues: send one task per (metric, direction), track ScoringJob rows,
ingest the parquet files the workers write into MetricScore, and read scores by direction and level.

The workers run the Django-free ``scoring`` package in their own virtualenv (``scoring/worker.py``); this
module sends tasks to them by name and never imports torch or sacrebleu. Routing is by resource: metrics
that need a GPU go to queue ``gpu``, the rest to ``scoring`` (which GPU and CPU workers both consume).

A job's Celery task id is derived from the job (``xqmeval-score-<job id>``), so its state and progress
can be read from the result backend at any time without storing anything else.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import Avg, Count

from core import bulk
from core.models import Direction
from exports.models import MetricScore, Release, ScoringJob
from scoring.registry import MetricError, get_metric
from scoring.release import open_release
from scoring.runner import META_KEY, part_path
from scoring.queues import TASK_NAME, queue_for

BULK_BATCH = 2000
REQUIRED_COLUMNS = ("direction", "triplet_id", "score")


class ScoringError(Exception):
    """Scoring cannot start or a worker's output cannot be ingested; the message says why."""


@dataclass
class JobState:
    job: ScoringJob
    state: str  # the Celery state as last seen
    done: int = 0
    total: int = 0
    sent: int | None = None  # LLM judges: requests sent and estimated cost so far (worker progress)
    cost_usd: float | None = None

    @property
    def percent(self) -> int:
        if self.job.status == ScoringJob.Status.DONE:
            return 100
        return int(100 * self.done / self.total) if self.total else 0


def _celery_app():
    from xqmeval.celery import app

    return app


def task_id_for(job: ScoringJob) -> str:
    return f"xqmeval-score-{job.pk}"


def scores_dir(release: Release) -> Path:
    if not release.path:
        raise ScoringError(f"release {release}: has no files on disk (build it with `manage.py release` first)")
    return Path(release.path) / "scores"


def release_directions(release: Release) -> list[str]:
    try:
        return open_release(release.path).directions()
    except MetricError as exc:
        raise ScoringError(str(exc)) from None


def start_scoring(
    release: Release,
    metrics: list[str],
    directions: list[str] | None = None,
    options: dict[str, Any] | None = None,
    force: bool = False,
) -> list[ScoringJob]:
    """Queue one task per (metric, direction). Jobs done (or already queued) are left alone unless ``force``."""
    if not getattr(settings, "CELERY_BROKER_URL", "") and not _celery_app().conf.broker_url:
        raise ScoringError(
            "scoring runs on scoring workers: set CELERY_BROKER_URL (and CELERY_RESULT_BACKEND) and start "
            "`celery -A scoring.worker worker -Q scoring` (plus -Q gpu on GPU machines) from .venv-scoring"
        )
    if release.status != Release.Status.READY:
        raise ScoringError(f"release {release} is {release.status}, not ready")
    try:
        specs = [get_metric(m) for m in metrics]
    except MetricError as exc:
        raise ScoringError(str(exc)) from None
    if not specs:
        raise ScoringError("no metric named")
    available = release_directions(release)
    wanted = directions or available
    unknown = [d for d in wanted if d not in available]
    if unknown:
        raise ScoringError(f"release {release} has no direction {', '.join(unknown)} (it has {', '.join(available)})")
    by_code = {d.code: d for d in Direction.objects.filter(code__in=wanted)}
    missing = [d for d in wanted if d not in by_code]
    if missing:
        raise ScoringError(f"direction(s) {', '.join(missing)} are not known to the platform")

    app = _celery_app()
    out = str(scores_dir(release))
    jobs, to_send = [], []
    with transaction.atomic():
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
                to_send.append((job, spec.name, code))

        def send() -> None:
            for job, name, code in to_send:
                tid = task_id_for(job)
                app.AsyncResult(tid).forget()  # a re-run must not be read as the previous attempt's result
                app.send_task(
                    TASK_NAME,
                    kwargs={"release_dir": release.path, "metric": name, "direction": code, "out_dir": out, "options": options or {}},
                    queue=queue_for(name),
                    task_id=tid,
                )

        transaction.on_commit(send)
    return jobs


def poll_scoring(release: Release) -> list[JobState]:
    """Bring every job of ``release`` up to date with its task; ingest the files of finished ones."""
    app = _celery_app()
    states = []
    for job in ScoringJob.objects.filter(release=release).select_related("direction").order_by("metric", "direction__code"):
        if job.status in (ScoringJob.Status.DONE, ScoringJob.Status.FAILED):
            states.append(JobState(job, state=job.status.upper()))
            continue
        result = app.AsyncResult(task_id_for(job))
        state, info = result.state, result.info
        js = JobState(job, state=state)
        if state in ("STARTED", "PROGRESS", "RETRY"):
            if isinstance(info, dict):
                js.done, js.total = int(info.get("done", 0)), int(info.get("total", 0))
                if "cost_usd" in info:
                    js.sent, js.cost_usd = int(info.get("sent") or 0), float(info.get("cost_usd") or 0.0)
            if job.status != ScoringJob.Status.RUNNING:
                job.status = ScoringJob.Status.RUNNING
                job.save(update_fields=["status", "updated_at"])
        elif state == "SUCCESS":
            try:
                n = ingest_job(job)
                js.done = js.total = n
            except ScoringError as exc:
                _fail(job, str(exc))
        elif state == "FAILURE":
            _fail(job, f"{type(info).__name__}: {info}" if isinstance(info, BaseException) else str(info))
        states.append(js)
    return states


def _fail(job: ScoringJob, reason: str) -> None:
    job.status = ScoringJob.Status.FAILED
    job.error = reason[:4000]
    job.output_path = ""
    job.save(update_fields=["status", "error", "output_path", "updated_at"])


def ingest_job(job: ScoringJob) -> int:
    """Read the worker's part file for this job and replace the job's MetricScore rows with it."""
    release = job.release
    path = part_path(scores_dir(release), job.metric, job.direction.code)
    n = ingest_part(release, job.metric, job.direction, path)
    job.status = ScoringJob.Status.DONE
    job.error = ""
    job.output_path = str(path)
    job.save(update_fields=["status", "error", "output_path", "updated_at"])
    return n


INGEST_BATCH = 10_000  # score rows read from the part file and written at a time


def ingest_part(release: Release, metric: str, direction: Direction, path: Path) -> int:
    """Replace the (release, metric, direction) scores with the rows of a worker's part file.

    Streamed: the file is read ``INGEST_BATCH`` rows at a time and each batch validated and written
    inside one transaction, so memory is bounded by a batch (plus the set of triplet ids seen, to refuse
    duplicates) and a bad row anywhere leaves the previous scores in place."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        raise ScoringError(f"{path}: the worker reported success but the file is missing (is {path.parent} shared with the workers?)")
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise ScoringError(f"{path}: not a readable parquet file ({exc})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in schema.names]
    if missing:
        raise ScoringError(f"{path}: missing column(s) {', '.join(missing)}")
    meta = json.loads((schema.metadata or {}).get(META_KEY, b"{}"))
    if meta.get("metric") != metric:
        raise ScoringError(f"{path}: holds metric {meta.get('metric')!r}, expected {metric!r}")
    signature = meta.get("signature") or {}
    # judge metrics record per segment why a score is missing (transport error, unreadable answer)
    columns = [*REQUIRED_COLUMNS, *(c for c in ("num_errors", "error", "note") if c in schema.names)]
    seen: set[str] = set()
    i = stored = 0  # row index in the file; rows stored
    with transaction.atomic():
        MetricScore.objects.filter(release=release, metric=metric, direction=direction).delete()
        try:
            batches = parquet.iter_batches(batch_size=INGEST_BATCH, columns=columns)
            for batch in batches:
                cols = batch.to_pydict()
                levels = cols.get("num_errors") or [None] * batch.num_rows
                blank = [""] * batch.num_rows
                reasons = [(e or "") + (n or "") for e, n in zip(cols.get("error") or blank, cols.get("note") or blank)]
                rows = []
                for d, tid, score, level, reason in zip(cols["direction"], cols["triplet_id"], cols["score"], levels, reasons):
                    if d != direction.code:
                        raise ScoringError(f"{path}: row {i} is direction {d!r}, expected {direction.code!r}")
                    if tid in seen:
                        raise ScoringError(f"{path}: row {i}: triplet_id {tid!r} appears twice")
                    if score is None and reason:
                        i += 1
                        continue  # an LLM judge could not score this segment; the file says why (the next run retries it)
                    if score is None or not math.isfinite(score):
                        raise ScoringError(f"{path}: row {i} (triplet {tid!r}): score {score!r} is not a finite number")
                    seen.add(tid)
                    rows.append(
                        MetricScore(
                            release=release, metric=metric, direction=direction, triplet_id=str(tid),
                            level=None if level is None else int(level), score=float(score), signature=signature,
                        )
                    )
                    i += 1
                bulk.insert_objects(MetricScore, rows)
                stored += len(rows)
        except (pa.ArrowException, OSError) as exc:
            raise ScoringError(f"{path}: not a readable parquet file ({exc})") from None
    return stored


@shared_task(name="exports.scoring_jobs.collect_scores")
def collect_scores(release_id: int) -> dict:
    """Celery entry (default queue): sync job states and ingest finished files of one release."""
    release = Release.objects.get(pk=release_id)
    states = poll_scoring(release)
    counts: dict[str, int] = defaultdict(int)
    for s in states:
        counts[s.job.status] += 1
    return dict(counts)


# ---- reads --------------------------------------------------------------------------------------------


def known_metric(release: Release, metric: str) -> bool:
    """A metric of the registry, or one this release has scoring jobs for."""
    try:
        get_metric(metric)
    except MetricError:
        return ScoringJob.objects.filter(release=release, metric=metric).exists()
    return True


def score_table(release: Release, directions: list[str] | None = None) -> list[dict]:
    """Mean score per metric, direction and level (k), plus the mean over all levels, for the UI.

    ``directions`` limits the rows (annotators see only their languages)."""
    qs = MetricScore.objects.filter(release=release)
    if directions is not None:
        qs = qs.filter(direction__code__in=directions)
    agg = qs.values("metric", "direction__code", "level").annotate(mean=Avg("score"), n=Count("id"))
    table: dict[str, dict[str, dict]] = defaultdict(lambda: defaultdict(dict))
    for row in agg:
        table[row["metric"]][row["direction__code"]][row["level"]] = (row["mean"], row["n"])
    levels = sorted({lvl for m in table.values() for d in m.values() for lvl in d if lvl is not None})
    out = []
    for metric in sorted(table, key=str.lower):
        try:
            spec = get_metric(metric)
            better, scale = spec.direction, spec.report_scale
        except MetricError:
            better, scale = "?", 1.0
        rows = []
        for code in sorted(table[metric]):
            cells = table[metric][code]
            n = sum(c[1] for c in cells.values())
            total = sum(c[0] * c[1] for c in cells.values())
            rows.append(
                {
                    "direction": code,
                    "levels": [None if lvl not in cells else cells[lvl][0] * scale for lvl in levels],
                    "all": total / n * scale if n else None,
                    "n": n,
                }
            )
        if len(rows) > 1:
            # Across directions, each direction weighs the same (XQ-MEval averages over languages).
            def mean(values):
                values = [v for v in values if v is not None]
                return sum(values) / len(values) if values else None

            rows.append(
                {
                    "direction": "mean of directions",
                    "levels": [mean(r["levels"][i] for r in rows) for i in range(len(levels))],
                    "all": mean(r["all"] for r in rows),
                    "n": sum(r["n"] for r in rows),
                }
            )
        out.append({"metric": metric, "better": better, "scale": scale, "levels": levels, "rows": rows})
    return out


def judge_reports(release: Release, directions: list[str] | None = None) -> dict[str, list[dict]]:
    """What the LLM-judge metrics wrote beside their scores: calls, tokens and cost per metric and
    direction (summary.json), AskQE's accept/reject decision per direction (its GMM fit), and CEF's judge
    reliability (cef.reliability.parquet). Read from the worker files; nothing is stored."""
    out: dict[str, list[dict]] = {"costs": [], "decisions": [], "reliability": []}
    if not release.path:  # no files on disk: nothing was scored
        return out
    root = scores_dir(release)
    summary_path = root / "summary.json"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
    except (OSError, ValueError):
        summary = {}
    wanted = set(directions) if directions is not None else None
    for metric, entry in sorted((summary.get("metrics") or {}).items()):
        for code, d in sorted((entry.get("directions") or {}).items()):
            judge = d.get("judge")
            if not judge or (wanted is not None and code not in wanted):
                continue
            out["costs"].append({"metric": metric, "direction": code, "n": d.get("n"), "scored": d.get("n_scored"),
                                 "retry": d.get("n_retry", 0), "calls": judge.get("calls"), "sent": judge.get("sent"),
                                 "cached": judge.get("cached"), "tokens": (judge.get("prompt_tokens") or 0) + (judge.get("completion_tokens") or 0),
                                 "cost_usd": judge.get("cost_usd"), "model": (d.get("signature") or {}).get("judge", {}).get("model", "")})
            gmm = d.get("gmm")
            if gmm:
                out["decisions"].append({"metric": metric, "direction": code, "n": gmm.get("n"), "fitted": gmm.get("fitted"),
                                         "reject": gmm.get("n_reject"), "means": gmm.get("means"), "reason": gmm.get("reason", "")})
    reliability = root / "cef.reliability.parquet"
    if reliability.is_file():
        import pyarrow.parquet as pq

        try:
            rows = pq.read_table(reliability).to_pylist()
        except Exception:  # noqa: BLE001 — a torn file shows no table rather than breaking the page
            rows = []
        out["reliability"] = [r for r in rows if wanted is None or r.get("direction") in wanted]
    return out
