"""Read-only queries of the annotator accounts: who reviews what, per project (the annotators page)."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from core.models import ReviewerAssignment


def reviewers_by_project() -> list[dict]:
    """Every account with its role and, per project, the directions it reviews there (the assignments):
    the annotators page's table."""
    reviews: dict[int, dict[str, list[str]]] = {}
    pairs = ReviewerAssignment.objects.order_by("project__name", "direction__code")
    for user_id, project, code in pairs.values_list("user_id", "project__name", "direction__code"):
        reviews.setdefault(user_id, {}).setdefault(project, []).append(code)
    users = get_user_model().objects.select_related("profile").order_by("username")
    return [
        {
            "user": u,
            "role": getattr(getattr(u, "profile", None), "role", ""),
            "projects": [{"name": name, "directions": codes} for name, codes in reviews.get(u.pk, {}).items()],
        }
        for u in users
    ]
