"""Reads for the site's home page: an overview of every stage a user may see. Lives with the site, above
every app, because it reads more than one stage's models."""

from __future__ import annotations

from annotation.review import selectors as review_selectors
from core import access
from core import selectors as core_selectors
from exports.benchmark import selectors as benchmark_selectors


def project_overview(user) -> list[dict]:
    """Per project and visible direction: gold segments and candidates by status (kept counts on PostgreSQL:
    the benchmark change log's and the review counters; grouped queries elsewhere), whatever the number
    of directions."""
    rows = []
    for project in (
        core_selectors.visible_projects(user).select_related("source_language").prefetch_related("directions")
    ):
        languages = set(access.allowed_languages(user, project).values_list("pk", flat=True))  # this project's
        directions = sorted((d for d in project.directions.all() if d.target_id in languages), key=lambda d: d.code)
        segments = benchmark_selectors.segment_counts(project)  # kept while the benchmark change log stands
        statuses = review_selectors.candidate_statuses(project)  # the review counters: no count of the candidates
        per_direction = [
            {"direction": d.code, "segments": segments.get(d.pk, 0), "candidates": statuses.get(d.pk, {})}
            for d in directions
        ]
        rows.append({"project": project, "directions": per_direction})
    return rows
