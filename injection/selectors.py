"""Read-only queries of the injection app, shared by views, admin and commands. One write, of bookkeeping
only: a recount of the flag counts prunes the flag change log's long runs (``flag_counts``)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import QuerySet
from django.db.models.functions import Length

from core import access
from core.change_log import ChangeLog
from core.domain.units import join_units, split_units
from injection import changes_sql
from injection.models import Candidate, InjectionItem, InjectionRun


def visible_candidates(user) -> QuerySet[Candidate]:
    """Candidates whose texts this user may read: all for admins, their languages' for annotators, none for
    viewers (``access.item_languages``, the rule review uses too)."""
    qs = Candidate.objects.select_related("segment__direction__target", "run")
    if access.is_admin(user):
        return qs
    return qs.filter(segment__direction__target__in=access.item_languages(user))


def filter_candidates(
    qs: QuerySet[Candidate],
    *,
    flag: str = "",
    direction_code: str = "",
    error_type: str = "",
    run: int | None = None,
    project: int | None = None,
    clean: bool = False,
):
    if run:
        qs = qs.filter(run_id=run)
    if project:
        qs = qs.filter(run__project_id=project)
    if direction_code:
        qs = qs.filter(segment__direction__code=direction_code)
    if error_type:
        qs = qs.filter(error_type=error_type)
    if flag:
        qs = with_flag(qs, flag)
    if clean:
        qs = qs.filter(flags=[])
    return qs


def with_flag(qs: QuerySet[Candidate], flag: str) -> QuerySet[Candidate]:
    """The candidates of ``qs`` whose flags name ``flag``. PostgreSQL: JSON containment, which the GIN index
    ``candidate_flag_names`` (migration injection 0006) answers and the planner estimates from statistics
    (a name matched as text sorted every flagged candidate of 1.6 M). SQLite has no containment on JSON:
    there the name as JSON encodes it (quoted, escaped) is matched in the list's text, among the flagged
    candidates only."""
    if connections[qs.db].vendor == "postgresql":
        return qs.filter(flags__contains=[flag])
    return qs.exclude(flags=[]).filter(flags__icontains=json.dumps(flag))


FLAG_CHANGES = ChangeLog(changes_sql.LOG)
FLAG_COUNTS_CACHE_SECONDS = 7 * 24 * 3600  # keyed by the change log's tokens: never stale, only evicted
PRUNE_ABOVE = 64  # log rows of a project beyond which a recount prunes them (each one is a statement)


def flag_counts(qs: QuerySet[Candidate], *, project_id: int | None = None) -> list[tuple[str, int]]:
    """(flag, candidates) of ``qs``, most frequent first. Reads only the flagged candidates (the partial
    index ``candidate_flagged``: most candidates pass every check), and on PostgreSQL counts them in the
    database (a run page of 1.6 M candidates read every candidate's flags into Python, ≈ 10 s a view) and
    keeps the counts in the cache under the flag change log's token, which any write that could change
    them moves (``injection.changes_sql``): a counted page costs ≈ 0.36 s at 1.6 M candidates with one in
    seven flagged, a kept one a read of the log. The key is the statement itself, so every filter and every
    annotator's languages are counts of their own. ``project_id``: the project every candidate of ``qs``
    belongs to, where the caller knows it (a run's candidates): then only that project's writes, and those
    for every project, count them again; otherwise any project's do."""
    flagged = qs.exclude(flags=[]).order_by()
    connection = connections[qs.db]
    if connection.vendor != "postgresql":
        counts: Counter = Counter()
        for flags in flagged.values_list("flags", flat=True):
            counts.update(flags or [])
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    try:
        sql, params = flagged.values("flags").query.sql_with_params()
    except EmptyResultSet:  # .none(), an empty __in: nothing to count
        return []
    statement = connection.ops.compose_sql(
        f"SELECT name, COUNT(*) FROM ({sql}) AS c CROSS JOIN LATERAL jsonb_array_elements_text(c.flags) AS name "
        "GROUP BY name ORDER BY 2 DESC, 1",
        params,
    )

    def count() -> list[tuple[str, int]]:
        with connection.cursor() as cursor:
            cursor.execute(statement)
            return [(name, int(n)) for name, n in cursor.fetchall()]

    # An LLM run logs a row per candidate it writes: a long log is pruned before its token is read.
    name = "injection:flag-counts:v2:" + hashlib.sha256(statement.encode()).hexdigest()
    return FLAG_CHANGES.kept(
        name, count, project_id=project_id, prune_above=PRUNE_ABOVE, timeout=FLAG_COUNTS_CACHE_SECONDS
    )


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


def stalled_since(run: InjectionRun):
    """When the lease of a run still marked running lapsed (its worker died, or could not even record its
    failure), else None: nothing works on it, and the page offers to resume it."""
    from django.utils import timezone

    if (
        run.status == InjectionRun.Status.RUNNING
        and run.lease_expires_at is not None
        and run.lease_expires_at <= timezone.now()
    ):
        return run.lease_expires_at
    return None


def failed_items(run: InjectionRun, limit: int = 200) -> QuerySet[InjectionItem]:
    return (
        run.items.filter(status=InjectionItem.Status.FAILED)
        .select_related("segment__direction__target")
        .order_by("id")[:limit]
    )


def failure_reasons(run: InjectionRun) -> list[tuple[str, int]]:
    counts: Counter = Counter()
    for error in run.items.filter(status=InjectionItem.Status.FAILED).values_list("error", flat=True):
        counts[error[:160]] += 1
    return counts.most_common(20)


def candidate_sizes(qs: QuerySet[Candidate], start: int, stop: int) -> list[tuple[int, int]]:
    """(id, characters) of the candidates ``start:stop`` of ``qs``: the texts a list row holds (its reference,
    its text and its edit), measured by the database without reading them."""
    size = Length("text") + Length("edit_text") + Length("segment__reference")
    return list(qs.annotate(text_size=size).values_list("id", "text_size")[start:stop])


def marked_parts(candidate: Candidate) -> tuple[str, str, str]:
    """(before, edited, after) of a candidate in its reference's units, for display with the edit
    highlighted; each part is escaped by the template (never marked safe)."""
    language = candidate.segment.direction.target.code
    units = split_units(candidate.segment.reference, language)
    before = join_units(units[: candidate.span_start], language)
    after = join_units(units[candidate.span_end :], language)
    return before, candidate.edit_text, after


def run_settings(run: InjectionRun) -> list[tuple[str, str]]:
    """(name, value as words) of the run parameters its backend reads, in the backend's order; a setting
    left out (no seed, no rpm budget) is not shown. An import run has no backend settings."""
    from injection.backends import BACKENDS  # the registry, with the built-in backends registered

    backend = BACKENDS.get(run.backend)
    names = backend.run_settings if backend is not None else ()
    return [
        (name, _setting_text(run.parameters[name])) for name in names if run.parameters.get(name) not in (None, "", {})
    ]


def _setting_text(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):  # vLLM's engine options, as they were given: name=value
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
    return str(value)
