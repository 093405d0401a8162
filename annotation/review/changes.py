"""The review change log as a token: whether the rows behind the review figures and the agreement report
changed since they were computed, read from a handful of log rows instead of every decision (see
``changes_sql`` for the triggers, ``core.change_log`` for the token). PostgreSQL only; elsewhere ``token``
is None and callers compare the rows themselves."""

from __future__ import annotations

from annotation.review import changes_sql
from core.change_log import ChangeLog

LOG = ChangeLog(changes_sql.LOG)
available = LOG.available
token = LOG.token
prune = LOG.prune
