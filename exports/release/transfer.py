"""A release-direction worker with no database and no shared file system: it reads a direction's triplet rows
from the platform over HTTP, stages the direction on its own disk with the release writer
(``release_files.write_staged_direction``) and uploads the staged files as one archive. Django-free (httpx);
the task that calls it is ``exports.release.tasks.release_direction_remote_task``.

Configured in the worker's environment (the names the scoring workers use):

- ``XQMEVAL_PLATFORM_URL``: the platform's base URL (https://… in production); unset, the task stages the
  direction on the shared file system through the database, as ``release_direction_task`` does;
- ``XQMEVAL_WORKER_TOKEN`` (or ``XQMEVAL_WORKER_TOKEN_FILE``): the worker token an admin created;
- ``XQMEVAL_WORKER_DATA``: the worker's own data directory, default ``~/.cache/xqmeval-worker``; a direction
  is staged under ``release-staging/RELEASE_ID/`` there and removed once the platform has it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from exports.release.domain import release_files, staged_upload

URL_ENV = "XQMEVAL_PLATFORM_URL"
TOKEN_ENV = "XQMEVAL_WORKER_TOKEN"
TOKEN_FILE_ENV = "XQMEVAL_WORKER_TOKEN_FILE"
DATA_ENV = "XQMEVAL_WORKER_DATA"
CHUNK = 1024 * 1024
REPORT_MAX_CHARS = 2000  # a failure's text sent to the platform


_PLATFORMS: dict[tuple, ReleasePlatform | None] = {}


class TransferError(RuntimeError):
    """The platform refused a request (the message has its reason and field): a retry cannot help."""


def is_transient(exc: BaseException) -> bool:
    """A fault worth another try: the network, a broken row stream, the platform's 5xx or 429."""
    import httpx

    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code >= 500 or exc.response.status_code == 429
    return isinstance(exc, httpx.TransportError | ConnectionError | TimeoutError)


@dataclass
class ReleasePlatform:
    url: str
    token: str
    data_dir: Path
    timeout: float = 120.0
    _http: object = field(default=None, repr=False, compare=False)

    @classmethod
    def from_env(cls, environ=os.environ) -> ReleasePlatform | None:
        """The platform this worker exchanges files with, or None (a worker on the shared file system); one
        per process and configuration, so its connections are reused from task to task."""
        key = tuple(environ.get(k, "") for k in (URL_ENV, TOKEN_ENV, TOKEN_FILE_ENV, DATA_ENV))
        if key not in _PLATFORMS:
            _PLATFORMS[key] = cls._from_env(environ)
        return _PLATFORMS[key]

    @classmethod
    def _from_env(cls, environ) -> ReleasePlatform | None:
        url = environ.get(URL_ENV, "").strip()
        if not url:
            return None
        token = environ.get(TOKEN_ENV, "").strip()
        if not token and environ.get(TOKEN_FILE_ENV):
            token = Path(environ[TOKEN_FILE_ENV]).read_text(encoding="utf-8").strip()
        if not token:
            raise TransferError(f"{URL_ENV} is set but no worker token: set {TOKEN_ENV} or {TOKEN_FILE_ENV}")
        data = Path(environ.get(DATA_ENV) or Path.home() / ".cache" / "xqmeval-worker")
        return cls(url=url.rstrip("/"), token=token, data_dir=data)

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

    def _check(self, response) -> None:
        if response.status_code >= 500 or response.status_code == 429:
            response.raise_for_status()  # transient: the task tries again
        if response.status_code >= 400:
            try:
                body = response.json()
                reason = f"{body.get('error')} (field {body.get('field')})"
            except ValueError:
                reason = response.text[:300]
            raise TransferError(
                f"{response.request.method} {response.request.url}: HTTP {response.status_code}: {reason}"
            )

    def _direction_url(self, release_id: int, direction: str, tail: str) -> str:
        return f"/api/workers/release-builds/{int(release_id)}/directions/{quote(direction, safe='')}/{tail}"

    def staging_dir(self, release_id: int) -> Path:
        return self.data_dir / "release-staging" / str(int(release_id))

    def direction_rows(self, release_id: int, direction: str):
        """A context manager giving (header, rows) of the direction's row stream (``staged_upload``)."""

        @contextlib.contextmanager
        def stream():
            with self.http.stream("GET", self._direction_url(release_id, direction, "rows")) as response:
                if response.status_code >= 400:
                    response.read()
                self._check(response)
                yield staged_upload.rows_decode(_iter_lines_bytes(response))

        return stream()

    def direction_upload(self, release_id: int, direction: str, archive: Path, sha256: str) -> dict:
        """PUT the staged direction's archive with its sha256; the platform's answer (201 stored, 200 had it)."""
        size = archive.stat().st_size
        with open(archive, "rb") as fh:
            response = self.http.put(
                self._direction_url(release_id, direction, "staged"),
                content=_read_chunks(fh),
                headers={
                    "X-Staged-SHA256": sha256,
                    "Content-Length": str(size),
                    "Content-Type": staged_upload.ARCHIVE_MEDIA_TYPE,
                },
            )
        self._check(response)
        return {**response.json(), "status": response.status_code}

    def direction_report(self, release_id: int, direction: str, *, status: str, error: str) -> None:
        """Tell the platform a direction failed or is tried again (the release page shows it). Best effort:
        a platform out of reach keeps the release's lease to say the direction stopped."""
        try:
            response = self.http.post(
                self._direction_url(release_id, direction, "report"),
                json={"status": status, "error": error[:REPORT_MAX_CHARS]},
            )
            response.read()
        except Exception:  # reporting must not hide the fault being reported
            pass


