"""Read-only queries of the injection app, shared by views, admin and commands."""
from __future__ import annotations

from collections import Counter

from django.db.models import QuerySet

from core import access
from core.domain.units import join_units, split_units
from injection.models import Candidate, InjectionItem, InjectionRun


def visible_candidates(user) -> QuerySet[Candidate]:
    """Candidates of the target languages this user may see (all for admins)."""
    qs = Candidate.objects.select_related("segment__direction__target", "run")
    if access.is_admin(user):
        return qs
    return qs.filter(segment__direction__target__in=access.allowed_languages(user))


def filter_candidates(qs: QuerySet[Candidate], *, flag: str = "", direction: str = "", error_type: str = "", run: int | None = None, clean: bool = False):
    if run:
        qs = qs.filter(run_id=run)
    if direction:
        qs = qs.filter(segment__direction__code=direction)
    if error_type:
        qs = qs.filter(error_type=error_type)
    if flag:
        # `flags` is a JSON list of names; matching the quoted name works on SQLite and PostgreSQL alike.
        qs = qs.filter(flags__icontains=f'"{flag}"')
    if clean:
        qs = qs.filter(flags=[])
    return qs


def flag_counts(qs: QuerySet[Candidate]) -> list[tuple[str, int]]:
    counts: Counter = Counter()
    for flags in qs.values_list("flags", flat=True):
        counts.update(flags or [])
    return counts.most_common()


def run_progress(run: InjectionRun) -> dict:
    pending = run.total - run.done - run.failed
    return {
        "id": run.pk,
        "name": run.name,
        "status": run.status,
        "total": run.total,
        "done": run.done,
        "failed": run.failed,
        "pending": max(0, pending),
        "percent": round(100 * (run.done + run.failed) / run.total, 1) if run.total else 0.0,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "cost_usd": str(run.cost_usd),
        "error": run.error,
    }


def failed_items(run: InjectionRun, limit: int = 200) -> QuerySet[InjectionItem]:
    return run.items.filter(status=InjectionItem.Status.FAILED).select_related("segment__direction").order_by("id")[:limit]


def failure_reasons(run: InjectionRun) -> list[tuple[str, int]]:
    counts: Counter = Counter()
    for error in run.items.filter(status=InjectionItem.Status.FAILED).values_list("error", flat=True):
        counts[error[:160]] += 1
    return counts.most_common(20)


def marked_parts(candidate: Candidate) -> tuple[str, str, str]:
    """(before, edited, after) of a candidate in its reference's units, for display with the edit
    highlighted; each part is escaped by the template (never marked safe)."""
    language = candidate.segment.direction.target.code
    units = split_units(candidate.segment.reference, language)
    before = join_units(units[: candidate.span_start], language)
    after = join_units(units[candidate.span_end :], language)
    return before, candidate.edit_text, after
