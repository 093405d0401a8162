"""Write operations of rating: the Likert ratings of annotators, the system outputs imported to rate, and the
rating items made from candidates and pseudo translations. Every rating is audited (``annotation.common.audit``).

A rating is written as review writes a decision (``annotation.common.submissions``): its idempotency key, the
owner check and the same row locks; refusals are ``core.domain.errors``.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotation.common import submissions
from annotation.common.audit import audit_record
from annotation.common.item_rows import check_output, row_cells
from annotation.common.selectors import language_codes
from annotation.models import LikertRating, RatingItem, UsedIdempotencyKey
from annotation.rating import domain as rules
from annotation.rating import selectors
from annotation.signals import annotations_written
from core import bulk
from core.corpus.domain import text_cell, text_length_problem
from core.corpus.selectors import corpus_limits
from core.domain import bidi
from core.domain.errors import Conflict, Invalid, NotFound
from core.domain.params import id_param
from core.models import Direction, Project
from core.services import ImportRejected


def rating_item_take_next(*, user, project: Project, language: str | None = None) -> RatingItem | None:
    codes = language_codes(user, language, project)
    if not codes:
        return None
    return selectors.rating_queue(user, project, codes).select_related("direction__target").first()


def rating_item_get_visible(*, user, item_id) -> RatingItem:
    try:
        return selectors.visible_rating_items(user).select_related("direction__target", "project").get(pk=item_id)
    except (RatingItem.DoesNotExist, ValueError, TypeError):
        raise NotFound(f"rating item {item_id} not found") from None


def rating_submit(
    *, user, item_id, scores: dict, idempotency_key: str, time_spent_ms=None, client_user=None
) -> tuple[LikertRating, bool]:
    """Store (or change) this rater's rating; a key used before answers with what it stored then."""
    submissions.check_owner(user, client_user)
    key = submissions.clean_key(idempotency_key)
    missing = rules.missing_dimensions(scores)
    if missing:
        raise Invalid(f"rate every dimension from 1 to 5; missing: {', '.join(missing)}", missing[0])
    values = {name: int(scores[name]) for name in rules.DIMENSION_NAMES}
    time_spent_ms = submissions.clean_time(time_spent_ms)
    fingerprint = submissions.request_hash(request={"item": id_param(item_id), **values})

    def write() -> tuple[LikertRating, bool]:
        item = rating_item_get_visible(user=user, item_id=item_id)
        # Lock the item so concurrent raters cannot both take its last slot.
        submissions.for_update(RatingItem.objects.filter(pk=item.pk)).get()
        own = LikertRating.objects.filter(item=item, rater=user).first()
        if own:
            old = {n: getattr(own, n) for n in rules.DIMENSION_NAMES}
            for n, v in values.items():
                setattr(own, n, v)
            own.idempotency_key = key
            own.save()
            submissions.remember_key(UsedIdempotencyKey.Kind.RATING, key, user, own, fingerprint)
            audit_record(actor=user, action="rating.change", obj=own, old=old, new=values)
            annotations_written.send(sender=__name__, project_id=item.project_id)
            return own, False
        limit = selectors.raters_per_item(item.project)
        if LikertRating.objects.filter(item=item).count() >= limit:
            raise Conflict(f"this item already has its {limit} ratings; take the next one")
        rating = LikertRating.objects.create(
            item=item, rater=user, time_spent_ms=time_spent_ms, idempotency_key=key, **values
        )
        submissions.remember_key(UsedIdempotencyKey.Kind.RATING, key, user, rating, fingerprint)
        audit_record(actor=user, action="rating.create", obj=rating, old=None, new=values)
        annotations_written.send(sender=__name__, project_id=item.project_id)
        return rating, True

    return submissions.keyed_write(
        UsedIdempotencyKey.Kind.RATING,
        LikertRating,
        user,
        key,
        fingerprint,
        write,
        concurrent="this item was rated concurrently; reload",
    )


@dataclass
class RatingImport:
    created: int = 0
    unchanged: int = 0


TEXT_FIELDS = ("source", "reference", "text")  # a system output's texts: at most CORPUS_MAX_SEGMENT_CHARS each


def system_outputs_import(
    *, project: Project, direction_code: str, rows: list[dict], source_name: str, system: str = ""
) -> RatingImport:
    """Import system outputs to rate. Each row: ``source``, ``text`` (the output), optional ``reference``,
    ``system``, ``id``. All rows are checked first; any problem rejects the file, nothing written."""
    direction = Direction.objects.filter(code=direction_code).first()
    if direction is None or not project.directions.filter(pk=direction.pk).exists():
        raise ImportRejected(
            source_name, [f"--direction: {direction_code} is not a direction of project {project.name}"]
        )
    parsed = _system_outputs_read(rows, source_name, system)
    errors: list[str] = []
    existing = {
        (i.system, i.external_id): i
        for i in RatingItem.objects.filter(project=project, direction=direction, kind=RatingItem.Kind.SYSTEM_OUTPUT)
    }
    result = RatingImport()
    new = []
    for ext, sys_name, src, ref, text in parsed:
        old = existing.get((sys_name, ext))
        if old is None:
            new.append(
                RatingItem(
                    project=project,
                    direction=direction,
                    kind=RatingItem.Kind.SYSTEM_OUTPUT,
                    external_id=ext,
                    system=sys_name,
                    source=src,
                    reference=ref,
                    text=text,
                )
            )
        elif (old.source, old.reference, old.text) == (src, ref, text):
            result.unchanged += 1
        else:
            errors.append(f"{source_name}: id {ext!r} of system {sys_name!r} already imported with different text")
    if errors:
        raise ImportRejected(source_name, errors)
    with transaction.atomic():
        RatingItem.objects.bulk_create(new, batch_size=1000)
    result.created = len(new)
    return result


