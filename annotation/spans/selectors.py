"""Read-only queries of span annotation: the tasks and items a user may see, an annotator's queue and
progress, the completed annotations the statistics read, and the quality-control table."""

from __future__ import annotations

from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from annotation.models import CrowdWorker, SpanAnnotation, SpanAnnotatorAction, SpanItem, SpanTask
from annotation.spans import domain as rules
from core import access
from core.models import Project


def crowd_task_id(user) -> int | None:
    """The one task a crowd worker's account exists for (None: not a crowd worker)."""
    if not getattr(user, "is_authenticated", False):
        return None
    return CrowdWorker.objects.filter(user=user).values_list("task_id", flat=True).first()


def visible_items(user) -> QuerySet[SpanItem]:
    """Items a user may annotate: admins every one; annotators those of their directions (as review's);
    a crowd worker those of their one task; viewers and strangers none."""
    crowd = crowd_task_id(user)
    if crowd is not None:
        return SpanItem.objects.filter(task_id=crowd)
    if not (access.is_admin(user) or access.is_annotator(user)):
        return SpanItem.objects.none()
    return SpanItem.objects.filter(access.work_filter(user, project_path="task__project", direction_path="direction"))


def work_task(user, project_name: str, task_name: str) -> SpanTask:
    """A task whose items ``user`` annotates (a crowd worker: only theirs); 404 otherwise."""
    crowd = crowd_task_id(user)
    qs = SpanTask.objects.select_related("project")
    if crowd is not None:
        qs = qs.filter(pk=crowd)
    else:
        project = access.work_project(user, project_name)
        qs = qs.filter(project=project)
    task = qs.filter(project__name=str(project_name), name=str(task_name)).first()
    if task is None:
        raise access.not_found()
    return task


def seen_task(user, project_name: str, task_name: str) -> SpanTask:
    """A task whose aggregates ``user`` reads (viewers too)."""
    project = access.visible_project(user, project_name)
    task = SpanTask.objects.select_related("project").filter(project=project, name=str(task_name)).first()
    if task is None:
        raise access.not_found()
    return task


def tasks_of(project: Project) -> QuerySet[SpanTask]:
    return SpanTask.objects.filter(project=project).order_by("name")


def own_annotation(user, annotation_id) -> SpanAnnotation | None:
    try:
        pk = int(annotation_id)
    except (TypeError, ValueError):
        return None
    return (
        SpanAnnotation.objects.select_related(
            "item__task__project", "item__direction__source", "item__direction__target"
        )
        .filter(pk=pk, annotator=user, excluded=False, item__in=visible_items(user))
        .first()
    )


def excluded_ids(task: SpanTask) -> set[int]:
    """Annotators whose latest action in the task is an exclusion."""
    latest: dict[int, str] = {}
    for annotator, action in (
        SpanAnnotatorAction.objects.filter(task=task).order_by("at", "id").values_list("annotator_id", "action")
    ):
        if action in (SpanAnnotatorAction.Action.EXCLUDE, SpanAnnotatorAction.Action.REINSTATE):
            latest[annotator] = action
    return {a for a, action in latest.items() if action == SpanAnnotatorAction.Action.EXCLUDE}


def attention_share(task: SpanTask) -> float:
    counts = SpanItem.objects.filter(task=task).aggregate(n=Count("pk"), a=Count("pk", filter=Q(is_attention=True)))
    return counts["a"] / counts["n"] if counts["n"] else 0.0


def queue(user, task: SpanTask, *, attention: bool) -> QuerySet[SpanItem]:
    """Items of ``task`` this user has not been handed, in queue order: regular items while they still lack
    annotators (held or submitted, excluded annotators' not counted), attention items for everyone. Correlated
    subqueries walked in position order (the ``(task, position)`` index), so taking the next item reads only
    the items before it, not a grouped count of the whole task."""
    mine = SpanAnnotation.objects.filter(item=OuterRef("pk"), annotator=user)
    qs = visible_items(user).filter(task=task, is_attention=attention).filter(~Exists(mine))
    if not attention:
        taken = (
            SpanAnnotation.objects.filter(item=OuterRef("pk"), excluded=False)
            .order_by()
            .values("item")
            .annotate(c=Count("*"))
            .values("c")[:1]
        )
        qs = qs.annotate(n=Coalesce(Subquery(taken), Value(0))).filter(n__lt=task.annotators_per_item)
    return qs.order_by("position", "pk")


def open_annotation(user, task: SpanTask) -> SpanAnnotation | None:
    """The item this user was handed and has not submitted yet (a reload resumes it)."""
    return (
        SpanAnnotation.objects.filter(annotator=user, item__task=task, submitted_at__isnull=True, excluded=False)
        .order_by("assigned_at", "pk")
        .first()
    )


def handed_count(user, task: SpanTask) -> int:
    return SpanAnnotation.objects.filter(annotator=user, item__task=task).count()


