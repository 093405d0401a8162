"""The worker protocol's client: what a worker with no database and no shared file system needs to talk to
the platform over HTTP, shared by the release workers (``exports.release.transfer``) and the scoring
workers (``scoring.transfer``). Django-free: it needs only ``httpx``.

- ``worker_client.platform``: reading the worker's environment (URL, worker token, data directory), one
  connection pool per process, a job's token sent with each request, refusals told from faults;
- ``worker_client.faults``: which faults a later try can cure (the network, the platform's 5xx and 429),
  and the backoff between tries;
- ``worker_client.files``: chunked reads, line streams, sha256 of a file, atomic writes.

Every module is imported here, so a worker whose code is on the path only while its app loads
(``celery -A scoring.worker`` from the repository root) has all of them once ``scoring.worker`` is loaded.
"""

from worker_client import faults, files, platform
from worker_client.faults import backoff, is_transient, network_faults
from worker_client.files import CHUNK, iter_lines_bytes, read_chunks, sha256_file, write_atomic
from worker_client.platform import (
    DATA_ENV,
    JOB_HEADER,
    TOKEN_ENV,
    TOKEN_FILE_ENV,
    URL_ENV,
    PlatformClient,
    TransferError,
)

__all__ = [
    "CHUNK",
    "DATA_ENV",
    "JOB_HEADER",
    "TOKEN_ENV",
    "TOKEN_FILE_ENV",
    "URL_ENV",
    "PlatformClient",
    "TransferError",
    "backoff",
    "faults",
    "files",
    "is_transient",
    "iter_lines_bytes",
    "network_faults",
    "platform",
    "read_chunks",
    "sha256_file",
    "write_atomic",
]
