"""Django admin lists of the tables that grow with the data (candidates, decisions, pseudo translations,
scores, audit events): what makes a list page cost a pass over the table, and what replaces it.

Django's defaults read the whole table on every view: the paginator's ``COUNT(*)`` (twice: the filtered
count and the "N total" count), and a list filter on a field without choices lists its values with
``SELECT DISTINCT`` over the table. At 1.6 M candidates the candidate list took ≈ 1 s a view, most of it
those reads (``perf/bench_review_scale.py``); at FLORES size the pseudo translation and score tables are
ten to a hundred times larger.
"""
from __future__ import annotations

import json
from typing import Callable, Iterable

from django.conf import settings
from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connections
from django.utils.functional import cached_property

# Below this many rows (the planner's estimate) a list counts its rows exactly: a count of that many rows
# by an index takes milliseconds. Above it the list shows the estimate, marked "about".
EXACT_COUNT_BELOW = 50_000


def planner_rows(queryset) -> int | None:
    """The query planner's estimate of the rows ``queryset`` returns (PostgreSQL's ``EXPLAIN``: no row is
    read), or None on a database that gives none."""
    if connections[queryset.db].vendor != "postgresql":
        return None
    plan = json.loads(queryset.order_by().explain(format="json"))
    return int(plan[0]["Plan"]["Plan Rows"])


class EstimatedCountPaginator(Paginator):
    """A paginator whose count is exact for small results and the planner's estimate for large ones.

    ``estimated`` tells the template to say "about". The estimate of an unfiltered table comes from the
    table's statistics (within a few per cent after ANALYZE); a filtered one may be further off, which is
    why it is labelled and why a filter that narrows the list below the threshold gets an exact count."""

    estimated = False

    @cached_property
    def count(self) -> int:
        limit = getattr(settings, "ADMIN_EXACT_COUNT_BELOW", EXACT_COUNT_BELOW)
        guess = planner_rows(self.object_list) if hasattr(self.object_list, "explain") else None
        if guess is None or guess < limit:
            return super().count
        self.estimated = True
        return guess


class LargeTableAdmin(admin.ModelAdmin):
    """A model admin over a table of millions of rows: no count of the whole table per view (estimated
    count, no "N total" link), newest rows first by primary key (an index scan, whatever the model's
    ordering), and list filters that do not read the table (see ``values_filter``)."""

    paginator = EstimatedCountPaginator
    show_full_result_count = False
    ordering = ("-pk",)


def values_filter(field: str, values: Callable[[], Iterable], title: str | None = None) -> type[admin.SimpleListFilter]:
    """A list filter on ``field`` whose choices come from ``values()`` (a registry, a small table, a range)
    instead of Django's ``SELECT DISTINCT field`` over the listed table. ``values()`` yields values or
    (value, label) pairs."""

    class ValuesFilter(admin.SimpleListFilter):
        parameter_name = field

        def lookups(self, request, model_admin):
            pairs = []
            for value in values():
                value, label = value if isinstance(value, tuple) else (value, value)
                pairs.append((str(value), str(label)))
            return pairs

        def queryset(self, request, queryset):
            value = self.value()
            return queryset if value is None else queryset.filter(**{field: value})

    ValuesFilter.title = title or field.replace("_", " ")
    ValuesFilter.__name__ = ValuesFilter.__qualname__ = f"{field.title().replace('_', '')}ValuesFilter"
    return ValuesFilter
