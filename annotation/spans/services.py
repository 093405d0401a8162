"""Write operations of span annotation: tasks, their items (from files and system outputs here; candidates and
pseudo translations through ``exports/span_items.py``, which reads them), handing items out, the annotators'
submissions, the admins' quality decisions (retrain, exclude, reinstate) and crowd workers.

A submission is written as review writes a decision (``annotation.common.submissions``): its idempotency key
(a retry answers with what it stored; the same key with another body is refused, 422), the owner check, the
row locks. Every refusal is a ``core.domain.errors`` error and writes nothing.
"""

from __future__ import annotations

import re
import secrets

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from annotation.common import submissions
from annotation.common.audit import audit_record
from annotation.common.item_rows import check_output, row_cells
from annotation.models import (
    CrowdWorker,
    ErrorSpan,
    SpanAnnotation,
    SpanAnnotatorAction,
    SpanItem,
    SpanTask,
    UsedIdempotencyKey,
)
from annotation.spans import domain as rules
from annotation.spans import selectors
from core import access
from core.domain.errors import Conflict, Forbidden, Invalid, NotFound
from core.domain.params import id_param
from core.domain.records import fields_of
from core.models import Direction, Project
from core.services import ImportRejected, user_create

_SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,100}$")


def span_task_create(
    *,
    actor,
    project: Project,
    name: str,
    protocol: str,
    title: str = "",
    annotators_per_item: int = 1,
    critical_weight: int = 25,
    ai_metric: str = "",
    pass_threshold: float = 0.5,
    is_crowd: bool = False,
    crowd_items: int = 20,
    seed: int | None = None,
) -> SpanTask:
    access.require_admin(actor, error=Forbidden)
    name = (name or "").strip()
    if not _SLUG.match(name):
        raise Invalid("name: letters, digits, - and _ (1–100 characters)", "name")
    if protocol not in rules.PROTOCOLS:
        raise Invalid(f"protocol must be one of {', '.join(rules.PROTOCOLS)}", "protocol")
    if critical_weight not in rules.MQM_CRITICAL_WEIGHTS:
        raise Invalid("critical_weight: 10 or 25", "critical_weight")
    if not 1 <= int(annotators_per_item) <= 20:
        raise Invalid("annotators_per_item: 1 to 20", "annotators_per_item")
    if not 0 <= float(pass_threshold) <= 1:
        raise Invalid("pass_threshold: 0 to 1", "pass_threshold")
    if not 1 <= int(crowd_items) <= 10_000:
        raise Invalid("crowd_items: 1 to 10000", "crowd_items")
    if len(ai_metric) > 80 or len(title) > 200:
        raise Invalid("ai_metric (80) or title (200) too long", "ai_metric" if len(ai_metric) > 80 else "title")
    if SpanTask.objects.filter(project=project, name=name).exists():
        raise Conflict(f"project {project.name} has a span task named {name!r} already", "name")
    task = SpanTask.objects.create(
        project=project,
        name=name,
        title=title,
        protocol=protocol,
        critical_weight=critical_weight,
        annotators_per_item=annotators_per_item,
        ai_metric=ai_metric,
        pass_threshold=pass_threshold,
        is_crowd=is_crowd,
        crowd_token=secrets.token_urlsafe(24) if is_crowd else "",
        completion_code=secrets.token_hex(4).upper() if is_crowd else "",
        crowd_items=crowd_items,
        seed=secrets.randbelow(2**31) if seed is None else seed,
        created_by=actor,
    )
    audit_record(actor=actor, action="span_task.create", obj=task, new={"name": name, "protocol": protocol})
    return task


# ---- items ----------------------------------------------------------------------------------------------

ITEM_FIELDS = (
    "direction_id",
    "kind",
    "external_id",
    "system",
    "source",
    "reference",
    "translation",
    "candidate_id",
    "pseudo_translation_id",
    "injected_spans",
    "is_attention",
    "ai_spans",
    "ai_metric",
)


