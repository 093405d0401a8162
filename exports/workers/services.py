"""The worker endpoints' write operations (``exports.workers.api``), in one place for both kinds of worker
with no database and no shared file system:

- worker tokens: created and revoked by an admin, checked on every request (who asks);
- scoring workers: the files of a ready release listed, the part files they upload verified and stored;
- release workers: a direction's rows read for them, the staged direction they upload checked against the
  platform's own records and moved into the release's staging, their failures recorded.

What a request may touch is the job token's (``exports.workers.grants``), checked by the views before any
of these runs. The records stay their stages': a release's directions are written through
``exports.release.services``, a scoring job's parts ingested by ``exports.scores``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, transaction

from core.domain.errors import NotFound
from core.storage import WORKER_PARTS, ReleaseFiles, storage_get
from exports.models import PartUpload, Release, ScoringJob, StagedUpload, WorkerToken
from exports.release import selectors as release_selectors
from exports.release import services as release_services
from exports.release.domain import release_files, staged_upload
from exports.release.domain.staged_upload import StagedConflict, StagedRefused
from exports.scores.domain import PartRefused, ScoringError, check_part_identity, open_part
from scoring.api import DIRECTION_RE, metric_slug


def _body_copy(body, out, *, length: int, chunk: int = 1024 * 1024) -> tuple[str, int]:
    """Copy at most ``length`` bytes of a request body (a worker's upload) into ``out`` a chunk at a time,
    hashing them as they pass: (sha256 hex, bytes received). Fewer bytes than declared means the sender
    was cut off; the caller refuses the upload with its own reason."""
    h, received = hashlib.sha256(), 0
    while received < length:
        data = body.read(min(chunk, length - received))
        if not data:
            break
        received += len(data)
        h.update(data)
        out.write(data)
    return h.hexdigest(), received


# ---- worker tokens and the scoring workers' files -------------------------------------------------------

TOKEN_PREFIX = "xqw_"
_CHUNK = 1024 * 1024


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_create(*, name: str, created_by=None) -> tuple[WorkerToken, str]:
    """A new worker token and its secret: the only time the secret exists outside the worker (only its
    sha256 is stored)."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = WorkerToken.objects.create(
        name=name.strip(), token_hash=_token_hash(secret), prefix=secret[:10], created_by=created_by
    )
    return token, secret


def tokens_revoke(*, tokens) -> int:
    from django.utils import timezone

    return tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def token_authenticate(*, secret: str) -> WorkerToken | None:
    """The active token with this secret, or None. Marks it used (at most once a minute)."""
    from datetime import timedelta

    from django.utils import timezone

    if not secret.startswith(TOKEN_PREFIX):
        return None
    token = WorkerToken.objects.filter(token_hash=_token_hash(secret), revoked_at__isnull=True).first()
    if token is not None:
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
            WorkerToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
    return token


def release_files_list(*, release: Release, only: str | None = None) -> dict[str, dict[str, Any]]:
    """Per direction of a ready release (or just ``only``): its ``test.parquet`` (``name`` in the release's
    files, bytes, sha256: the manifest's record, else hashed once, streamed from the storage, and cached by
    name, size and modification time). Read through the ``releases`` storage (``core.storage``)."""
    from django.core.cache import cache

    if release.status != Release.Status.READY:
        return {}
    files = ReleaseFiles.for_release(release)
    if files is None:
        return {}
    recorded = (release.manifest or {}).get("files") or {}
    out = {}
    for code in [only] if only else files.directions():
        rel = f"{code}/test.parquet"
        if not DIRECTION_RE.match(code) or not files.exists(rel):
            continue
        size = files.size(rel)
        info = recorded.get(rel) if isinstance(recorded.get(rel), dict) else {}
        sha = info.get("sha256") if info.get("bytes") == size else None
        if sha is None:
            key = "workers:sha256:" + hashlib.sha256(files.version_key(rel).encode()).hexdigest()
            sha = cache.get(key)
            if sha is None:
                sha = files.sha256(rel)
                cache.set(key, sha, timeout=None)
        out[code] = {"name": rel, "bytes": size, "sha256": sha, "files": files}
    return out


