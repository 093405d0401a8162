"""A release-direction worker with no database and no shared file system: it reads a direction's triplet rows
from the platform over HTTP, stages the direction on its own disk with the release writer
(``release_files.write_staged_direction``) and uploads the staged files as one archive. Django-free (httpx);
the task that calls it is ``exports.release.tasks.release_direction_remote_task``.

Configured in the worker's environment (``worker_client.platform``: the names the scoring workers use);
unset ``XQMEVAL_PLATFORM_URL``, the task stages the direction on the shared file system through the
database, as ``release_direction_task`` does. A direction is staged under ``release-staging/RELEASE_ID/``
of the worker's data directory and removed once the platform has it. Each request carries the direction's
job token (``X-Worker-Job``), which the task got from the platform with the direction.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from exports.release.domain import release_files, staged_upload
from worker_client import PlatformClient, TransferError, iter_lines_bytes, read_chunks

REPORT_MAX_CHARS = 2000  # a failure's text sent to the platform

__all__ = ["REPORT_MAX_CHARS", "ReleasePlatform", "TransferError", "direction_stage"]


@dataclass
class ReleasePlatform(PlatformClient):
    timeout: float = 120.0

    def _direction_url(self, release_id: int, direction_code: str, tail: str) -> str:
        return f"/api/workers/release-builds/{int(release_id)}/directions/{quote(direction_code, safe='')}/{tail}"

    def staging_dir(self, release_id: int) -> Path:
        return self.data_dir / "release-staging" / str(int(release_id))

    def direction_rows(self, release_id: int, direction_code: str, job_token: str | None = None):
        """A context manager giving (header, rows) of the direction's row stream (``staged_upload``)."""

        @contextlib.contextmanager
        def stream():
            url = self._direction_url(release_id, direction_code, "rows")
            with self.http.stream("GET", url, headers=self.job_headers(job_token)) as response:
                self.check(response)
                yield staged_upload.rows_decode(iter_lines_bytes(response))

        return stream()

    def direction_upload(
        self, release_id: int, direction_code: str, archive: Path, sha256: str, job_token: str | None = None
    ) -> dict:
        """PUT the staged direction's archive with its sha256; the platform's answer (201 stored, 200 had it)."""
        size = archive.stat().st_size
        with open(archive, "rb") as fh:
            response = self.http.put(
                self._direction_url(release_id, direction_code, "staged"),
                content=read_chunks(fh),
                headers={
                    "X-Staged-SHA256": sha256,
                    "Content-Length": str(size),
                    "Content-Type": staged_upload.ARCHIVE_MEDIA_TYPE,
                    **self.job_headers(job_token),
                },
            )
        self.check(response)
        return {**response.json(), "status": response.status_code}

    def direction_report(
        self, release_id: int, direction_code: str, *, status: str, error: str, job_token: str | None = None
    ) -> None:
        """Tell the platform a direction failed or is tried again (the release page shows it). Best effort:
        a platform out of reach keeps the release's lease to say the direction stopped."""
        try:
            response = self.http.post(
                self._direction_url(release_id, direction_code, "report"),
                json={"status": status, "error": error[:REPORT_MAX_CHARS]},
                headers=self.job_headers(job_token),
            )
            response.read()
        except Exception:  # reporting must not hide the fault being reported
            pass


def direction_stage(
    platform: ReleasePlatform, *, release_id: int, direction_code: str, job_token: str | None = None
) -> dict:
    """Stage one direction of a release on this worker and hand it to the platform: the rows are read from
    the platform (checked against the stream's trailer while they are written), the direction written into
    this worker's staging directory by the release writer, packed, uploaded with its sha256, and removed
    here once the platform has it. A direction this worker staged before from the same stamp (its task cut
    off mid-upload and delivered again) is sent again without reading the rows. Returns the platform's entry for the direction (triplets, digest)."""
    staging = platform.staging_dir(release_id)
    with platform.direction_rows(release_id, direction_code, job_token) as (header, rows):
        if header.get("direction") != direction_code or int(header.get("release", -1)) != int(release_id):
            raise TransferError(f"the platform sent the rows of {header.get('release')} {header.get('direction')}")
        formats = tuple(header["formats"])
        local = release_files.staged_direction(staging, direction_code)
        reused = bool(local and local.get("stamp") == header["stamp"] and local.get("formats") == sorted(formats))
        if reused:
            summary = local  # staged here before (a task cut off while uploading): sent again, rows unread
        else:
            summary = release_files.write_staged_direction(rows, direction_code, staging, formats, header["stamp"])
    archive = staging / ".upload" / f"{direction_code}.tar.gz"
    sha = staged_upload.archive_write(staging, direction_code, formats, archive)
    size = archive.stat().st_size
    answer = platform.direction_upload(release_id, direction_code, archive, sha, job_token)
    shutil.rmtree(staging / direction_code, ignore_errors=True)
    for name in (f"{direction_code}.bin", f"{direction_code}.json"):
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
