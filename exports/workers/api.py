"""The worker endpoints, one module for both kinds of worker with no database and no shared file system: a
worker token (``Authorization: Bearer xqw_…``, who asks) and the job token its task carries
(``X-Worker-Job: xqj_…``, what it may touch: ``exports.workers.grants``) on every request.

Scoring workers (the job: a release's metric and direction):

- ``GET  api/workers/releases/<id>/``: the release's manifest and, per direction, its ``test.parquet``
  with size, sha256 and URL;
- ``GET  api/workers/releases/<id>/files/<direction>/test.parquet``: the file, with single-range
  requests (RFC 9110: ``Range: bytes=N-``, 206/416, ``If-Range`` on the sha256 ETag) so a cut download
  resumes;
- ``PUT  api/workers/releases/<id>/parts/<metric>/<direction>``: a part file, its sha256 in
  ``X-Part-SHA256``; verified, stored (``services.part_receive``), and ``collect_scores`` queued. 201
  stored, 200 already had it, 4xx JSON ``{"error", "field"}`` when refused.

Release workers (RELEASE_WORKERS=http; the job: a release's direction being built):

- ``GET  release-builds/<id>/directions/<code>/rows``: the direction's triplet rows as JSON lines, a header
  first (release, version, formats, build stamp) and a trailer with the row count and sha256 last
  (``staged_upload.rows_encode``); gzip when the worker accepts it; streamed, memory bounded by the
  selector's block of gold pairs;
- ``PUT  release-builds/<id>/directions/<code>/staged``: the staged direction as a tar.gz, its sha256 in
  ``X-Staged-SHA256``; checked against the platform's own records, moved into the release's staging and
  the direction recorded done (``services.direction_staged_receive``). 201 stored, 200 already had it;
- ``POST release-builds/<id>/directions/<code>/report``: ``{"status": "failed" | "retrying", "error": …}``.

Release files are read through the ``releases`` storage (``core.storage``): the release's directory on
the local file system, or the bucket it was published to (a byte range is a ranged read there).

A worker token opens these and nothing else (the rest of the site knows only sessions and Basic auth),
and a session opens none of these. Without a worker token, or without a valid job token, a request
answers 401; a job token answers only its own job, and anything else (another release, direction or
metric, another kind of job) answers 404, as a missing thing. A refusal answers JSON
``{"error", "field"[, "code"]}`` with its status (400, 409, 413).
"""

from __future__ import annotations

import json
import zlib
from functools import wraps

from django.db import transaction
from django.http import FileResponse, Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from core.domain.errors import AppError
from core.errors import answering_refusals
from exports.models import Release
from exports.release.domain import staged_upload
from exports.scores import tasks as score_tasks
from exports.scores.domain import PartRefused, byte_range
from exports.workers import grants, services

STREAM_CHUNK = 256 * 1024


