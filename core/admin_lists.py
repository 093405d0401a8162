"""Django admin lists shared by the apps: the read-only mixins of records the pipeline writes, and lists of
the tables that grow with the data (candidates, decisions, pseudo translations, scores, audit events):
what makes a list page cost a pass over the table, and what replaces it.

Django's defaults read the whole table on every view: the paginator's ``COUNT(*)`` (twice: the filtered
count and the "N total" count), and a list filter on a field without choices lists its values with
``SELECT DISTINCT`` over the table. At 1.6 M candidates the candidate list took ≈ 1 s a view, most of it
those reads (``perf/bench_review_scale.py``); at FLORES size the pseudo translation and score tables are
ten to a hundred times larger.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.contrib import admin
from django.utils.html import format_html

from core.paging import EstimatedCountPaginator


class ReadOnlyMixin:
    """Records the pipeline writes (a review, a merge, a release), never edited or added by hand."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class KeptByTriggersMixin(ReadOnlyMixin):
    """Rows kept by the database's triggers (counters, change logs): not deleted by hand either."""

    def has_delete_permission(self, request, obj=None):
        return False


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


def language_text(text: str, language, limit: int | None = None) -> str:
    """Corpus or LLM text for a list cell: isolated, in ``language``'s direction (an Arabic text reads
    right to left inside Django admin's left-to-right table, as on the review screen), cut at ``limit``."""
    shown = text if limit is None or len(text) <= limit else text[: limit - 1] + "…"
    return format_html('<bdi lang="{}" dir="{}">{}</bdi>', language.code, "rtl" if language.rtl else "ltr", shown)
