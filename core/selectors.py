"""Read-only queries shared by views, admin and API."""

from __future__ import annotations

from dataclasses import dataclass

from core import access
from core.models import Direction, Profile, Project


def visible_projects(user):
    return access.visible_projects(user)


def active_directions(project: Project):
    """The project's directions open to new work (imports, injection, builds): all but the retired ones."""
    return (
        project.directions.exclude(pk__in=project.retired_directions.values("pk"))
        .select_related("target")
        .order_by("code")
    )


@dataclass(frozen=True)
class Coverage:
    """One active direction's reviewers: who is assigned, and how many more the project needs."""

    direction_code: str
    reviewers: tuple[str, ...]
    missing: int


def coverage(project: Project) -> list[Coverage]:
    """Per active direction, its reviewers (assignments; in a project with none, the annotators of the
    target language) against the project's reviewers per candidate."""
    from core.models import Profile, ReviewerAssignment

    directions = list(active_directions(project))
    if ReviewerAssignment.objects.filter(project=project).exists():
        pairs = ReviewerAssignment.objects.filter(project=project).values_list("direction_id", "user__username")
        by_direction: dict[int, list[str]] = {}
        for direction_id, name in pairs:
            by_direction.setdefault(direction_id, []).append(name)
    else:
        pairs = Profile.objects.filter(role=Profile.Role.ANNOTATOR).values_list("languages", "user__username")
        by_language: dict[int, list[str]] = {}
        for language_id, name in pairs:
            if language_id is not None:
                by_language.setdefault(language_id, []).append(name)
        by_direction = {d.pk: by_language.get(d.target_id, []) for d in directions}
    need = project.reviewers_per_candidate
    return [
        Coverage(d.code, tuple(sorted(by_direction.get(d.pk, []))), max(0, need - len(by_direction.get(d.pk, []))))
        for d in directions
    ]


def coverage_gaps(project: Project) -> list[Coverage]:
    return [c for c in coverage(project) if c.missing]


def outside_languages(*, direction_code: str, usernames) -> list[str]:
    """The annotators among ``usernames`` whose languages do not include ``direction_code``'s target: an
    assignment opens the direction to them all the same, so the settings page warns (#46)."""
    return sorted(
        Profile.objects.filter(user__username__in=list(usernames), role=Profile.Role.ANNOTATOR)
        .exclude(languages__in=Direction.objects.filter(code=direction_code).values("target"))
        .values_list("user__username", flat=True)
    )
