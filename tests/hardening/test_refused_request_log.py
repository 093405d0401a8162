"""#46.5: with DEBUG off, every 403 wrote the PermissionDenied's full traceback to the log. A refused
request logs one line (method, path, status); a server error keeps its traceback."""

from __future__ import annotations

import logging
import sys

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_a_403_logs_one_line_without_a_traceback(client, annotator_de, settings, caplog):
    settings.DEBUG = False
    client.force_login(annotator_de)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get(reverse("injection:runs"))  # admins only
    assert response.status_code == 403
    refused = [r for r in caplog.records if r.name == "django.request"]
    assert [r.getMessage() for r in refused] == ["Forbidden (Permission denied): /injection/"]
    assert refused[0].exc_info is None and "Traceback" not in caplog.text


def test_a_server_errors_record_keeps_its_traceback():
    from core.log_filters import ClientErrorWithoutTraceback

    try:
        raise RuntimeError("boom")
    except RuntimeError:
        exc_info = sys.exc_info()
    record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Internal Server Error", (), exc_info)
    record.status_code = 500
    assert ClientErrorWithoutTraceback().filter(record) and record.exc_info is not None
    record.status_code = 403
    assert ClientErrorWithoutTraceback().filter(record) and record.exc_info is None
