"""Write operations on languages, directions, projects, users and gold segments."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from django.contrib.auth import get_user_model
from django.db import transaction

from core import bulk
from core.corpus_io import CorpusRow
from core.errors import InputErrors
from core.languages import language_info, parse_direction
from core.models import Direction, GoldSegment, Language, Profile, Project


class ImportRejected(InputErrors):
    """An import found bad input against what is stored (e.g. different text under an existing id)."""


def ensure_language(code: str) -> Language:
    info = language_info(code)
    language, _ = Language.objects.get_or_create(
        code=code, defaults={"name": info.name, "script": info.script, "unit": info.unit, "rtl": info.rtl}
    )
    return language


def ensure_direction(code: str) -> Direction:
    source, target = parse_direction(code)
    direction, _ = Direction.objects.get_or_create(
        code=code, defaults={"source": ensure_language(source), "target": ensure_language(target)}
    )
    return direction


def ensure_project(name: str, *, source_language: str = "en", owner=None, **fields) -> tuple[Project, bool]:
    project = Project.objects.filter(name=name).first()
    if project:
        return project, False
    project = Project.objects.create(
        name=name, source_language=ensure_language(source_language), owner=owner, title=fields.pop("title", name), **fields
    )
    return project, True


def add_directions(project: Project, codes: Iterable[str]) -> list[Direction]:
    directions = [ensure_direction(code) for code in codes]
    for direction in directions:
        if direction.source.code != project.source_language.code:
            raise ValueError(
                f"direction {direction.code} does not start from the project's source language {project.source_language.code}"
            )
    project.directions.add(*directions)
    return directions


def create_user(username: str, password: str, *, role: str = Profile.Role.ANNOTATOR, languages: Iterable[str] = (), email: str = ""):
    """Create (or update) a user with a role and, for annotators, their target languages."""
    User = get_user_model()
    with transaction.atomic():
        user, created = User.objects.get_or_create(username=username, defaults={"email": email})
        user.set_password(password)
        user.is_staff = role == Profile.Role.ADMIN
        user.is_superuser = role == Profile.Role.ADMIN
        user.save()
        profile, _ = Profile.objects.get_or_create(user=user, defaults={"role": role})
        profile.role = role
        profile.save()
        profile.languages.set([ensure_language(code) for code in languages])
    return user


@dataclass
class CorpusImportResult:
    created: int = 0
    unchanged: int = 0
    errors: list[str] = field(default_factory=list)


def import_corpus_rows(project: Project, direction_code: str, rows: list[CorpusRow], source_name: str) -> CorpusImportResult:
    """Import gold pairs atomically and idempotently.

    Re-importing the same rows changes nothing; a row whose id exists with different text is an error.
    Any error rejects the whole file: nothing is written."""
    try:
        direction = ensure_direction(direction_code)
    except ValueError as exc:
        raise ImportRejected(source_name, [f"--direction: {exc}"]) from None
    if direction.source.code != project.source_language.code:
        raise ImportRejected(
            source_name,
            [f"--direction: {direction_code} does not start from project {project.name}'s source language {project.source_language.code}"],
        )
    existing = {
        seg.external_id: seg for seg in GoldSegment.objects.filter(project=project, direction=direction).only("external_id", "source", "reference")
    }
    errors: list[str] = []
    to_create: list[GoldSegment] = []
    result = CorpusImportResult()
    for row in rows:
        old = existing.get(row.external_id)
        if old is None:
            to_create.append(
                GoldSegment(project=project, direction=direction, external_id=row.external_id, source=row.source, reference=row.reference)
            )
        elif old.source == row.source and old.reference == row.reference:
            result.unchanged += 1
        else:
            errors.append(f"{row.location}: id {row.external_id!r} already exists in {project.name}/{direction_code} with different text")
    if errors:
        raise ImportRejected(source_name, errors)
    with transaction.atomic():
        project.directions.add(direction)
        bulk.insert_objects(GoldSegment, to_create)
    result.created = len(to_create)
    return result