def _read_chunks(fh):
    while chunk := fh.read(CHUNK):
        yield chunk


def _iter_lines_bytes(response):
    """Lines of a streamed response as bytes, each with its newline (httpx decodes gzip)."""
    pending = b""
    for chunk in response.iter_bytes(CHUNK):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line + b"\n"
    if pending:
        yield pending


def direction_stage(platform: ReleasePlatform, *, release_id: int, direction: str) -> dict:
    """Stage one direction of a release on this worker and hand it to the platform: the rows are read from
    the platform (checked against the stream's trailer while they are written), the direction written into
    this worker's staging directory by the release writer, packed, uploaded with its sha256, and removed
    here once the platform has it. A direction this worker staged before from the same stamp (its task cut
    off mid-upload and delivered again) is sent again without reading the rows. Returns the platform's entry for the direction (triplets, digest)."""
    staging = platform.staging_dir(release_id)
    with platform.direction_rows(release_id, direction) as (header, rows):
        if header.get("direction") != direction or int(header.get("release", -1)) != int(release_id):
            raise TransferError(f"the platform sent the rows of {header.get('release')} {header.get('direction')}")
        formats = tuple(header["formats"])
        local = release_files.staged_direction(staging, direction)
        reused = bool(local and local.get("stamp") == header["stamp"] and local.get("formats") == sorted(formats))
        if reused:
            summary = local  # staged here before (a task cut off while uploading): sent again, rows unread
        else:
            summary = release_files.write_staged_direction(rows, direction, staging, formats, header["stamp"])
    archive = staging / ".upload" / f"{direction}.tar.gz"
    sha = staged_upload.archive_write(staging, direction, formats, archive)
    size = archive.stat().st_size
    answer = platform.direction_upload(release_id, direction, archive, sha)
    shutil.rmtree(staging / direction, ignore_errors=True)
    for name in (f"{direction}.bin", f"{direction}.json"):
        (staging / release_files.SPOOL_DIR / name).unlink(missing_ok=True)
    archive.unlink(missing_ok=True)
    for empty in (staging / ".upload", staging / release_files.SPOOL_DIR, staging):
        with contextlib.suppress(OSError):  # left while another direction of the release is staged here
            empty.rmdir()
    return {
        "triplets": summary["triplets"],
        "transplanted": summary["transplanted"],
        "digest": summary["digest"],
        "archive_sha256": sha,
        "archive_bytes": size,
        "stored": answer.get("stored"),
        "reused": reused,
    }
