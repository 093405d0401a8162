"""Small HTTP helpers shared by the views, and the request body limits (#36.5)."""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme


def redirect_next(request, *fallback_args, **fallback_kwargs):
    """Redirect to the form's ``next`` (a page of this site only, e.g. the project page the action was
    started from), else to ``redirect(*fallback_args, **fallback_kwargs)``."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(*fallback_args, **fallback_kwargs)


def _signed_in(request) -> bool:
    """Whether the request carries a session cookie or API credentials (Basic auth): the limit is decided
    before either is checked (forged ones only buy the larger limit, which still bounds the body)."""
    return settings.SESSION_COOKIE_NAME in request.COOKIES or "HTTP_AUTHORIZATION" in request.META


def body_limit(request) -> int:
    return settings.REQUEST_BODY_MAX_BYTES if _signed_in(request) else settings.ANONYMOUS_BODY_MAX_BYTES


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
        limit = body_limit(request)
        if length > limit:
            return too_large(limit)
        return self.get_response(request)


class BoundedUploadHandler(FileUploadHandler):
    """Counts the bytes of a multipart body as they stream in (a body without a Content-Length gets past
    the middleware) and stops the upload at the limit; the form then sees no file."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self.received = 0
        self.limit = body_limit(self.request) if self.request is not None else settings.REQUEST_BODY_MAX_BYTES

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.limit:
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size):
        return None