def part_receive(
    *, release: Release, metric: str, direction_code: str, declared_sha256: str, body, length: int, worker: WorkerToken
) -> tuple[PartUpload, bool]:
    """Take a part file a worker uploads (``body``: a stream of ``length`` bytes), verify it and store it.

    Refuses (``PartRefused`` naming the field) a body that is not ``length`` bytes or past the size bound,
    whose sha256 is not the declared one, or whose content belongs to another metric, direction or release;
    and a (release, metric, direction) with no scoring job. Idempotent by content: a part already stored for
    the job returns (its upload, False) and writes nothing. Nothing is stored unless everything checks."""
    declared = (declared_sha256 or "").strip().lower()
    if len(declared) != 64 or any(c not in "0123456789abcdef" for c in declared):
        raise PartRefused("sha256", "declare the part's sha256 (64 hex digits) in the X-Part-SHA256 header")
    job = (
        ScoringJob.objects.filter(release=release, metric=metric, direction__code=direction_code)
        .select_related("direction")
        .first()
    )
    if job is None:
        field = "metric" if not ScoringJob.objects.filter(release=release, metric=metric).exists() else "direction"
        raise PartRefused(field, f"release {release.pk} has no scoring job for {metric} {direction_code}")
    limit = settings.WORKER_PART_MAX_BYTES
    if length > limit:
        raise PartRefused("size", f"a part may have at most {limit} bytes, this one declares {length}")
    existing = PartUpload.objects.filter(job=job, sha256=declared).first()
    fd, tmp_name = tempfile.mkstemp(prefix="xqmeval-upload-", suffix=".parquet")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            sha256, received = _body_copy(body, out, length=length, chunk=_CHUNK)
        if received != length:  # the worker was cut off mid-upload: keep nothing of it
            raise PartRefused("body", f"received {received} of the {length} bytes declared")
        if sha256 != declared:
            raise PartRefused("sha256", f"the body's sha256 is {sha256}, the upload declares {declared}")
        if existing is not None:
            return existing, False
        versions = {
            release.version,
            str((release.manifest or {}).get("version", "")),
        }  # as the worker's manifest.json says
        check_part_identity(tmp, metric=metric, direction_code=direction_code, versions=versions)
        try:
            open_part(tmp, metric=metric, direction_code=direction_code)
        except ScoringError as exc:
            raise PartRefused("body", str(exc).replace(str(tmp), "part")) from None
        storage = storage_get(WORKER_PARTS)
        name = f"release-{release.pk}/{job.pk}-{_metric_file(metric)}-{direction_code}/{declared}.parquet"
        if not storage.exists(name):
            with open(tmp, "rb") as fh:
                name = storage.save(name, File(fh, name=name))
        try:
            with transaction.atomic():
                upload = PartUpload.objects.create(
                    job=job, worker=worker, sha256=declared, size=received, storage_name=name
                )
        except IntegrityError:  # the same part sent twice at once: the first one stored it
            return PartUpload.objects.get(job=job, sha256=declared), False
        return upload, True
    finally:
        tmp.unlink(missing_ok=True)


def _metric_file(metric: str) -> str:
    return metric_slug(metric)


# ---- directions staged by release workers (RELEASE_WORKERS=http) -------------------------------------------
# A release worker shares nothing with the platform but the broker and HTTP: it reads a direction's rows
# here, stages the direction on its own disk with the same writer, and uploads it; the platform checks the
# upload, moves it into the release's staging directory and records the direction done, as
# ``release_direction_run`` does on the shared file system. ``release_finish`` then closes the release.

STAGED_ERROR_MAX_CHARS = 2000


def _release_for_workers(release_id: int, direction_code: str) -> Release:
    release = Release.objects.select_related("project").filter(pk=release_id).first()
    if release is None:
        raise NotFound("no such release", "release")
    if release.status != Release.Status.BUILDING or not release.job:
        raise StagedConflict(
            "release", f"release {release.pk} is not being built by release workers (status {release.status})"
        )
    if direction_code not in (release.directions or {}):
        raise StagedRefused("direction", f"release {release.pk} stages no direction {direction_code!r}")
    return release


