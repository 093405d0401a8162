"""Login throttling (django-axes) and its lockout answer.

Failed logins are counted per account and per client address, on the login form, the admin login and the
API's Basic authentication alike (they all go through ``django.contrib.auth.authenticate``). After
``AXES_FAILURE_LIMIT`` failures the account, or the address, is locked for ``AXES_COOLOFF_MINUTES``; the
answer is 429 with a message that says so (JSON under ``/api/``).
"""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render
from drf_spectacular.authentication import BasicScheme
from rest_framework.authentication import BasicAuthentication
from rest_framework.exceptions import APIException, AuthenticationFailed


class ThrottledBackend(AxesStandaloneBackend):
    """django-axes' backend; an ``authenticate`` call without a request (a management command, the test
    client's ``login``) has no client to count and is left to the next backend, not refused."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def client_ip(request) -> str:
    """REMOTE_ADDR, or behind ``PROXY_COUNT`` trusted proxies the address the outermost of them saw
    (X-Forwarded-For entries further left are the client's to forge)."""
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = settings.XQMEVAL_PROXY_COUNT
    if proxies <= 0:
        return remote
    chain = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    return chain[-proxies] if len(chain) >= proxies else remote


def lockout_message() -> str:
    minutes = settings.AXES_COOLOFF_MINUTES
    return (
        f"Too many failed logins for this account or from this address: logins are locked for {minutes:g} minute(s). "
        "Try again later, or ask an admin to unlock the account."
    )


def lockout_response(request, original_response=None, credentials=None):
    status = settings.AXES_HTTP_RESPONSE_CODE
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": lockout_message()}, status=status)
    return render(request, "registration/locked.html", {"message": lockout_message()}, status=status)


class LockedOut(APIException):
    status_code = 429
    default_code = "locked_out"


class ThrottledBasicAuthentication(BasicAuthentication):
    """DRF's Basic auth, answering 429 with the lockout message once django-axes has locked the account or
    client (axes marks the request it was given, which under DRF is the API's request wrapper)."""

    def authenticate_credentials(self, userid, password, request=None):
        try:
            found = super().authenticate_credentials(userid, password, request)
        except AuthenticationFailed:
            if getattr(request, "axes_locked_out", False):
                raise LockedOut(lockout_message()) from None
            raise
        return found


class ThrottledBasicScheme(BasicScheme):
    """The OpenAPI security scheme of ThrottledBasicAuthentication: plain HTTP Basic."""

    target_class = "core.auth.ThrottledBasicAuthentication"
