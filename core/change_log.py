"""Reading a change log (see ``core.triggers_sql``): the token a figure kept in the cache is compared with,
and the pruning. PostgreSQL only (the logs are written by its triggers); elsewhere the token is None and
callers compute their figures from the rows."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

from django.core.cache import cache
from django.db import connection

from core import triggers_sql

T = TypeVar("T")
KEPT_SECONDS = 30 * 24 * 3600  # keyed by a token: never stale, only evicted


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

    def kept(
        self,
        name: str,
        compute: Callable[[], T],
        *,
        project_id: int | None = None,
        prune_above: int | None = None,
        timeout: int = KEPT_SECONDS,
    ) -> T:
        """``compute()`` kept in the cache under this log's token: ``project_id``'s where every row it reads
        belongs to that project (a write elsewhere then keeps it), else every project's. Recomputed once a
        write the log records has committed; computed on every call where there is no log. The token is read
        before ``compute`` reads its rows, so a write made meanwhile leaves the entry stale for the next
        reader, never wrong. ``prune_above``: first prune a project's log once it holds more rows than this
        (a run that writes one statement at a time), which moves that project's token once."""
        if not self.available():
            return compute()
        token = self._current(project_id, prune_above)
        key = f"{name}:{hashlib.sha256(repr(token).encode()).hexdigest()}"
        value = cache.get(key)
        if value is None:
            value = compute()
            cache.set(key, value, timeout=timeout)
        return value

    def _current(self, project_id: int | None, prune_above: int | None):
        if project_id is not None:
            token = self.token(project_id)
            if prune_above is not None and token[0] > prune_above:
                self.prune(project_id)
                token = self.token(project_id)
            return project_id, token
        tokens = self.tokens()
        long_runs = [] if prune_above is None else [p for p, rows, _ in tokens if p is not None and rows > prune_above]
        for project in long_runs:
            self.prune(project)
        return self.tokens() if long_runs else tokens

    def prune(self, project_id: int) -> None:
        """Replace the project's rows (two or more) with one new row, before reading the token that a new
        figure keeps: its token moves, to one no later commit can bring back to an earlier value
        (``core.triggers_sql``). A log of one row is left as it is."""
        self._run(triggers_sql.prune(self.table), project_id)

    def _run(self, sql: str, project_id: int) -> None:
        if self.available():
            with connection.cursor() as cursor:
                cursor.execute(sql, {"project": project_id})
