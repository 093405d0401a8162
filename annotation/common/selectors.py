"""Reads the annotation rooms share: the languages whose items a user works on (reviews and ratings alike)."""

from __future__ import annotations

from core import access
from core.models import Project


def work_languages(user, project: Project | None = None):
    """Languages whose items this user may review or rate: admins all, annotators theirs (in ``project``:
    their assignments there), viewers none (viewers read aggregate pages only)."""
    return access.item_languages(user, project)


def language_codes(user, language: str | None = None, project: Project | None = None) -> list[str]:
    """The target languages this user works on (in ``project``, when given; one, when asked and allowed)."""
    codes = list(work_languages(user, project).values_list("code", flat=True))
    if language:
        return [language] if language in codes else []
    return codes