def progress(user, task: SpanTask) -> dict:
    done = SpanAnnotation.objects.filter(
        annotator=user, item__task=task, submitted_at__isnull=False, excluded=False
    ).count()
    remaining = queue(user, task, attention=False).count() + open_count(user, task)
    crowd = crowd_task_id(user)
    if crowd is not None:
        remaining = max(0, min(remaining, task.crowd_items - done))
    return {"done": done, "remaining": remaining, "total": done + remaining}


def open_count(user, task: SpanTask) -> int:
    return SpanAnnotation.objects.filter(
        annotator=user, item__task=task, submitted_at__isnull=True, excluded=False
    ).count()


def completed_annotations(task: SpanTask, *, attention: bool | None = None) -> QuerySet[SpanAnnotation]:
    """The annotations every figure reads: submitted, not by an excluded annotator (``attention`` None: all
    items, False: the regular ones, True: the attention items only)."""
    qs = SpanAnnotation.objects.filter(item__task=task, submitted_at__isnull=False, excluded=False)
    if attention is not None:
        qs = qs.filter(item__is_attention=attention)
    return qs


def task_summary(task: SpanTask) -> dict:
    """Aggregates anyone who sees the project reads: items, annotations, per direction."""
    items = SpanItem.objects.filter(task=task)
    done = completed_annotations(task)
    by_direction = {
        row["direction__code"]: {"items": row["n"], "attention": row["a"]}
        for row in items.values("direction__code").annotate(n=Count("pk"), a=Count("pk", filter=Q(is_attention=True)))
    }
    for row in done.values("item__direction__code").annotate(n=Count("pk")):
        by_direction.setdefault(row["item__direction__code"], {"items": 0, "attention": 0})["annotations"] = row["n"]
    for row in by_direction.values():
        row.setdefault("annotations", 0)
    return {
        "protocol": task.protocol,
        "items": items.count(),
        "annotations": done.count(),
        "directions": dict(sorted(by_direction.items())),
    }


def quality_rows(task: SpanTask) -> list[dict]:
    """Per annotator of the task: annotations, attention items passed of those judged (since their last
    retraining), the pass rate, failing or not, excluded or not, their last action."""
    actions: dict[int, SpanAnnotatorAction] = {}
    for a in SpanAnnotatorAction.objects.filter(task=task).order_by("at", "id"):
        actions[a.annotator_id] = a
    retrained_at = {
        a: at
        for a, at in SpanAnnotatorAction.objects.filter(task=task, action=SpanAnnotatorAction.Action.RETRAIN)
        .order_by("at")
        .values_list("annotator_id", "at")
    }
    excluded = excluded_ids(task)
    rows: dict[int, dict] = {}
    qs = SpanAnnotation.objects.filter(item__task=task, submitted_at__isnull=False).values(
        "annotator_id", "annotator__username", "item__is_attention", "attention_passed", "submitted_at"
    )
    for r in qs:
        row = rows.setdefault(
            r["annotator_id"],
            {"annotator_id": r["annotator_id"], "username": r["annotator__username"], "annotations": 0, "results": []},
        )
        row["annotations"] += 1
        since = retrained_at.get(r["annotator_id"])
        if (
            r["item__is_attention"]
            and r["attention_passed"] is not None
            and (since is None or r["submitted_at"] > since)
        ):
            row["results"].append(r["attention_passed"])
    out = []
    for annotator_id, row in sorted(rows.items(), key=lambda kv: kv[1]["username"]):
        results = row.pop("results")
        rate = rules.pass_rate(results)
        last = actions.get(annotator_id)
        out.append(
            {
                **row,
                "judged": len(results),
                "passed": sum(results),
                "pass_rate": rate,
                "failing": rate is not None and rate < task.pass_threshold,
                "excluded": annotator_id in excluded,
                "last_action": last.action if last else "",
                "last_action_at": last.at if last else None,
            }
        )
    return out


def previous_submitted(user, annotation: SpanAnnotation) -> int | None:
    """The id of the user's latest other submitted annotation of the task (the page's way back), if any."""
    return (
        SpanAnnotation.objects.filter(
            annotator=user, item__task=annotation.item.task, submitted_at__isnull=False, excluded=False
        )
        .exclude(pk=annotation.pk)
        .order_by("-submitted_at")
        .values_list("pk", flat=True)
        .first()
    )


def needs_retraining(user, task: SpanTask) -> bool:
    """The admin asked this annotator to retrain and they have submitted nothing since: the screen opens the
    guidelines."""
    last = SpanAnnotatorAction.objects.filter(task=task, annotator=user).order_by("-at", "-id").first()
    if not last or last.action != SpanAnnotatorAction.Action.RETRAIN:
        return False
    return not SpanAnnotation.objects.filter(annotator=user, item__task=task, submitted_at__gt=last.at).exists()
