"""Reading a change log (see ``core.triggers_sql``): the token a figure kept in the cache is compared with,
and the pruning. PostgreSQL only (the logs are written by its triggers); elsewhere the token is None and
callers compute their figures from the rows."""
from __future__ import annotations

from django.db import connection

from core import triggers_sql


class ChangeLog:
    def __init__(self, table: str):
        self.table = table

    @staticmethod
    def available() -> bool:
        return connection.vendor == "postgresql"

    def token(self, project_id: int) -> tuple[int, int] | None:
        """(rows, newest id) of the project's log. Read it before the rows a figure is computed from, so a
        change made meanwhile leaves that figure stale, never wrong."""
        if not self.available():
            return None
        with connection.cursor() as cursor:
            cursor.execute(triggers_sql.token(self.table), {"project": project_id})
            count, newest = cursor.fetchone()
        return int(count), int(newest or 0)

    def tokens(self) -> tuple[tuple[int | None, int, int], ...] | None:
        """(project, rows, newest id) of every project's rows and of those for every project (None first):
        the token of a figure that spans projects (a list of candidates of every project)."""
        if not self.available():
            return None
        with connection.cursor() as cursor:
            cursor.execute(triggers_sql.all_tokens(self.table))
            return tuple((project, int(count), int(newest)) for project, count, newest in cursor.fetchall())

    def prune(self, project_id: int) -> None:
        """Replace the project's rows with one new row (before reading the token that a new figure keeps):
        its token moves, to one no later commit can bring back to an earlier value (``core.triggers_sql``)."""
        self._run(triggers_sql.prune(self.table), project_id)

    def forget(self, project_id: int) -> None:
        """Delete every row of a project that no longer exists."""
        self._run(triggers_sql.forget(self.table), project_id)

    def _run(self, sql: str, project_id: int) -> None:
        if self.available():
            with connection.cursor() as cursor:
                cursor.execute(sql, {"project": project_id})