def _system_outputs_read(rows: list[dict], source_name: str, system: str) -> list[tuple[str, str, str, str, str]]:
    """The rows, each checked, as (id, system, source, reference, text); ``system`` names the system of rows
    without one. Any problem rejects the file, every bad row named."""
    errors: list[str] = []
    seen: set[tuple[str, str]] = set()
    parsed = []
    input_limits = corpus_limits()
    limits = {
        "id": RatingItem._meta.get_field("external_id").max_length,
        "system": RatingItem._meta.get_field("system").max_length,
    }
    if system:  # the name for rows without a 'system' column: checked like the column's cells
        system, problem = text_cell(system)
        problem = problem or bidi.spanning_problem(system)
        if not problem and len(system.strip()) > limits["system"]:
            problem = f"is {len(system.strip())} characters long, at most {limits['system']} fit"
        if problem:
            raise ImportRejected(source_name, [f"--system {problem}"])

    def text_limit(col: str, value: str) -> str | None:
        # the corpus import's limit, the same for every upload (#48.3)
        return text_length_problem(value.strip(), input_limits) if col in TEXT_FIELDS else None

    for i, row in enumerate(rows, start=1):
        where = row.get("_location") or f"{source_name}:{i}"
        cells = row_cells(
            row,
            ("id", "source", "reference", "system", "text"),
            where=where,
            limits=limits,
            errors=errors,
            check=text_limit,
        )
        src, text = cells["source"].strip(), cells["text"].strip()
        sys_name = (cells["system"] or system or "").strip()
        ext = (cells["id"] or str(i)).strip()
        check_output(where, src, text, (sys_name, ext), seen, errors)
        parsed.append((ext, sys_name, src, cells["reference"].strip(), text))
    if errors:
        raise ImportRejected(source_name, errors)
    return parsed


RATABLE_CHUNK = 5000  # rows read and written per step: memory holds one chunk, not the project's pseudo translations
RATABLE_KINDS = (RatingItem.Kind.CANDIDATE, RatingItem.Kind.PSEUDO_TRANSLATION)  # each names the item's link too


def rating_items_make(*, project: Project, objects, kind: str, progress=None, chunk: int = RATABLE_CHUNK) -> int:
    """Make ``objects`` (candidates or pseudo translations, as ``kind`` says: each has ``text`` and
    ``segment``) ratable; existing items are kept; returns how many were made. Read in primary-key order,
    ``chunk`` at a time, and written through ``core.bulk`` (COPY on PostgreSQL), all in one transaction: an
    error leaves no half-made set. ``progress(n)`` after each chunk, ``n`` the objects it looked at."""
    if kind not in RATABLE_KINDS:
        raise ValueError(f"rating items of kind {kind!r} are not made from existing rows ({', '.join(RATABLE_KINDS)})")
    ordered = objects.order_by("pk")
    columns = ("pk", "segment__direction_id", "segment__source", "segment__reference", "text")
    created, last = 0, None
    with transaction.atomic():
        while True:
            rows = list((ordered if last is None else ordered.filter(pk__gt=last)).values_list(*columns)[:chunk])
            if not rows:
                return created
            # the chunk's items made before, by the item's index: an anti-join in the query would be planned on
            # the statistics from before this run's inserts, a nested loop over every item (minutes)
            rated = set(
                RatingItem.objects.filter(
                    project=project, kind=kind, **{f"{kind}_id__in": [row[0] for row in rows]}
                ).values_list(f"{kind}_id", flat=True)
            )
            created += bulk.insert_dicts(
                RatingItem,
                (
                    {
                        "project_id": project.pk,
                        "direction_id": direction_id,
                        "kind": kind,
                        "external_id": str(pk),
                        "source": source,
                        "reference": reference,
                        "text": text,
                        f"{kind}_id": pk,
                    }
                    for pk, direction_id, source, reference, text in rows
                    if pk not in rated
                ),
            )
            last = rows[-1][0]
            if progress is not None:
                progress(len(rows))


def rating_items_make_for_candidates(*, project: Project, candidates) -> int:
    """Make candidates ratable (e.g. accepted ones); existing items are kept."""
    return rating_items_make(project=project, objects=candidates, kind=RatingItem.Kind.CANDIDATE)


def rating_items_make_for_pseudo_translations(*, project: Project, pseudo_translations) -> int:
    """Make pseudo translations ratable (the text with k errors, shown with its source and reference)."""
    return rating_items_make(project=project, objects=pseudo_translations, kind=RatingItem.Kind.PSEUDO_TRANSLATION)
