"""The release workers' endpoints (RELEASE_WORKERS=http): what a release-direction worker with no database
and no shared file system needs, over HTTP with a worker token. Mounted under ``/api/workers/`` behind the
worker-token check of ``exports.scores.api`` (the stage that owns the tokens), which sets ``request.worker``.

- ``GET  release-builds/<id>/directions/<code>/rows``: the direction's triplet rows as JSON lines, a header
  first (release, version, formats, build stamp) and a trailer with the row count and sha256 last
  (``staged_upload.rows_encode``); gzip when the worker accepts it; streamed, memory bounded by the
  selector's block of gold pairs;
- ``PUT  release-builds/<id>/directions/<code>/staged``: the staged direction as a tar.gz, its sha256 in
  ``X-Staged-SHA256``; checked, moved into the release's staging and the direction recorded done
  (``services.direction_staged_receive``). 201 stored, 200 already had it;
- ``POST release-builds/<id>/directions/<code>/report``: ``{"status": "failed" | "retrying", "error": …}``.

A refusal answers JSON ``{"error", "field", "code"}`` with its status (400, 409, 413); an unknown release
answers 404.
"""

from __future__ import annotations

import json
import zlib
from functools import wraps

from django.http import Http404, JsonResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET, require_http_methods

from core.domain.errors import AppError, answers_as_missing
from exports.models import WorkerToken
from exports.release import services
from exports.release.domain import staged_upload

STREAM_CHUNK = 256 * 1024


def release_worker_view(view):
    """A view of a release worker: ``request.worker`` is the token's worker (set by the token check in
    front; without it the view answers 401), and a refusal answers JSON with the field named."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not isinstance(getattr(request, "worker", None), WorkerToken):
            return JsonResponse({"error": "a worker token is required", "field": "token"}, status=401)
        try:
            return view(request, *args, **kwargs)
        except AppError as exc:
            if answers_as_missing(exc):
                raise Http404(exc.message) from None
            status = 413 if exc.field == "size" else exc.status
            return JsonResponse({"error": exc.message, "field": exc.field, "code": exc.code}, status=status)

    return wrapped


@release_worker_view
@require_GET
def direction_rows(request, release_id: int, direction: str):
    header, rows = services.direction_rows_read(release_id=release_id, direction=direction, worker=request.worker)
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


@release_worker_view
@require_http_methods(["PUT"])
def direction_staged(request, release_id: int, direction: str):
    try:
        length = int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return JsonResponse({"error": "Content-Length is required", "field": "size"}, status=411)
    upload, stored = services.direction_staged_receive(
        release_id=release_id,
        direction=direction,
        declared_sha256=request.META.get("HTTP_X_STAGED_SHA256", ""),
        body=request,
        length=length,
        worker=request.worker,
    )
    return JsonResponse(
        {"sha256": upload.sha256, "bytes": upload.size, "digest": upload.digest, "stored": stored},
        status=201 if stored else 200,
    )


@release_worker_view
@require_http_methods(["POST"])
def direction_report(request, release_id: int, direction: str):
    try:
        data = json.loads(request.body or b"{}")
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except ValueError:
        return JsonResponse({"error": "send a JSON object {status, error}", "field": "body"}, status=400)
    services.direction_failure_record(
        release_id=release_id,
        direction=direction,
        status=str(data.get("status", "")),
        error=str(data.get("error", "")),
        worker=request.worker,
    )
    return JsonResponse({"recorded": True})
