"""The platform as a worker sees it: a base URL, the worker token an admin created, and a data directory of
the worker's own, read from the environment (the same names for release and scoring workers):

- ``XQMEVAL_PLATFORM_URL``: the platform's base URL (https://… in production); unset, the worker shares the
  platform's file system and talks to no one over HTTP (``from_env`` gives None);
- ``XQMEVAL_WORKER_TOKEN`` (or ``XQMEVAL_WORKER_TOKEN_FILE``): the worker token (``Authorization: Bearer``),
  which says which worker asks;
- ``XQMEVAL_WORKER_DATA``: the worker's own data directory, default ``~/.cache/xqmeval-worker``.

Each task also carries a job token the platform issued for that job alone (a release direction, or a
scoring job's metric and direction, until an expiry); the worker sends it back in ``X-Worker-Job`` with
every request of that job, and the platform answers only what the job covers.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

URL_ENV = "XQMEVAL_PLATFORM_URL"
TOKEN_ENV = "XQMEVAL_WORKER_TOKEN"
TOKEN_FILE_ENV = "XQMEVAL_WORKER_TOKEN_FILE"
DATA_ENV = "XQMEVAL_WORKER_DATA"
JOB_HEADER = "X-Worker-Job"
REFUSAL_BODY_CHARS = 300  # of a refusal that is not JSON, in the error raised

_CLIENTS: dict[tuple, PlatformClient | None] = {}


class TransferError(RuntimeError):
    """The platform refused a request (the message has its reason and field): a retry cannot help."""


@dataclass
class PlatformClient:
    """One worker's connection to the platform; a worker's client (release, scoring) adds its requests."""

    url: str
    token: str
    data_dir: Path
    timeout: float = 60.0
    _http: object = field(default=None, repr=False, compare=False)  # one connection pool per worker process

    refusal: ClassVar[type[Exception]] = TransferError  # what a refused request raises (a client's own kind)

    @classmethod
    def from_env(cls, environ=os.environ):
        """The platform this worker exchanges files with, or None (a shared file system); one per process,
        client kind and configuration, so its connections are reused from task to task."""
        key = (
            cls.__module__,
            cls.__qualname__,
            *(environ.get(k, "") for k in (URL_ENV, TOKEN_ENV, TOKEN_FILE_ENV, DATA_ENV)),
        )
        if key not in _CLIENTS:
            _CLIENTS[key] = cls._from_env(environ)
        return _CLIENTS[key]

    @classmethod
    def _from_env(cls, environ):
        url = environ.get(URL_ENV, "").strip()
        if not url:
            return None
        token = environ.get(TOKEN_ENV, "").strip()
        if not token and environ.get(TOKEN_FILE_ENV):
            token = Path(environ[TOKEN_FILE_ENV]).read_text(encoding="utf-8").strip()
        if not token:
            raise cls.refusal(f"{URL_ENV} is set but no worker token: set {TOKEN_ENV} or {TOKEN_FILE_ENV}")
        data = Path(environ.get(DATA_ENV) or Path.home() / ".cache" / "xqmeval-worker")
        return cls(url=url.rstrip("/"), token=token, data_dir=data)

    def connect(self) -> None:
        """Make the HTTP client now (a worker does at start: building its TLS context takes a while)."""
        _ = self.http

    @property
    def http(self):
        if self._http is None:
            import httpx

            self._http = httpx.Client(
                base_url=self.url,
                headers={"Authorization": f"Bearer {self.token}"},
                timeout=self.timeout,
                follow_redirects=False,
            )
        return self._http

    @staticmethod
    def job_headers(job_token: str | None) -> dict[str, str]:
        """The header that names the job a request is for (none for a worker given no job token)."""
        return {JOB_HEADER: job_token} if job_token else {}

    def refused(self, response) -> Exception:
        """The client's refusal for a 4xx answer, with the platform's reason and field."""
        with contextlib.suppress(Exception):
            response.read()  # a streamed answer has not read its body yet
        try:
            body = response.json()
            reason = f"{body.get('error')} (field {body.get('field')})"
        except ValueError:
            reason = response.text[:REFUSAL_BODY_CHARS]
        return self.refusal(f"{response.request.method} {response.request.url}: HTTP {response.status_code}: {reason}")

    def check(self, response) -> None:
        """Raise for an answer that is not a success: an HTTPStatusError for a 5xx or 429 (transient:
        ``worker_client.faults``), the client's refusal for any other 4xx."""
        if response.status_code >= 500 or response.status_code == 429:
            with contextlib.suppress(Exception):
                response.read()
            response.raise_for_status()
        if response.status_code >= 400:
            raise self.refused(response)
