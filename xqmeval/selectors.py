"""Reads for the site's home page: an overview of every stage a user may see. Lives with the site, above
every app, because it reads more than one stage's models."""
from __future__ import annotations

from django.db.models import Count

from annotation.review import selectors as review_selectors
from core import access
from core import selectors as core_selectors
from core.models import GoldSegment


def project_overview(user) -> list[dict]:
    """Per project and visible direction: gold segments (one grouped query) and candidates by status (the
    review counters on PostgreSQL, a grouped query elsewhere), whatever the number of directions."""
    languages = set(access.allowed_languages(user).values_list("pk", flat=True))
    rows = []
    for project in core_selectors.visible_projects(user).select_related("source_language").prefetch_related("directions"):
        directions = sorted((d for d in project.directions.all() if d.target_id in languages), key=lambda d: d.code)
        ids = [d.pk for d in directions]
        segments = dict(
            GoldSegment.objects.filter(project=project, direction_id__in=ids).values_list("direction_id").annotate(n=Count("id"))
        )
        statuses = review_selectors.candidate_statuses(project)  # the review counters: no count of the candidates
        per_direction = [
            {"direction": d.code, "segments": segments.get(d.pk, 0), "candidates": statuses.get(d.pk, {})} for d in directions
        ]
        rows.append({"project": project, "directions": per_direction})
    return rows
