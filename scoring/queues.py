"""Task name and queue routing shared by the worker (scoring.worker) and the platform that sends tasks
(exports.scores.tasks). No Celery app here: importing this must not create one in the web process."""
from __future__ import annotations

from scoring.registry import get_metric

TASK_NAME = "scoring.score_direction"
GPU_QUEUE = "gpu"  # metrics that need a GPU: only GPU workers consume it
ANY_QUEUE = "scoring"  # metrics that run anywhere: CPU and GPU workers consume it


def queue_for(metric: str) -> str:
    return GPU_QUEUE if get_metric(metric).device == "gpu" else ANY_QUEUE