def direction_rows_read(*, release_id: int, direction_code: str, worker) -> tuple[dict, object]:
    """(header, rows) for a release worker staging ``direction``: the header says what it is staged from
    (release, version, formats, the build stamp), the rows are ``iter_triplet_rows``'s, streamed. The
    direction is recorded as running on that worker (one already staged from the current build is left
    done: a task delivered again only sends the same files)."""
    release = _release_for_workers(release_id, direction_code)
    project = release.project
    stamp = release_services.direction_stamp_get(project=project, direction_code=direction_code)
    entry = release.directions[direction_code]
    if not (entry.get("status") == "done" and entry.get("stamp") == stamp):
        release_services.direction_record(
            release=release,
            direction_code=direction_code,
            entry={"status": "running", "error": "", "worker": worker.name},
            total=len(release.directions),
        )
    header = {
        "release": release.pk,
        "version": release.version,
        "project": project.name,
        "direction": direction_code,
        "formats": list(release.job["formats"]),
        "stamp": stamp,
    }
    return header, release_selectors.iter_triplet_rows(project, direction_code)


def direction_staged_receive(
    *, release_id: int, direction_code: str, declared_sha256: str, body, length: int, worker
) -> tuple[object, bool]:
    """Take a staged direction a release worker uploads (``body``: a stream of ``length`` bytes, the archive
    of ``staged_upload.archive_write``), check it and move it into the release's staging directory.

    Refuses (naming the field) a body that is not ``length`` bytes or past ``RELEASE_UPLOAD_MAX_BYTES``, whose
    sha256 is not the declared one, an archive that does not hold the direction's files or whose files do
    not match its summary (``staged_upload.archive_unpack``); a release not being built by release workers
    or without this direction; rows read from a build that has changed since (``stamp``); and an archive
    that is not the data the platform sent: its rows' ids, order and values, its share of the content hash,
    its triplet ids per level and its JSONL/TSV files are checked against what the platform computes from
    its own rows (``staged_upload.staged_check``).

    Which upload is kept: only one that passes every check is ever stored, so a refused one changes nothing
    and cannot keep a later good one out. A direction already staged from the current build keeps the
    first upload that passed (any other that passes holds the same rows) and answers the others
    ``stored: False``. Idempotent by content: an archive already taken answers (its upload, False) and
    writes nothing. Returns (the ``StagedUpload`` recorded with the worker, whether the files were stored
    now)."""
    declared = (declared_sha256 or "").strip().lower()
    if len(declared) != 64 or any(c not in "0123456789abcdef" for c in declared):
        raise StagedRefused("sha256", "declare the archive's sha256 (64 hex digits) in the X-Staged-SHA256 header")
    release = _release_for_workers(release_id, direction_code)
    limit = settings.RELEASE_UPLOAD_MAX_BYTES
    if length > limit:
        raise StagedRefused("size", f"a staged direction may have at most {limit} bytes, this one declares {length}")
    formats = list(release.job["formats"])
    out_dir = Path(release.job["out_dir"])
    staged = release_services.staging_files_get(
        project_name=release.project.name, version=release.version, out_dir=out_dir
    )
    staging = release_services.staging_source_get(staged=staged)
    # on the file system beside the staging directory (same file system: storing is a rename)
    incoming = (
        out_dir.parent / f".{out_dir.name}.incoming"
        if staged.local
        else Path(tempfile.gettempdir()) / "xqmeval-release-incoming"
    )
    work = _work_folder(incoming, direction_code)
    try:
        archive = work / "staged.tar.gz"
        received = _archive_receive(body, archive, length, declared)
        existing = StagedUpload.objects.filter(release=release, direction=direction_code, sha256=declared).first()
        entry = release.directions.get(direction_code) or {}
        if (
            existing is not None
            and entry.get("status") == "done"
            and entry.get("digest") == existing.digest
            and release_files.staged_direction(staging, direction_code) is not None
        ):
            return existing, False
        summary = _archive_check(release, archive, work / "files", direction_code, formats)
        upload = {"sha256": declared, "size": received, "worker": worker}
        return _direction_store(release, staged, staging, work / "files", direction_code, formats, summary, **upload)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        with contextlib.suppress(OSError):
            incoming.rmdir()  # when no other upload is under way


