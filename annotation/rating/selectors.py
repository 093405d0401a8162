"""Read-only queries of rating: the items a user may rate, the rating queue and progress, their ratings."""

from __future__ import annotations

from django.db.models import Count, Exists, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from annotation.models import LikertRating, RatingItem
from core import access
from core.models import Project


def visible_rating_items(user) -> QuerySet[RatingItem]:
    if not (access.is_admin(user) or access.is_annotator(user)):
        return RatingItem.objects.none()
    return RatingItem.objects.filter(access.work_filter(user, project_path="project", direction_path="direction"))


def raters_per_item(project: Project) -> int:
    return int((project.options or {}).get("raters_per_item", 2))


def rating_queue(user, project: Project, codes: list[str]) -> QuerySet[RatingItem]:
    rated = LikertRating.objects.filter(item=OuterRef("pk"))
    return (
        RatingItem.objects.filter(project=project, direction__target__code__in=codes)
        .filter(~Exists(rated.filter(rater=user)))
        .annotate(
            n=Coalesce(Subquery(rated.order_by().values("item").annotate(c=Count("*")).values("c")[:1]), Value(0))
        )
        .filter(n__lt=raters_per_item(project))
        .order_by("id")
    )


def rating_progress(user, project: Project, codes: list[str]) -> dict:
    done = LikertRating.objects.filter(
        rater=user, item__project=project, item__direction__target__code__in=codes
    ).count()
    return {"done": done, "remaining": rating_queue(user, project, codes).count()}


def ratings_of(user) -> QuerySet[LikertRating]:
    qs = LikertRating.objects.select_related("item")
    if access.is_admin(user):
        return qs
    return qs.filter(rater=user)
