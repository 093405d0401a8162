"""Small HTTP helpers shared by the views, and the request body limits (#36.5)."""

from __future__ import annotations

import base64
import copy
import os
import re
import socket
import tempfile
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from types import SimpleNamespace

from django.conf import settings
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload, TemporaryFileUploadHandler
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.utils.datastructures import MultiValueDict
from django.utils.http import url_has_allowed_host_and_scheme

from core.processes import process_alive


def redirect_next(request, *fallback_args, **fallback_kwargs):
    """Redirect to the form's ``next`` (a page of this site only, e.g. the project page the action was
    started from), else to ``redirect(*fallback_args, **fallback_kwargs)``."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(*fallback_args, **fallback_kwargs)


def _basic_credentials(request, credentials: str) -> bool:
    """HTTP Basic: the user's name and password, through ``authenticate`` (django-axes counts a failure)."""
    from django.contrib.auth import authenticate

    try:
        username, _, password = base64.b64decode(credentials, validate=True).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    # django-axes records a failed attempt with the request's form fields: a copy whose form is already
    # (empty) parsed keeps it from reading the body whose limit is being decided.
    probe = copy.copy(request)
    probe._post, probe._files = QueryDict(), MultiValueDict()
    user = authenticate(probe, username=username, password=password)
    return user is not None and user.is_active


# Authorization schemes (lower case) whose credentials lift the anonymous body limit, each with the check
# that they authenticate someone. An app adds its own in its AppConfig.ready (the worker tokens' "bearer":
# exports.apps), since the middleware runs before any URL, and so any view module, is loaded.
CREDENTIAL_CHECKS: dict[str, Callable[[HttpRequest, str], bool]] = {"basic": _basic_credentials}


def _session_user(request) -> bool:
    """Whether the session cookie names a live session of a signed-in user (its password unchanged since)."""
    from django.contrib.auth import get_user

    key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not key:
        return False
    store = import_module(settings.SESSION_ENGINE).SessionStore(key)
    return get_user(SimpleNamespace(session=store)).is_authenticated


def _signed_in(request) -> bool:
    """Whether the request is authenticated: by a signed-in session or by credentials that check out. A
    cookie or an Authorization header alone lifts nothing (#48.5): they are checked, only for a body past
    the anonymous limit, before the body is read."""
    if _session_user(request):
        return True
    scheme, _, credentials = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    check = CREDENTIAL_CHECKS.get(scheme.lower())
    return bool(check and credentials.strip() and check(request, credentials.strip()))


def body_limit(request, length: int | None = None) -> int:
    """The body limit of ``request``: the larger one once it is authenticated. With ``length``, a body
    within the anonymous limit is let through without checking who sends it."""
    if length is not None and length <= settings.ANONYMOUS_BODY_MAX_BYTES:
        return settings.ANONYMOUS_BODY_MAX_BYTES
    if not hasattr(request, "_xq_body_limit"):  # decided once per request (middleware and upload handler)
        request._xq_body_limit = settings.ANONYMOUS_BODY_MAX_BYTES  # while it is being decided
        if _signed_in(request):
            request._xq_body_limit = settings.REQUEST_BODY_MAX_BYTES
    return request._xq_body_limit


def too_large(limit: int) -> HttpResponse:
    return HttpResponse(
        f"Request body too large: at most {limit} bytes.\n", status=413, content_type="text/plain; charset=utf-8"
    )


class BodySizeLimitMiddleware:
    """413 for a body whose declared length is past the limit, before Django reads a byte of it: an
    anonymous 200 MB POST to the login page is never written to disk."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = body_limit(request, length)
        if length > limit:
            return too_large(limit)
        return self.get_response(request)


class BoundedUploadHandler(FileUploadHandler):
    """Counts the bytes of a multipart body as they stream in (a body without a Content-Length gets past
    the middleware) and stops the upload at the limit; the form then sees no file."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self.received = 0
        # a declared length within the anonymous limit is all Django reads: no need to ask who sends it
        self.limit = (
            body_limit(self.request, content_length) if self.request is not None else settings.REQUEST_BODY_MAX_BYTES
        )

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.limit:
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size):
        return None


# Django's temporary upload files (uploads past FILE_UPLOAD_MAX_MEMORY_SIZE) live in FILE_UPLOAD_TEMP_DIR, in
# the data directory, named with their host and process: a request ended normally removes its file; one
# killed (kill -9, an OOM kill) leaves it, and the next upload sweeps the files of processes that are gone
# (#48.5).
UPLOAD_PREFIX = "xq-upload-"


def _upload_owner() -> str:
    return f"{os.getpid()}@{re.sub(r'[^A-Za-z0-9]', '_', socket.gethostname())}"


class _OwnedTemporaryUploadedFile(TemporaryUploadedFile):
    def __init__(self, name, content_type, size, charset, content_type_extra=None):
        _, ext = os.path.splitext(name)
        file = tempfile.NamedTemporaryFile(
            prefix=f"{UPLOAD_PREFIX}{_upload_owner()}-", suffix=".upload" + ext, dir=settings.FILE_UPLOAD_TEMP_DIR
        )
        UploadedFile.__init__(self, file, name, content_type, size, charset, content_type_extra)


class SweptTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """Django's handler for large uploads, its files named by their owner process and swept once it is gone."""

    def new_file(self, *args, **kwargs):
        FileUploadHandler.new_file(self, *args, **kwargs)
        sweep_upload_files()
        self.file = _OwnedTemporaryUploadedFile(
            self.file_name, self.content_type, 0, self.charset, self.content_type_extra
        )


def sweep_upload_files(directory: str | None = None) -> list[str]:
    """Remove the upload files of this host's processes that are gone; another host's (a shared data
    directory) are its own to sweep. Returns what it removed."""
    removed = []
    host = _upload_owner().split("@", 1)[1]
    for path in Path(directory or settings.FILE_UPLOAD_TEMP_DIR).glob(UPLOAD_PREFIX + "*"):
        pid, _, rest = path.name[len(UPLOAD_PREFIX) :].partition("@")
        if not pid.isdigit() or not rest.startswith(host + "-") or process_alive(int(pid)):
            continue
        try:
            path.unlink()
            removed.append(str(path))
        except OSError:
            continue  # another request swept it first
    return removed
