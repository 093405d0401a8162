"""Job tokens: what one worker request may touch. The platform issues one with each task it sends to a worker
with no shared file system (a release direction: ``exports.release.tasks``; a scoring job:
``exports.scores.tasks``), the worker sends it back in ``X-Worker-Job`` beside its worker token, and the
worker endpoints (``exports.workers.api``) answer only what it covers, until it expires.

A job token names its kind (``release`` or ``scoring``), the release, the direction and, for scoring, the
metric, with an expiry (``WORKER_JOB_TOKEN_MAX_AGE`` seconds after it was issued); it is signed with the
platform's ``SECRET_KEY`` (Django's signing, a salt of its own), so a worker can neither make one nor
widen the one it has. Nothing is stored: a token is checked by its signature and expiry alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.core import signing

PREFIX = "xqj_"
SALT = "xqmeval.workers.job-token"
KINDS = ("release", "scoring")
MAX_CHARS = 2000  # a header longer than any token the platform issues is refused unread


class JobTokenRefused(Exception):
    """A job token that is missing, not the platform's, or expired (``reason`` says which)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class JobScope:
    """The one job a token opens: the release's direction a release worker stages, or the (metric,
    direction) of a release a scoring worker scores."""

    kind: str
    release_id: int
    direction_code: str
    metric: str = ""

    def covers(self, kind: str, release_id: int, direction_code: str | None = None, metric: str | None = None) -> bool:
        """Whether a request of ``kind`` on ``release_id`` (and ``direction_code``, ``metric`` where the request
        names them) is this job's."""
        return (
            kind == self.kind
            and int(release_id) == self.release_id
            and (direction_code is None or direction_code == self.direction_code)
            and (metric is None or metric == self.metric)
        )

    def describe(self) -> str:
        what = f"{self.metric} {self.direction_code}" if self.metric else self.direction_code
        return f"the {self.kind} job of release {self.release_id} {what}"


def job_token_issue(scope: JobScope, *, now: float | None = None) -> str:
    """A token for ``scope``, good for ``WORKER_JOB_TOKEN_MAX_AGE`` seconds from ``now``."""
    if scope.kind not in KINDS:
        raise ValueError(f"job kind {scope.kind!r}: one of {', '.join(KINDS)}")
    expires = int((time.time() if now is None else now) + settings.WORKER_JOB_TOKEN_MAX_AGE)
    payload = {"k": scope.kind, "r": int(scope.release_id), "d": scope.direction_code, "m": scope.metric, "e": expires}
    return PREFIX + signing.dumps(payload, salt=SALT)


def job_token_read(token: str, *, now: float | None = None) -> JobScope:
    """The scope of a token the platform issued and that has not expired; ``JobTokenRefused`` otherwise."""
    token = (token or "").strip()
    if not token:
        raise JobTokenRefused("a job token is required (X-Worker-Job: the token sent with the task)")
    if not token.startswith(PREFIX) or len(token) > MAX_CHARS:
        raise JobTokenRefused("not a job token of this platform")
    try:
        payload = signing.loads(token[len(PREFIX) :], salt=SALT)
        scope = JobScope(str(payload["k"]), int(payload["r"]), str(payload["d"]), str(payload.get("m") or ""))
        expires = int(payload["e"])
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise JobTokenRefused("not a job token of this platform") from None
    if expires <= (time.time() if now is None else now):
        raise JobTokenRefused(f"the job token of {scope.describe()} expired; the job is sent again with a new one")
    return scope
