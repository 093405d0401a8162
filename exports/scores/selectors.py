"""Reads of the scoring stage: job states as the result backend reports them, and scores by metric,
direction and level. Nothing here writes: ingesting finished jobs is ``exports.scores.services.sync_jobs``,
run by the ``collect_scores`` task (queued by each scoring task when it ends) or by the ``score`` command.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import Avg, Count

from exports.models import MetricScore, Release, ScoringJob
from scoring.registry import MetricError, get_metric


@dataclass
class JobState:
    job: ScoringJob
    state: str  # the Celery state as last seen
    done: int = 0
    total: int = 0
    info: Any = None  # the backend's result or exception, as last seen

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


def task_id_for(job: ScoringJob) -> str:
    return f"xqmeval-score-{job.pk}"


def backend_state(job: ScoringJob, app) -> JobState:
    """The job as its task's result backend sees it (``app``: the Celery app); a finished job's own status."""
    if job.status in (ScoringJob.Status.DONE, ScoringJob.Status.FAILED):
        return JobState(job, state=job.status.upper())
    result = app.AsyncResult(task_id_for(job))
    state, info = result.state, result.info
    js = JobState(job, state=state, info=info)
    if state in ("STARTED", "PROGRESS", "RETRY") and isinstance(info, dict):
        js.done, js.total = int(info.get("done", 0)), int(info.get("total", 0))
    return js


def job_states(*, release: Release, app) -> list[JobState]:
    """Every job of ``release`` with its live progress, read-only (the page and its progress poll)."""
    jobs = ScoringJob.objects.filter(release=release).select_related("direction").order_by("metric", "direction__code")
    return [backend_state(job, app) for job in jobs]



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