def _unauthorized(reason: str, field: str = "token") -> JsonResponse:
    response = JsonResponse({"error": reason, "field": field}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="xqmeval-workers"'
    return response


def job_view(kind: str):
    """A view of one kind of job (``release`` or ``scoring``): a worker token in ``Authorization: Bearer``
    (the worker goes to ``request.worker``) and a job token of that kind covering the release, direction
    and metric the URL names (its scope goes to ``request.job``)."""

    def decorate(view):
        @csrf_exempt  # no cookies: tokens, never a session, authenticate these requests
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            scheme, _, secret = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
            if scheme.lower() != "bearer" or not secret.strip():
                return _unauthorized("a worker token is required (Authorization: Bearer xqw_…)")
            worker = services.token_authenticate(secret=secret.strip())
            if worker is None:
                return _unauthorized("unknown or revoked worker token")
            try:
                scope = grants.job_token_read(request.META.get("HTTP_X_WORKER_JOB", ""))
            except grants.JobTokenRefused as exc:
                return _unauthorized(exc.reason, "job")
            if not scope.covers(kind, kwargs["release_id"], kwargs.get("direction_code"), kwargs.get("metric")):
                # another job's release, direction or metric: as missing as one that does not exist
                return JsonResponse({"error": "no such job for this job token", "field": "job"}, status=404)
            request.worker, request.job = worker, scope
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def refusals_as_json(view):
    """A refusal (``AppError``) answers JSON with the field named; one that answers as missing, 404."""
    return answering_refusals(view, _refusal_json, missing=lambda exc: Http404(exc.message))


def _refusal_json(request, exc: AppError) -> JsonResponse:
    status = 413 if exc.field == "size" else exc.status
    return JsonResponse({"error": exc.message, "field": exc.field, "code": exc.code}, status=status)


def _declared_length(request) -> int | None:
    """An upload's Content-Length (the services read exactly that many bytes), or None without one."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


def _upload(request, sha256_header: str) -> dict | None:
    """What a worker's PUT gives the service that receives it: the sha256 it declares in ``sha256_header``, the
    body streamed with its length, the worker; None without a Content-Length (``_length_required``)."""
    length = _declared_length(request)
    if length is None:
        return None
    declared = request.META.get(sha256_header, "")
    return {"declared_sha256": declared, "body": request, "length": length, "worker": request.worker}


def _length_required() -> JsonResponse:
    return JsonResponse({"error": "Content-Length is required", "field": "size"}, status=411)


# ---- scoring workers -------------------------------------------------------------------------------------


def _ready_release(release_id: int) -> Release:
    release = Release.objects.filter(pk=release_id, status=Release.Status.READY).first()
    if release is None:
        raise Http404("no such release")
    return release


@job_view("scoring")
@require_GET
def release_manifest(request, release_id: int):
    release = _ready_release(release_id)
    files = services.release_files_list(release=release)
    return JsonResponse(
        {
            "release": release.pk,
            "version": release.version,
            "content_hash": release.content_hash,
            "manifest": release.manifest,
            "directions": {
                code: {
                    "bytes": info["bytes"],
                    "sha256": info["sha256"],
                    "url": request.build_absolute_uri(reverse("workers:release_file", args=[release.pk, code])),
                }
                for code, info in files.items()
            },
        }
    )


@job_view("scoring")
@require_http_methods(["GET", "HEAD"])
def release_file(request, release_id: int, direction_code: str):
    release = _ready_release(release_id)
    info = services.release_files_list(release=release, only=direction_code).get(direction_code)
    if info is None:
        raise Http404("no such direction")
    size, etag = info["bytes"], f'"{info["sha256"]}"'
    wanted = request.META.get("HTTP_RANGE")
    if_range = request.META.get("HTTP_IF_RANGE")
    if if_range and if_range.strip() != etag:
        wanted = None  # the file changed since the worker's first bytes: send it whole
    try:
        span = byte_range(wanted, size)
    except ValueError:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    files, rel = info["files"], info["name"]  # read through the releases storage (core.storage)
    if span is None and files.local:  # a file on this disk: the server may hand it to sendfile
        response = FileResponse(files.open(rel), content_type="application/vnd.apache.parquet")
        response["Content-Length"] = str(size)
    elif span is None:
        response = StreamingHttpResponse(files.stream(rel), content_type="application/vnd.apache.parquet")
        response["Content-Length"] = str(size)
    else:
        start, end = span  # from object storage a ranged read: only these bytes leave the bucket
        response = StreamingHttpResponse(
            files.stream(rel, start, end), content_type="application/vnd.apache.parquet", status=206
        )
        response["Content-Length"] = str(end - start + 1)
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = etag
    response["X-Content-SHA256"] = info["sha256"]
    return response


@job_view("scoring")
@require_http_methods(["PUT"])
def upload_part(request, release_id: int, metric: str, direction_code: str):
    release = _ready_release(release_id)
    received = _upload(request, "HTTP_X_PART_SHA256")
    if received is None:
        return _length_required()
    try:
        upload, created = services.part_receive(
            release=release, metric=metric, direction_code=direction_code, **received
        )
    except PartRefused as exc:
        status = {"size": 413}.get(exc.field, 400)
        return JsonResponse({"error": str(exc), "field": exc.field}, status=status)
    if created:  # the platform ingests it (the scoring task's own callback may come later, or never)
        transaction.on_commit(lambda: score_tasks.collect_uploaded(release_id=release.pk, job_id=upload.job_id))
    return JsonResponse(
        {"sha256": upload.sha256, "bytes": upload.size, "job": upload.job_id, "stored": created},
        status=201 if created else 200,
    )


# ---- release workers -------------------------------------------------------------------------------------


@job_view("release")
@refusals_as_json
@require_GET
def direction_rows(request, release_id: int, direction_code: str):
    header, rows = services.direction_rows_read(
        release_id=release_id, direction_code=direction_code, worker=request.worker
    )
    lines = staged_upload.rows_encode(header, rows)
    gzip = "gzip" in request.META.get("HTTP_ACCEPT_ENCODING", "")
    response = StreamingHttpResponse(
        _gzipped(lines) if gzip else _batched(lines), content_type=staged_upload.ROWS_MEDIA_TYPE
    )
    if gzip:
        response["Content-Encoding"] = "gzip"
    response["Cache-Control"] = "no-store"
    return response


def _batched(lines):
    pending, size = [], 0
    for line in lines:
        pending.append(line)
        size += len(line)
        if size >= STREAM_CHUNK:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def _gzipped(lines):
    """gzip of the stream, the header flushed at once (a worker that staged the direction before reads only
    the header), the rest in chunks as they fill."""
    gz = zlib.compressobj(1, zlib.DEFLATED, 31)  # level 1: most of the saving, a fraction of the time
    it = iter(lines)
    yield gz.compress(next(it)) + gz.flush(zlib.Z_SYNC_FLUSH)
    for chunk in _batched(it):
        out = gz.compress(chunk)
        if out:
            yield out
    yield gz.flush()


@job_view("release")
@refusals_as_json
@require_http_methods(["PUT"])
def direction_staged(request, release_id: int, direction_code: str):
    received = _upload(request, "HTTP_X_STAGED_SHA256")
    if received is None:
        return _length_required()
    upload, stored = services.direction_staged_receive(release_id=release_id, direction_code=direction_code, **received)
    return JsonResponse(
        {"sha256": upload.sha256, "bytes": upload.size, "digest": upload.digest, "stored": stored},
        status=201 if stored else 200,
    )


@job_view("release")
@refusals_as_json
@require_http_methods(["POST"])
def direction_report(request, release_id: int, direction_code: str):
    try:
        data = json.loads(request.body or b"{}")
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except ValueError:
        return JsonResponse({"error": "send a JSON object {status, error}", "field": "body"}, status=400)
    services.direction_failure_record(
        release_id=release_id,
        direction_code=direction_code,
        status=str(data.get("status", "")),
        error=str(data.get("error", "")),
        worker=request.worker,
    )
    return JsonResponse({"recorded": True})
