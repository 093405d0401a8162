"""The review change log as a token: whether the rows behind the review figures and the agreement report
changed since they were computed, read from a handful of log rows instead of every decision (see
``changes_sql`` for the triggers). PostgreSQL only; elsewhere ``token`` is None and callers compare the
rows themselves."""
from __future__ import annotations

from django.db import connection

from annotation.review import changes_sql


def available() -> bool:
    return connection.vendor == "postgresql"


def token(project_id: int) -> tuple[int, int] | None:
    """(rows, newest id) of the project's log: it changes when any transaction that changed the project's
    figures commits (its row appears), whichever order transactions commit in. Read it before reading the
    rows a figure is computed from, so a change made meanwhile makes that figure stale, never wrong."""
    if not available():
        return None
    with connection.cursor() as cursor:
        cursor.execute(changes_sql.TOKEN, {"project": project_id})
        count, newest = cursor.fetchone()
    return int(count), int(newest or 0)


def prune(project_id: int) -> None:
    """Delete the project's log rows but the newest (called by the refresh before it reads the token)."""
    if available():
        with connection.cursor() as cursor:
            cursor.execute(changes_sql.PRUNE, {"project": project_id})


def forget(project_id: int) -> None:
    """Delete every log row of a project that no longer exists."""
    if available():
        with connection.cursor() as cursor:
            cursor.execute(changes_sql.FORGET, {"project": project_id})
