"""Write operations of the corpus stage: gold pairs imported into a project's direction, from rows already
read (``import_corpus_rows``) or from an upload or a Hugging Face dataset (``import_corpus_source``).
Atomic and idempotent; every problem is named with its file and line, and nothing is written."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from core import bulk
from core.corpus.domain import CorpusRow
from core.domain import bidi
from core.domain.language_id import language_mismatch
from core.domain.languages import parse_direction
from core.models import Direction, GoldSegment, Project
from core.selectors import active_directions
from core.services import ImportRejected, direction_ensure

ID_LENGTH = GoldSegment._meta.get_field("external_id").max_length


def _corpus_limits():
    """The corpus limits the settings give (``CORPUS_LIMITS``), for every reader of an upload."""
    from django.conf import settings

    from core.corpus.domain import Limits

    return Limits(**settings.CORPUS_LIMITS)


@dataclass
class CorpusImportResult:
    created: int = 0
    unchanged: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def corpus_rows_import(
    *,
    project: Project,
    direction_code: str,
    rows: list[CorpusRow],
    source_name: str,
    known_direction: bool = False,
    check_language: bool = False,
) -> CorpusImportResult:
    """Import gold pairs atomically and idempotently.

    Re-importing the same rows changes nothing; a row whose id exists with different text is an error.
    Any error rejects the whole file: nothing is written (no Direction either: the direction is checked
    against the project before it is created). The site's forms pass ``known_direction`` (the direction
    must be one of the project's active directions: adding one is a deliberate act in the settings, so a
    typo cannot make one) and ``check_language`` (the references must read as the direction's target)."""
    if known_direction and not active_directions(project).filter(code=direction_code).exists():
        raise ImportRejected(
            source_name,
            [
                f"direction: {direction_code} is not an active direction of project {project.name}; "
                "add it in the project's settings first"
            ],
        )
    if check_language:
        _, target = parse_direction(direction_code)
        if problem := language_mismatch((row.reference for row in rows), target):
            raise ImportRejected(
                source_name,
                [
                    f"{problem}, so it was not imported into {direction_code}; choose the right direction, "
                    "or tick “the references are in another language on purpose”"
                ],
            )
    try:
        source, _ = parse_direction(direction_code)
    except ValueError as exc:
        raise ImportRejected(source_name, [f"--direction: {exc}"]) from None
    if source != project.source_language.code:
        raise ImportRejected(
            source_name,
            [
                f"--direction: {direction_code} does not start from project {project.name}'s source language {project.source_language.code}"
            ],
        )
    errors = [
        f"{row.location}: id {row.external_id[:40]!r}… is {len(row.external_id)} characters long, at most {ID_LENGTH} fit"
        for row in rows
        if len(row.external_id) > ID_LENGTH
    ]
    if errors:
        raise ImportRejected(source_name, errors)
    direction = Direction.objects.filter(code=direction_code).first()
    existing = (
        {
            seg.external_id: seg
            for seg in GoldSegment.objects.filter(project=project, direction=direction).only(
                "external_id", "source", "reference"
            )
        }
        if direction
        else {}
    )
    to_create: list[GoldSegment] = []
    result = CorpusImportResult()
    for row in rows:
        old = existing.get(row.external_id)
        if old is None:
            to_create.append(
                GoldSegment(project=project, external_id=row.external_id, source=row.source, reference=row.reference)
            )
        elif old.source == row.source and old.reference == row.reference:
            result.unchanged += 1
        else:
            errors.append(
                f"{row.location}: id {row.external_id!r} already exists in {project.name}/{direction_code} with different text"
            )
    if errors:
        raise ImportRejected(source_name, errors)
    with transaction.atomic():
        direction = direction_ensure(code=direction_code)
        project.directions.add(direction)
        for segment in to_create:
            segment.direction = direction
        bulk.insert_objects(GoldSegment, to_create)
    result.created = len(to_create)
    result.warnings = [
        f"{row.location}: {col} has bidirectional mark(s) {', '.join(found)} (kept; usual in right-to-left text)"
        for row in rows
        for col, text in (("source", row.source), ("reference", row.reference))
        if (found := bidi.controls(text, bidi.MARKS))
    ]
    return result


def corpus_source_import(
    *,
    project: Project,
    direction: str,
    columns,
    upload_name: str = "",
    data: bytes | None = None,
    hf_dataset: str = "",
    hf_config: str | None = None,
    hf_split: str = "test",
    known_direction: bool = False,
    check_language: bool = False,
) -> tuple[str, CorpusImportResult]:
    """Read a corpus (uploaded bytes, or a Hugging Face dataset through ``datasets``) and import it with
    ``corpus_rows_import``: the same validation as the command; ``CorpusError`` or ``ImportRejected`` list
    every problem with its file and line, and nothing is written. Returns (source name, result)."""
    from core.corpus.domain import read_corpus, read_hf_dataset

    if hf_dataset:
        from django.conf import settings

        rows = read_hf_dataset(
            hf_dataset,
            hf_config or None,
            hf_split or "test",
            columns,
            hub_only=True,
            timeout=settings.HF_HUB_TIMEOUT,
            limits=_corpus_limits(),
        )
        name = hf_dataset
    else:
        rows = read_corpus(data or b"", upload_name, columns, limits=_corpus_limits())
        name = upload_name
    return name, corpus_rows_import(
        project=project,
        direction_code=direction,
        rows=rows,
        source_name=name,
        known_direction=known_direction,
        check_language=check_language,
    )