def span_items_add(*, task: SpanTask, entries: list[dict]) -> int:
    """Add items (dicts of ``ITEM_FIELDS``; missing ones default) to ``task``, those not there yet (by
    direction, kind, system and id). Their places in the queue are a seeded shuffle after the items already there."""
    existing = set(SpanItem.objects.filter(task=task).values_list("direction_id", "kind", "system", "external_id"))
    new = []
    for e in entries:
        key = (e["direction_id"], e["kind"], e.get("system", ""), str(e.get("external_id", "")))
        if key in existing:
            continue
        existing.add(key)
        new.append(e)
    if not new:
        return 0
    with transaction.atomic():
        submissions.for_update(SpanTask.objects.filter(pk=task.pk)).get()  # one writer of positions at a time
        start = (SpanItem.objects.filter(task=task).aggregate(m=Max("position"))["m"] or 0) + 1
        order = rules.queue_order(len(new), hash((task.seed, start)) & 0x7FFFFFFF)
        SpanItem.objects.bulk_create(
            [
                SpanItem(
                    task=task,
                    direction_id=e["direction_id"],
                    kind=e["kind"],
                    external_id=str(e.get("external_id", "")),
                    system=e.get("system", ""),
                    source=e["source"],
                    reference=e.get("reference", ""),
                    translation=e["translation"],
                    candidate_id=e.get("candidate_id"),
                    pseudo_translation_id=e.get("pseudo_translation_id"),
                    injected_spans=[list(s) for s in e.get("injected_spans", [])],
                    is_attention=bool(e.get("is_attention")),
                    ai_spans=e.get("ai_spans", []),
                    ai_metric=e.get("ai_metric", "") if e.get("ai_spans") else "",
                    position=start + order[i],
                )
                for i, e in enumerate(new)
            ],
            batch_size=1000,
        )
        audit_record(actor=None, action="span_items.create", obj=task, new={"created": len(new)})
    return len(new)


def span_items_import(
    *, task: SpanTask, direction_code: str, rows: list[dict], source_name: str, system: str = "", kind: str = "file"
) -> int:
    """Items from rows of a file: ``source``, ``text`` (or ``translation``), optional ``reference``, ``system``
    and ``id``, the columns ``import_rating_items`` reads. Every row is checked first; a bad row rejects the
    file, named by line, and nothing is written. Returns how many items were made (existing ids are kept)."""
    if kind not in (SpanItem.Kind.FILE, SpanItem.Kind.SYSTEM_OUTPUT):
        raise Invalid(f"kind must be file or system_output, not {kind!r}", "kind")
    direction = Direction.objects.filter(code=direction_code).first()
    if direction is None or not task.project.directions.filter(pk=direction.pk).exists():
        raise ImportRejected(
            source_name, [f"direction: {direction_code} is not a direction of project {task.project.name}"]
        )
    limits = {"id": 200, "system": 200}
    errors: list[str] = []
    entries, seen = [], set()
    for i, row in enumerate(rows, start=1):
        where = row.get("_location") or f"{source_name}:{i}"
        cells = row_cells(
            row,
            ("id", "source", "reference", "system", "text", "translation"),
            where=where,
            limits=limits,
            errors=errors,
        )
        src = cells["source"].strip()
        text = (cells["translation"] or cells["text"]).strip()
        sys_name = (cells["system"] or system or "").strip()
        ext = (cells["id"] or str(i)).strip()
        check_output(where, src, text, (sys_name, ext), seen, errors)
        entries.append(
            {
                "direction_id": direction.pk,
                "kind": kind,
                "external_id": ext,
                "system": sys_name,
                "source": src,
                "reference": cells["reference"].strip(),
                "translation": text,
            }
        )
        if len(errors) > 50:
            break
    if not rows:
        errors.append(f"{source_name}: no rows")
    if errors:
        raise ImportRejected(source_name, errors)
    return span_items_add(task=task, entries=entries)


# ---- handing out and submitting --------------------------------------------------------------------------


