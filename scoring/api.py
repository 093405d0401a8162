"""The public surface of ``scoring``: the one module the platform (``xqmeval``, ``core``, ``injection``,
``annotation``, ``exports``) imports. Everything else in the package is the workers' own and may change
without notice; an import-linter contract (``pyproject.toml``) refuses any other ``scoring`` import from the
platform. A name the platform needs is added here, not imported from where it lives.

Importing this module loads no model and creates no Celery app: the registry lists metrics without their
libraries, and the runner's part-file layout needs only pyarrow.
"""

from __future__ import annotations

from scoring.faults import is_transient
from scoring.judges.engine import JudgeConfig
from scoring.queues import ANY_QUEUE, GPU_QUEUE, JUDGE_QUEUE, TASK_NAME, queue_for
from scoring.registry import (
    BatchResult,
    Family,
    MetricError,
    MetricSpec,
    Scorer,
    Segment,
    all_metrics,
    get_metric,
    route_options,
)
from scoring.release import DIRECTION_RE, open_release
from scoring.runner import META_KEY, ScoreOptions, metric_slug, part_path, score_release, score_task

__all__ = [
    # the metric registry: what each metric needs, which way is better, the options it takes
    "Family",
    "MetricError",
    "MetricSpec",
    "Scorer",
    "Segment",
    "BatchResult",
    "all_metrics",
    "get_metric",
    "route_options",
    # judge settings, checked where a run is asked for (the worker would refuse them)
    "JudgeConfig",
    # the release directory a worker reads and the part files it writes
    "open_release",
    "DIRECTION_RE",
    "META_KEY",
    "metric_slug",
    "part_path",
    "ScoreOptions",
    "score_release",
    "score_task",
    # sending work to the scoring workers
    "TASK_NAME",
    "ANY_QUEUE",
    "GPU_QUEUE",
    "JUDGE_QUEUE",
    "queue_for",
    # which faults a retry can cure
    "is_transient",
]
