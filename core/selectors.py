"""Read-only queries shared by views, admin and API."""
from __future__ import annotations

from core import access
from core.models import Project


def visible_projects(user):
    if access.is_admin(user):
        return Project.objects.all()
    languages = access.allowed_languages(user)
    return Project.objects.filter(directions__target__in=languages).distinct()


def active_directions(project: Project):
    """The project's directions open to new work (imports, injection, builds): all but the retired ones."""
    return project.directions.exclude(pk__in=project.retired_directions.values("pk")).select_related("target").order_by("code")