def span_annotation_take_next(*, user, task: SpanTask) -> SpanAnnotation | None:
    """The item this user works on now: the one handed out and not submitted (a reload resumes it), else the
    next of the queue, made theirs. Attention items come at this user's attention places
    (``rules.attention_slot``), spread through the queue; none is handed out once no regular item is left,
    so they never bunch at the end. None: nothing left (or a crowd worker's share is done)."""
    if not task.is_open or user.pk in selectors.excluded_ids(task):
        return None
    held = selectors.open_annotation(user, task)
    if held is not None:
        return held
    if selectors.crowd_task_id(user) == task.pk and selectors.progress(user, task)["remaining"] <= 0:
        return None
    regular = list(selectors.queue(user, task, attention=False).values_list("pk", flat=True)[:20])
    if not regular:
        return None
    slot = rules.attention_slot(
        selectors.handed_count(user, task), selectors.attention_share(task), f"{task.seed}:{user.pk}"
    )
    attention = list(selectors.queue(user, task, attention=True).values_list("pk", flat=True)[:20]) if slot else []
    for ids in (attention, regular):
        for item_id in ids:
            try:
                with transaction.atomic():
                    submissions.serialize_writers()
                    item = submissions.for_update(SpanItem.objects.filter(pk=item_id), skip_locked=True).first()
                    if item is None:
                        continue
                    if not item.is_attention:
                        taken = SpanAnnotation.objects.filter(item=item, excluded=False).count()
                        if taken >= task.annotators_per_item:
                            continue
                    return SpanAnnotation.objects.create(item=item, annotator=user)
            except IntegrityError:  # handed to this user by a concurrent request of theirs
                held = selectors.open_annotation(user, task)
                if held is not None:
                    return held
    return None


def span_annotation_get_own(*, user, annotation_id) -> SpanAnnotation:
    annotation = selectors.own_annotation(user, annotation_id)
    if annotation is None:
        raise NotFound(f"span annotation {annotation_id} not found")
    return annotation


def span_annotation_submit(
    *, user, annotation_id, spans, score=None, active_ms=None, idempotency_key: str, client_user=None
) -> tuple[SpanAnnotation, bool]:
    """Store this annotator's spans and score of one handed-out item (again: changes them). Returns the
    annotation and whether this was its first submission. Checks everything before writing anything."""
    submissions.check_owner(user, client_user)
    key = submissions.clean_key(idempotency_key)
    annotation = span_annotation_get_own(user=user, annotation_id=annotation_id)
    item, task = annotation.item, annotation.item.task
    checked = rules.check_spans(
        spans, source=item.source, translation=item.translation, protocol=task.protocol, ai_count=len(item.ai_spans)
    )
    value = rules.check_score(score, task.protocol)
    if task.protocol == rules.MQM:
        value = rules.mqm_score((s.severity for s in checked), task.critical_weight)
    active_ms = submissions.clean_time(active_ms)
    fingerprint = submissions.request_hash(
        request={
            "annotation": annotation.pk,
            "score": value,
            "spans": [[s.side, s.start, s.end, s.severity, s.category, s.ai_index] for s in checked],
        }
    )
    return submissions.keyed_write(
        UsedIdempotencyKey.Kind.SPANS,
        SpanAnnotation,
        user,
        key,
        fingerprint,
        lambda: _span_annotation_store(user, annotation_id, annotation, checked, value, active_ms, key, fingerprint),
        concurrent="this item was submitted concurrently; reload",
    )


def _span_annotation_store(
    user,
    annotation_id,
    annotation: SpanAnnotation,
    checked: list[rules.Span],
    value,
    active_ms,
    key: str,
    fingerprint: str,
) -> tuple[SpanAnnotation, bool]:
    """``span_annotation_submit``'s write, in its transaction: the checked spans and score replace what the
    annotation held; the crowd worker whose share this finishes is done."""
    item, task = annotation.item, annotation.item.task
    if not task.is_open:
        raise Conflict("this task is closed; nothing was stored")
    annotation = submissions.for_update(SpanAnnotation.objects.filter(pk=annotation.pk)).get()
    if annotation.excluded:
        raise NotFound(f"span annotation {annotation_id} not found")
    first = annotation.submitted_at is None
    old = None if first else {"score": annotation.score, "spans": annotation.spans.count()}
    ErrorSpan.objects.filter(annotation=annotation).delete()
    ErrorSpan.objects.bulk_create([ErrorSpan(annotation=annotation, **fields_of(s)) for s in checked])
    annotation.score = value
    annotation.ai_fates = rules.ai_fates(checked, item.ai_spans)
    if item.is_attention:
        annotation.attention_passed = rules.attention_passed(
            [(s.start, s.end) for s in checked if s.side == rules.TARGET],
            [tuple(x) for x in item.injected_spans],
        )
    annotation.active_ms = min(rules.MAX_ACTIVE_MS, (annotation.active_ms or 0) + (active_ms or 0))
    annotation.idempotency_key = key
    if first:
        annotation.submitted_at = timezone.now()
    annotation.save()
    submissions.remember_key(UsedIdempotencyKey.Kind.SPANS, key, user, annotation, fingerprint)
    new = {"score": value, "spans": len(checked)}
    audit_record(
        actor=user,
        action="span_annotation.create" if first else "span_annotation.change",
        obj=annotation,
        old=old,
        new=new,
    )
    worker = CrowdWorker.objects.filter(user=user, task=task, completed_at__isnull=True).first()
    if worker is not None and selectors.progress(user, task)["remaining"] <= 0:
        worker.completed_at = timezone.now()
        worker.save(update_fields=["completed_at"])
    return annotation, first


