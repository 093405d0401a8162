"""Task name and queue routing shared by the worker (scoring.worker) and the platform that sends tasks
(exports.scores.tasks). No Celery app here: importing this must not create one in the web process."""

from __future__ import annotations

from scoring.registry import get_metric

TASK_NAME = "scoring.score_direction"
GPU_QUEUE = "gpu"  # metrics that need a GPU: only GPU workers consume it
ANY_QUEUE = "scoring"  # metrics that run anywhere: CPU and GPU workers consume it
# LLM judges: workers that reach the judge endpoint, or a .venv-vllm worker running vLLM in-process
# (vLLM and unbabel-comet cannot share an environment).
JUDGE_QUEUE = "judge"
_QUEUES = {"gpu": GPU_QUEUE, "judge": JUDGE_QUEUE}


def queue_for(metric: str) -> str:
    return _QUEUES.get(get_metric(metric).device, ANY_QUEUE)
