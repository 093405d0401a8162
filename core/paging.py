"""Counting the rows of a list page without reading a table of millions of rows (the candidates, the
decisions, the pseudo translations, the scores, the audit events).

A ``COUNT(*)`` is a pass over the rows it counts (≈ 0.1 s per million on PostgreSQL here); a list page only
needs it to number its pages. Above a size, the planner's estimate does that, and the page says "about".
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.core.paginator import Paginator
from django.db import connections
from django.utils.functional import cached_property

# Below this many rows (the planner's estimate) a list counts its rows exactly: a count of that many rows
# by an index takes milliseconds. Above it the list shows the estimate, marked "about". The setting
# LIST_EXACT_COUNT_BELOW (environment variable of the same name) overrides it.
EXACT_COUNT_BELOW = 50_000


def planner_rows(queryset) -> int | None:
    """The query planner's estimate of the rows ``queryset`` returns (PostgreSQL's ``EXPLAIN``: no row is
    read), or None on a database that gives none."""
    if connections[queryset.db].vendor != "postgresql":
        return None
    try:
        text = queryset.order_by().explain(format="json")
    except EmptyResultSet:
        return 0
    if not text:  # .none(), an empty __in: Django explains nothing, there is no row
        return 0
    plan = json.loads(text)
    return int(plan[0]["Plan"]["Plan Rows"])


class EstimatedCountPaginator(Paginator):
    """A paginator whose count is exact for small results and the planner's estimate for large ones.

    ``estimated`` tells the template to say "about". The estimate of an unfiltered table comes from the
    table's statistics (within a few per cent after ANALYZE); a filtered one may be further off, which is
    why it is labelled and why a filter that narrows the list below the threshold gets an exact count."""

    estimated = False

    @cached_property
    def count(self) -> int:
        limit = getattr(settings, "LIST_EXACT_COUNT_BELOW", EXACT_COUNT_BELOW)
        guess = planner_rows(self.object_list) if hasattr(self.object_list, "explain") else None
        if guess is None or guess < limit:
            return super().count
        self.estimated = True
        return guess


def within_budget(sizes: list[tuple[int, int]], start: int | None, budget: int) -> tuple[list[int], int | None]:
    """One page's rows by characters as well as by count (#48.2): ``sizes`` are the (id, characters) of a
    row page in order. From the row ``start`` (None: the first), the rows that fit ``budget`` characters
    (always at least one), and the id the page continues from (None when it ends here)."""
    ids = [pk for pk, _ in sizes]
    first = ids.index(start) if start in ids else 0
    shown, used = [], 0
    for pk, size in sizes[first:]:
        if shown and used + size > budget:
            return shown, pk
        shown.append(pk)
        used += size
    return shown, None
