"""Logging filters named by ``LOGGING`` in the settings."""

from __future__ import annotations

import logging


class ClientErrorWithoutTraceback(logging.Filter):
    """Django logs every refused request (``PermissionDenied``: 403; a body it cannot parse: 400) with the
    exception's full traceback, so each 403 of an ordinary user filled the log with a stack (#46). A 4xx is
    the client's error, not the code's: its one line (method, path, status) is kept, the traceback dropped.
    A 5xx keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
