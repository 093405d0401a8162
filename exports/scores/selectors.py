"""Reads of the scoring stage: job states as the result backend reports them, and scores by metric,
direction and level. Nothing here writes: ingesting finished jobs is ``exports.scores.services.jobs_sync``,
run by the ``collect_scores`` task (queued by each scoring task when it ends) or by the ``score`` command.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Max, Sum

from core.storage import WORKER_PARTS, ReleaseFiles, local_copy, storage_get
from exports.models import Release, ScoreSummary, ScoringJob
from exports.scores.domain import ScoringError
from scoring.api import MetricError, get_metric


@dataclass
class JobState:
    job: ScoringJob
    state: str  # the Celery state as last seen
    done: int = 0
    total: int = 0
    info: Any = None  # the backend's result or exception, as last seen
    sent: int | None = None  # LLM judges: requests sent and estimated cost so far (worker progress)
    cost_usd: float | None = None

    @property
    def percent(self) -> int:
        if self.job.status == ScoringJob.Status.DONE:
            return 100
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def status(self) -> str:
        """What to show: the job's own status once it is finished; ``running`` while its task runs or has
        ended and waits for ``collect_scores``; else the job's status (pending)."""
        if self.job.status in (ScoringJob.Status.DONE, ScoringJob.Status.FAILED):
            return self.job.status
        if self.state in ("STARTED", "PROGRESS", "RETRY", "SUCCESS", "FAILURE"):
            return ScoringJob.Status.RUNNING
        return self.job.status


def scores_dir(release: Release) -> Path:
    """Where the workers write the release's scores."""
    if not release.path:
        raise ScoringError(f"release {release}: has no files on disk (build it with `manage.py release` first)")
    return Path(release.path) / "scores"


def hub_copy(release: Release) -> dict[str, str]:
    """The release's pushed copy on the Hub (``hub_repo``, ``hub_revision``: the tagged commit), which a
    worker without the shared file system downloads instead of the platform's file; empty when it was not
    pushed (or its push has not finished)."""
    if release.push_status == Release.PushStatus.DONE and release.hub_repo and release.hub_revision:
        return {"hub_repo": release.hub_repo, "hub_revision": release.hub_revision}
    return {}


def worker_reachable(app) -> bool:
    """Whether scoring tasks go to a worker queue (a broker is configured), so their states are in its result
    backend; otherwise this process scores them and keeps their progress in the cache. Platform tasks may still
    run eagerly beside a scoring broker (the site with scoring workers but no platform worker)."""
    return bool(getattr(settings, "CELERY_BROKER_URL", "") or app.conf.broker_url)


def progress_key(job: ScoringJob) -> str:
    """Where a job scored in this process keeps its progress (``services.job_run_here``)."""
    return f"scores:in-process:{job.pk}"


def task_id_for(job: ScoringJob) -> str:
    return f"xqmeval-score-{job.pk}"


def backend_state(job: ScoringJob, app) -> JobState:
    """The job as its task's result backend sees it (``app``: the Celery app); a finished job's own status."""
    if job.status in (ScoringJob.Status.DONE, ScoringJob.Status.FAILED):
        return JobState(job, state=job.status.upper())
    if not worker_reachable(app):  # scored in this process (no result backend): its progress is in the cache
        from django.core.cache import cache

        seen = cache.get(progress_key(job)) or {}
        running = job.status == ScoringJob.Status.RUNNING
        return JobState(
            job, state="PROGRESS" if running else "PENDING", done=seen.get("done", 0), total=seen.get("total", 0)
        )
    result = app.AsyncResult(task_id_for(job))
    state, info = result.state, result.info
    js = JobState(job, state=state, info=info)
    if state in ("STARTED", "PROGRESS", "RETRY") and isinstance(info, dict):
        js.done, js.total = int(info.get("done", 0)), int(info.get("total", 0))
        if "cost_usd" in info:
            js.sent, js.cost_usd = int(info.get("sent") or 0), float(info.get("cost_usd") or 0.0)
    return js


def job_states(*, release: Release, app) -> list[JobState]:
    """Every job of ``release`` with its live progress, read-only (the page and its progress poll)."""
    jobs = ScoringJob.objects.filter(release=release).select_related("direction").order_by("metric", "direction__code")
    return [backend_state(job, app) for job in jobs]


def scored_metrics(releases, directions: set[str] | None = None) -> list[dict]:
    """Per release (newest first) and metric: the scores ingested (``n``) and the newest summary id
    (``last``: a re-ingest writes new summaries), from ``ScoreSummary``; ``directions`` limits them."""
    qs = ScoreSummary.objects.filter(release__in=releases)
    if directions is not None:
        qs = qs.filter(direction__code__in=directions)
    return list(
        qs.values("release_id", "release__version", "metric")
        .annotate(n=Sum("n"), last=Max("id"))
        .order_by("-release_id", "metric")
    )


def scores_digest(release: Release, metric: str) -> tuple[int, int]:
    """(scores, newest summary id) of one metric on a release: changes with every ingest of it."""
    row = ScoreSummary.objects.filter(release=release, metric=metric).aggregate(n=Sum("n"), last=Max("id"))
    return int(row["n"] or 0), int(row["last"] or 0)


def scored_directions(release: Release) -> set[str]:
    """The directions with scores of any metric on the release."""
    return set(ScoreSummary.objects.filter(release=release).values_list("direction__code", flat=True).distinct())