# ---- quality control -------------------------------------------------------------------------------------


def annotator_action_record(
    *, actor, task: SpanTask, annotator_id, action: str, reason: str = ""
) -> SpanAnnotatorAction:
    """Record an admin's decision about one annotator of ``task``. Exclude: their annotations leave every
    figure (kept, flagged ``excluded``) and the items they held count no more, so the queue offers them to
    others; reinstate undoes that; retrain restarts their pass rate and opens the guidelines on their screen."""
    access.require_admin(actor, error=Forbidden)
    if action not in SpanAnnotatorAction.Action.values:
        raise Invalid(f"action must be one of {', '.join(SpanAnnotatorAction.Action.values)}", "action")
    if len(reason or "") > 500:
        raise Invalid("reason: at most 500 characters", "reason")
    pk = id_param(annotator_id)
    annotator = (
        get_user_model().objects.filter(pk=pk, span_annotations__item__task=task).distinct().first() if pk else None
    )
    if annotator is None:
        raise NotFound(f"annotator {annotator_id} has no annotation in task {task.name}")
    with transaction.atomic():
        record = SpanAnnotatorAction.objects.create(
            task=task, annotator=annotator, action=action, reason=(reason or "").strip(), by=actor
        )
        if action in (SpanAnnotatorAction.Action.EXCLUDE, SpanAnnotatorAction.Action.REINSTATE):
            SpanAnnotation.objects.filter(item__task=task, annotator=annotator).update(
                excluded=action == SpanAnnotatorAction.Action.EXCLUDE
            )
        audit_record(
            actor=actor,
            action=f"span_annotator.{action}",
            obj=record,
            new={"annotator": annotator.pk, "reason": record.reason},
        )
    return record


# ---- crowd campaigns -------------------------------------------------------------------------------------

_PROLIFIC_ID = re.compile(r"^[A-Za-z0-9]{1,64}$")


def crowd_worker_ensure(*, task_id, token: str, prolific_pid: str, study_id: str, session_id: str):
    """The one-campaign annotator of this Prolific worker in this task (made on the first visit). The link's
    secret must match; the three ids must look like Prolific's (letters and digits). Nothing else about the
    worker is stored: the account has no name, e-mail or usable password."""
    task = SpanTask.objects.filter(pk=task_id, is_crowd=True, is_open=True).first() if str(task_id).isdigit() else None
    if task is None or not task.crowd_token or not secrets.compare_digest(str(token), task.crowd_token):
        raise NotFound("no such study")
    for field, value in (("PROLIFIC_PID", prolific_pid), ("STUDY_ID", study_id), ("SESSION_ID", session_id)):
        if not _PROLIFIC_ID.match(value or ""):
            raise Invalid(f"{field} is missing or not a Prolific id (letters and digits, 1–64)", field)
    with transaction.atomic():
        worker = CrowdWorker.objects.filter(task=task, prolific_pid=prolific_pid).select_related("user").first()
        if worker is not None:
            return worker.user, task
        # an annotator with no name, e-mail or usable password: the account of this one campaign
        user = user_create(username=f"crowd-{task.pk}-{secrets.token_hex(8)}", password=secrets.token_urlsafe(24))
        user.set_unusable_password()
        user.save(update_fields=["password"])
        try:
            with transaction.atomic():
                CrowdWorker.objects.create(
                    task=task, user=user, prolific_pid=prolific_pid, study_id=study_id, session_id=session_id
                )
        except IntegrityError:  # the same worker's second tab, at the same moment
            raise Conflict("this study was opened twice at once; reload the link") from None
    return user, task


def crowd_completion_code_read(*, user, task: SpanTask) -> str | None:
    """The study's completion code once this crowd worker has nothing left; None before."""
    worker = CrowdWorker.objects.filter(user=user, task=task).first()
    if worker is None or selectors.progress(user, task)["remaining"] > 0:
        return None
    return task.completion_code
