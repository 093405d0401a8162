"""How an ``AppError`` (``core.domain.errors``) answers, in one place per kind of caller: the API's DRF
exception handler (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``) and two helpers of the HTML views; views of another
kind (the worker endpoints' JSON) wrap themselves with ``answering_refusals`` as the HTML helper does. Views and API
views call services and let the error through; none catches it to word its own answer.

- Invalid, Conflict and a visible Forbidden: their status (400 or the subclass's own, e.g. 422; 409; 403) with
  ``{"detail": message, "field": field, "code": code}``; a page shows the message.
- NotFound and a hidden Forbidden: exactly what a missing thing answers (DRF's 404 body, the site's 404 page),
  so no answer tells whether a thing the caller may not see exists.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.shortcuts import render
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from core import access
from core.domain.errors import AppError, answers_as_missing


def api_body(exc: AppError) -> dict:
    return {"detail": exc.message, "field": exc.field, "code": exc.code}


def api_exception_handler(exc, context):
    """DRF's handler, with an ``AppError`` answered as its kind says (see the module's docstring)."""
    if isinstance(exc, AppError):
        if answers_as_missing(exc):
            return exception_handler(access.not_found(), context)  # DRF's answer to a missing thing, byte for byte
        set_rollback()  # as DRF does for its own exceptions: nothing of a refused request is committed
        return Response(api_body(exc), status=exc.status)
    return exception_handler(exc, context)


def answers_refusals(view=None, *, template: str = "refused.html"):
    """Decorate an HTML view: an ``AppError`` it raises renders ``template`` with the message and the error's
    status; NotFound and a hidden Forbidden answer as a missing page (``access.not_found``)."""

    def decorate(view):
        return answering_refusals(
            view,
            lambda request, exc: render(
                request, template, {"message": exc.message, "field": exc.field}, status=exc.status
            ),
            missing=lambda exc: access.not_found(),
        )

    return decorate(view) if view is not None else decorate


def answering_refusals(view, answer, *, missing):
    """``view`` with an ``AppError`` it raises answered by ``answer(request, exc)``; one that answers as missing
    raises ``missing(exc)`` instead (the caller's kind of 404), so the two stay apart in every kind of view."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except AppError as exc:
            if answers_as_missing(exc):
                raise missing(exc) from None
            return answer(request, exc)

    return wrapper


class RefusalAsMessage:
    """``with RefusalAsMessage(request) as refusal:`` around a form's write: an ``AppError`` becomes the page's
    error message (the view then redirects, as a form post does); ``refusal.error`` is the error, or None
    when the write went through. Any other exception passes."""

    def __init__(self, request):
        self.request = request
        self.error: AppError | None = None

    def __enter__(self) -> RefusalAsMessage:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if isinstance(exc, AppError):
            messages.error(self.request, exc.message)
            self.error = exc
            return True
        return False
