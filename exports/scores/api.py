"""The worker endpoints: what a scoring worker with no shared file system needs from the platform, over
HTTP with a worker token (``Authorization: Bearer xqw_…``) and nothing else.

- ``GET  api/workers/releases/<id>/``: the release's manifest and, per direction, its ``test.parquet``
  with size, sha256 and URL;
- ``GET  api/workers/releases/<id>/files/<direction>/test.parquet``: the file, with single-range
  requests (RFC 9110: ``Range: bytes=N-``, 206/416, ``If-Range`` on the sha256 ETag) so a cut download
  resumes;
- ``PUT  api/workers/releases/<id>/parts/<metric>/<direction>``: a part file, its sha256 in
  ``X-Part-SHA256``; verified, stored (``exports.scores.services.part_receive``), and ``collect_scores``
  queued. 201 stored, 200 already had it, 4xx JSON ``{"error", "field"}`` when refused.

Release files are read through the ``releases`` storage (``core.storage``): the release's directory on
the local file system, or the bucket it was published to (a byte range is a ranged read there).
``release_direction_*``: the release workers' endpoints (``exports.release.api``) behind the same check.

A worker token opens these and nothing else (the rest of the site knows only sessions and Basic auth),
and a session opens none of these. Anything a token may not see answers 404, as a missing thing.
"""

from __future__ import annotations

from functools import wraps

from django.db import transaction
from django.http import FileResponse, Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from exports.models import Release
from exports.release import api as release_api
from exports.scores import services, tasks
from exports.scores.domain import PartRefused, byte_range


def _unauthorized(reason: str) -> JsonResponse:
    response = JsonResponse({"error": reason, "field": "token"}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="xqmeval-workers"'
    return response


def worker_only(view):
    """A worker token in ``Authorization: Bearer``; the worker goes to ``request.worker``."""

    @csrf_exempt  # no cookies: a token, never a session, authenticates these requests
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        kind, _, secret = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if kind.lower() != "bearer" or not secret.strip():
            return _unauthorized("a worker token is required (Authorization: Bearer xqw_…)")
        worker = services.token_authenticate(secret=secret.strip())
        if worker is None:
            return _unauthorized("unknown or revoked worker token")
        request.worker = worker
        return view(request, *args, **kwargs)

    return wrapped


def _ready_release(release_id: int) -> Release:
    release = Release.objects.filter(pk=release_id, status=Release.Status.READY).first()
    if release is None:
        raise Http404("no such release")
    return release


@worker_only
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


@worker_only
@require_http_methods(["GET", "HEAD"])
def release_file(request, release_id: int, direction: str):
    release = _ready_release(release_id)
    info = services.release_files_list(release=release, only=direction).get(direction)
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


@worker_only
@require_http_methods(["PUT"])
def upload_part(request, release_id: int, metric: str, direction: str):
    release = _ready_release(release_id)
    try:
        length = int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return JsonResponse({"error": "Content-Length is required", "field": "size"}, status=411)
    try:
        upload, created = services.part_receive(
            release=release,
            metric=metric,
            direction=direction,
            declared_sha256=request.META.get("HTTP_X_PART_SHA256", ""),
            body=request,
            length=length,
            worker=request.worker,
        )
    except PartRefused as exc:
        status = {"size": 413}.get(exc.field, 400)
        return JsonResponse({"error": str(exc), "field": exc.field}, status=status)
    if created:  # the platform ingests it (the scoring task's own callback may come later, or never)
        transaction.on_commit(lambda: tasks.collect_uploaded(release_id=release.pk, job_id=upload.job_id))
    return JsonResponse(
        {"sha256": upload.sha256, "bytes": upload.size, "job": upload.job_id, "stored": created},
        status=201 if created else 200,
    )


# The release workers' endpoints (exports.release.api) behind the same worker tokens: the tokens are this
# stage's, and a release view may not import a later stage, so the check is put in front of them here.
release_direction_rows = worker_only(release_api.direction_rows)
release_direction_staged = worker_only(release_api.direction_staged)
release_direction_report = worker_only(release_api.direction_report)