def known_metric(release: Release, metric: str) -> bool:
    """A metric of the registry, or one this release has scoring jobs for."""
    try:
        get_metric(metric)
    except MetricError:
        return ScoringJob.objects.filter(release=release, metric=metric).exists()
    return True


def score_table(release: Release, directions: list[str] | None = None) -> list[dict]:
    """Mean score per metric, direction and level (k), plus the mean over all levels, for the UI: from the
    summaries the ingest wrote (``ScoreSummary``), not a pass over the scores.

    ``directions`` limits the rows (annotators see only their languages)."""
    qs = ScoreSummary.objects.filter(release=release)
    if directions is not None:
        qs = qs.filter(direction__code__in=directions)
    table: dict[str, dict[str, dict]] = defaultdict(lambda: defaultdict(dict))
    for metric, code, level, n, total in qs.values_list("metric", "direction__code", "level", "n", "total"):
        table[metric][code][level] = (total / n, n)  # n ≥ 1: a summary row is written for scores only
    levels = sorted({lvl for m in table.values() for d in m.values() for lvl in d if lvl is not None})
    out = []
    for metric in sorted(table, key=str.lower):
        try:
            spec = get_metric(metric)
            better, scale = spec.better, spec.report_scale
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


def _uploaded_reports(release: Release) -> tuple[dict, list[dict]]:
    """What ``summary.json`` and the side tables hold, for the jobs whose part a worker uploaded (a worker
    with no shared file system writes those files on its own disk): read from the parts' metadata."""
    import pyarrow.parquet as pq

    from scoring.api import META_KEY

    summary: dict = {"metrics": {}}
    reliability: list[dict] = []
    prefix = f"{WORKER_PARTS}:"
    for job in ScoringJob.objects.filter(
        release=release, status=ScoringJob.Status.DONE, output_path__startswith=prefix
    ).select_related("direction"):
        try:
            with local_copy(storage_get(WORKER_PARTS), job.output_path.removeprefix(prefix)) as path:
                meta = json.loads((pq.read_schema(path).metadata or {}).get(META_KEY, b"{}"))
        except Exception:  # a part removed from storage, or unreadable: nothing to show for it
            continue
        entry = summary["metrics"].setdefault(job.metric, {"directions": {}})
        entry["directions"][job.direction.code] = {**(meta.get("summary") or {}), "signature": meta.get("signature")}
        reliability += (meta.get("tables") or {}).get("reliability") or []
    return summary, reliability


def _add_judge_report(out: dict[str, list[dict]], metric: str, code: str, d: dict) -> None:
    """One judged direction of a metric's summary: its calls and cost, and AskQE's decision when it has one."""
    judge = d["judge"]
    out["costs"].append(
        {
            "metric": metric,
            "direction": code,
            "n": d.get("n"),
            "scored": d.get("n_scored"),
            "retry": d.get("n_retry", 0),
            "calls": judge.get("calls"),
            "sent": judge.get("sent"),
            "cached": judge.get("cached"),
            "tokens": (judge.get("prompt_tokens") or 0) + (judge.get("completion_tokens") or 0),
            "cost_usd": judge.get("cost_usd"),
            "model": (d.get("signature") or {}).get("judge", {}).get("model", ""),
        }
    )
    gmm = d.get("gmm")
    if gmm:
        out["decisions"].append(
            {
                "metric": metric,
                "direction": code,
                "n": gmm.get("n"),
                "fitted": gmm.get("fitted"),
                "reject": gmm.get("n_reject"),
                "means": gmm.get("means"),
                "reason": gmm.get("reason", ""),
            }
        )


def judge_reports(release: Release, directions: list[str] | None = None) -> dict[str, list[dict]]:
    """What the LLM-judge metrics wrote beside their scores: calls, tokens and cost per metric and
    direction (summary.json), AskQE's accept/reject decision per direction (its GMM fit), and CEF's judge
    reliability (cef.reliability.parquet). Read from the worker files (or, for parts a worker uploaded,
    their metadata); nothing is stored."""
    out: dict[str, list[dict]] = {"costs": [], "decisions": [], "reliability": []}
    if not release.path:  # no files: nothing was scored
        return out
    # what workers on a shared file system wrote beside the release (in its directory, not the releases
    # storage: workers there write to the file system)
    files = ReleaseFiles.beside(release)
    try:
        summary = (
            json.loads(files.read_bytes("scores/summary.json")) if files and files.exists("scores/summary.json") else {}
        )
    except (OSError, ValueError):
        summary = {}
    uploaded, uploaded_reliability = _uploaded_reports(release)
    for metric, entry in uploaded["metrics"].items():  # an uploaded part is the job's newest result
        summary.setdefault("metrics", {}).setdefault(metric, {}).setdefault("directions", {}).update(
            entry["directions"]
        )
    wanted = set(directions) if directions is not None else None
    for metric, entry in sorted((summary.get("metrics") or {}).items()):
        for code, d in sorted((entry.get("directions") or {}).items()):
            if d.get("judge") and (wanted is None or code in wanted):
                _add_judge_report(out, metric, code, d)
    out["reliability"] = [r for r in uploaded_reliability if wanted is None or r.get("direction") in wanted]
    if not uploaded_reliability and files and files.exists("scores/cef.reliability.parquet"):
        import pyarrow.parquet as pq

        try:
            with files.local_copy("scores/cef.reliability.parquet") as path:
                rows = pq.read_table(path).to_pylist()
        except Exception:
            rows = []
        out["reliability"] = [r for r in rows if wanted is None or r.get("direction") in wanted]
    return out
