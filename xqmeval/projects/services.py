"""A project's directions from its settings page: what each holds, removing one that holds nothing and
retiring (or reinstating) one that holds data. Here, above every stage, because "holds data" spans them:
gold pairs (and so candidates and decisions), rating items and releases."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotation.models import RatingItem
from core.models import Direction, GoldSegment, Project
from core.services import (
    ProjectRejected,
    project_direction_reinstate,
    project_direction_remove,
    project_direction_retire,
)
from exports.models import Release


@dataclass(frozen=True)
class DirectionData:
    code: str
    retired: bool
    gold_pairs: int
    rating_items: int
    releases: int

    @property
    def empty(self) -> bool:
        return not (self.gold_pairs or self.rating_items or self.releases)


def direction_data_list(*, project: Project) -> list[DirectionData]:
    """Each direction of ``project`` with what it holds, in code order (one query per kind of data)."""
    from django.db.models import Count

    def counts(queryset) -> dict[int, int]:
        return dict(queryset.values_list("direction").annotate(n=Count("id")).values_list("direction", "n"))

    pairs = counts(GoldSegment.objects.filter(project=project))
    items = counts(RatingItem.objects.filter(project=project))
    released: dict[str, int] = {}
    for directions in Release.objects.filter(project=project).values_list("directions", flat=True):
        for code in directions or {}:
            released[code] = released.get(code, 0) + 1
    retired = set(project.retired_directions.values_list("pk", flat=True))
    return [
        DirectionData(d.code, d.pk in retired, pairs.get(d.pk, 0), items.get(d.pk, 0), released.get(d.code, 0))
        for d in project.directions.order_by("code")
    ]


def _direction_of(project: Project, code: str) -> Direction:
    direction = project.directions.filter(code=code).first()
    if direction is None:
        raise ProjectRejected([f"direction: {code} is not a direction of {project.name}"])
    return direction


def direction_remove(*, project: Project, code: str) -> None:
    """Take a direction that holds nothing out of the project (a mistaken one); one with data is retired."""
    with transaction.atomic():
        direction = _direction_of(project, code)
        data = next(d for d in direction_data_list(project=project) if d.code == code)
        if not data.empty:
            raise ProjectRejected(
                [
                    f"direction: {code} holds {data.gold_pairs} gold pairs, {data.rating_items} rating items and "
                    f"{data.releases} releases, so it cannot be removed; retire it instead"
                ]
            )
        project_direction_remove(project=project, direction=direction)


def direction_retire(*, project: Project, code: str) -> None:
    """Hide a direction from new imports, injection and builds; releases already made keep it."""
    project_direction_retire(project=project, direction=_direction_of(project, code))


def direction_reinstate(*, project: Project, code: str) -> None:
    project_direction_reinstate(project=project, direction=_direction_of(project, code))
