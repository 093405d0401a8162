"""Job tokens for the tests that call the worker endpoints themselves (a task carries one in production)."""

from __future__ import annotations

from exports.workers.grants import JobScope, job_token_issue


def job_token(kind: str, release_id: int, direction_code: str, metric: str = "") -> str:
    return job_token_issue(JobScope(kind, int(release_id), direction_code, metric))


def worker_auth(secret: str, kind: str, release_id: int, direction_code: str, metric: str = "") -> dict:
    """The test client's headers of a worker request: its worker token and the job's token."""
    return {
        "HTTP_AUTHORIZATION": f"Bearer {secret}",
        "HTTP_X_WORKER_JOB": job_token(kind, release_id, direction_code, metric),
    }