def _direction_store(
    release, staged, staging, files: Path, direction_code, formats, summary: dict, *, sha256, size, worker
):
    """A checked direction's files stored into the staging directory and recorded as done, under the release's
    lock, unless the same rows are already staged from the current build; the upload recorded either way.
    Returns (the ``StagedUpload``, whether the files were stored now)."""
    with transaction.atomic():
        row = Release.objects.select_for_update().get(pk=release.pk)
        if row.status != Release.Status.BUILDING:
            raise StagedConflict("release", f"release {row.pk} is no longer being built (status {row.status})")
        now = (row.directions or {}).get(direction_code) or {}
        stored = not (
            now.get("status") == "done"
            and now.get("digest") == summary["digest"]
            and now.get("stamp") == summary["stamp"]
            and release_files.staged_direction(staging, direction_code) is not None
        )
        if stored:  # nothing of an earlier attempt stays; the summary last
            staged.direction_save(files, direction_code, staged_upload.archive_members(direction_code, formats))
            entry = {
                "status": "done",
                "triplets": summary["triplets"],
                "transplanted": summary["transplanted"],
                "digest": summary["digest"],
                "stamp": summary["stamp"],
                "error": "",
                "worker": worker.name,
            }
            release_services.direction_record(
                release=release, direction_code=direction_code, entry=entry, total=len(row.directions)
            )
        upload, _ = StagedUpload.objects.get_or_create(
            release=row,
            direction=direction_code,
            sha256=sha256,
            defaults={"worker": worker, "size": size, "digest": summary["digest"]},
        )
    return upload, stored


def _work_folder(incoming: Path, direction_code: str) -> Path:
    """A new folder for one upload under ``incoming``, made again when another upload removed it meanwhile."""
    for attempt in range(3):
        incoming.mkdir(parents=True, exist_ok=True)
        try:
            return Path(tempfile.mkdtemp(prefix=f"{direction_code}-", dir=incoming))
        except FileNotFoundError:  # another upload removed the folder once it was empty: make it again
            if attempt == 2:
                raise


def _archive_receive(body, archive: Path, length: int, declared: str) -> int:
    """The uploaded body written to ``archive``, refused unless it is all ``length`` bytes of the declared
    sha256. Returns the bytes received."""
    with open(archive, "wb") as out:
        sha256, received = _body_copy(body, out, length=length)
    if received != length:  # the worker was cut off mid-upload: keep nothing of it
        raise StagedRefused("body", f"received {received} of the {length} bytes declared")
    if sha256 != declared:
        raise StagedRefused("sha256", f"the body's sha256 is {sha256}, the upload declares {declared}")
    return received


def _archive_check(release: Release, archive: Path, files: Path, direction_code: str, formats: list[str]) -> dict:
    """The archive unpacked into ``files`` and checked against itself, the current build and the platform's
    own rows; returns its summary."""
    summary = staged_upload.archive_unpack(
        archive,
        files,
        direction_code=direction_code,
        formats=formats,
        max_unpacked=settings.RELEASE_UPLOAD_MAX_UNPACKED_BYTES,
    )
    if summary.get("stamp") != release_services.direction_stamp_get(
        project=release.project, direction_code=direction_code
    ):
        raise StagedConflict(
            "stamp",
            f"{direction_code} was staged from rows of an earlier build; the build changed since: run the release again",
        )
    # the archive agrees with itself; now with the platform's own rows, which the worker cannot recompute
    rows = release_selectors.iter_triplet_rows(release.project, direction_code)
    expected = release_files.direction_expected(rows, direction_code, formats)
    staged_upload.staged_check(files, direction_code=direction_code, expected=expected)
    return summary


def direction_failure_record(*, release_id: int, direction_code: str, status: str, error: str, worker) -> None:
    """A release worker says its direction failed for good (the release fails, naming it, as on the shared
    file system) or is tried again after a transient fault. A direction already staged keeps its files."""
    if status not in ("failed", "retrying"):
        raise StagedRefused("status", f"status {status!r}: say 'failed' or 'retrying'")
    release = _release_for_workers(release_id, direction_code)
    if (release.directions[direction_code] or {}).get("status") == "done":
        raise StagedConflict("direction", f"{direction_code} is staged; a report of another attempt changes nothing")
    reason = f"{(error or '').strip()[:STAGED_ERROR_MAX_CHARS] or 'no reason given'} (worker {worker.name})"
    if status == "retrying":
        release_services.direction_retrying_record(release_id=release.pk, direction_code=direction_code, reason=reason)
        return
    release_services.direction_record(
        release=release,
        direction_code=direction_code,
        entry={"status": "failed", "error": reason},
        total=len(release.directions),
        failure=f"{direction_code}: {reason}",
    )
