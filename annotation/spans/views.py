"""The span-annotation pages: a project's span tasks (aggregates: viewers too), starting the next item, the
annotation screen, the end page (with a crowd study's completion code), the admins' quality page and their
retrain / exclude / reinstate buttons, and the crowd link. Thin: reads through selectors, writes through
services. The items page is the project's (``xqmeval.projects``: it reads candidates and pseudo translations).
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.spans import domain as rules
from annotation.spans import selectors, services
from core import access
from core.domain.errors import Invalid, NotFound
from core.errors import RefusalAsMessage, answers_refusals

# The ESA score's anchors as Kocmi et al. (2024) show them beside the slider.
ESA_ANCHORS = (
    (0, "no meaning preserved"),
    (33, "some meaning preserved"),
    (66, "most meaning preserved, few grammar mistakes"),
    (100, "perfect meaning and grammar"),
)


@login_required
@require_http_methods(["GET", "POST"])
@answers_refusals
def tasks(request, project):
    """The project's span tasks with their counts (anyone who sees the project); admins make new ones."""
    if request.method == "POST":  # admins only, decided before the lookup: the answer tells nothing
        access.require_admin(request.user, error=NotFound)
    project = access.visible_project(request.user, project)
    is_admin = access.is_admin(request.user)
    if request.method == "POST":
        with RefusalAsMessage(request) as refusal:
            try:
                per_item = int(request.POST.get("annotators_per_item") or 1)
                critical = int(request.POST.get("critical_weight") or 25)
                crowd_items = int(request.POST.get("crowd_items") or 20)
                threshold = float(request.POST.get("pass_threshold") or 0.5)
            except ValueError:
                raise Invalid(
                    "annotators per item, critical weight, crowd items and pass threshold are numbers"
                ) from None
            task = services.span_task_create(
                actor=request.user,
                project=project,
                name=request.POST.get("name", ""),
                title=request.POST.get("title", "")[:200],
                protocol=request.POST.get("protocol", ""),
                annotators_per_item=per_item,
                critical_weight=critical,
                ai_metric=request.POST.get("ai_metric", "").strip()[:81],
                pass_threshold=threshold,
                is_crowd=bool(request.POST.get("is_crowd")),
                crowd_items=crowd_items,
            )
        if refusal.error is None:
            messages.success(request, f"Span task {task.name} made; add its items next.")
        return redirect("spans:tasks", project=project.name)
    rows = [
        {
            "task": t,
            "summary": selectors.task_summary(t),
            "crowd_link": (
                request.build_absolute_uri(reverse("spans:crowd", args=[t.pk, t.crowd_token]))
                + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
                if is_admin and t.is_crowd
                else ""
            ),
        }
        for t in selectors.tasks_of(project)
    ]
    works = access.is_admin(request.user) or access.is_annotator(request.user)
    return render(
        request,
        "spans/tasks.html",
        {"project": project, "rows": rows, "is_admin": is_admin, "works": works, "protocols": rules.PROTOCOLS},
    )


@login_required
@require_http_methods(["GET", "POST"])
@answers_refusals
def start(request, project, task):
    """GET: the task's start page (takes nothing: a prefetch must hand out no item); POST: hand out the next
    item (or resume the held one) and open it."""
    task = selectors.work_task(request.user, project, task)
    if request.method == "GET":
        return render(
            request,
            "spans/start.html",
            {
                "task": task,
                "progress": selectors.progress(request.user, task),
                "retrain": selectors.needs_retraining(request.user, task),
            },
        )
    annotation = services.span_annotation_take_next(user=request.user, task=task)
    if annotation is None:
        return redirect("spans:done", project=task.project.name, task=task.name)
    return redirect("spans:annotate", pk=annotation.pk)


@login_required
@require_GET
@answers_refusals
def done(request, project, task):
    task = selectors.work_task(request.user, project, task)
    code = services.crowd_completion_code_read(user=request.user, task=task)
    return render(
        request,
        "spans/done.html",
        {
            "task": task,
            "code": code,
            "progress": selectors.progress(request.user, task),
            "crowd": selectors.crowd_task_id(request.user) is not None,
        },
    )


def _tokens(text: str, language_code: str) -> list[dict]:
    return [{"s": t.start, "e": t.end, "t": t.text, "space": t.space} for t in rules.tokens(text, language_code)]


def _spans_shown(annotation) -> list[dict]:
    """The spans the page starts from: those submitted, else the metric's (ESA-AI) for the annotator to keep
    or change."""
    if annotation.submitted_at is None:
        return [
            {"side": rules.TARGET, **ai, "category": "", "ai_index": i} for i, ai in enumerate(annotation.item.ai_spans)
        ]
    return [
        {
            "side": s.side,
            "start": s.start,
            "end": s.end,
            "severity": s.severity,
            "category": s.category,
            "ai_index": s.ai_index,
        }
        for s in annotation.spans.all()
    ]


@login_required
@require_GET
@answers_refusals
def annotate(request, pk):
    annotation = services.span_annotation_get_own(user=request.user, annotation_id=pk)
    item, task = annotation.item, annotation.item.task
    src, tgt = item.direction.source, item.direction.target
    start_url = reverse("spans:start", args=[task.project.name, task.name])
    previous = selectors.previous_submitted(request.user, annotation)
    return render(
        request,
        "spans/annotate.html",
        {
            "annotation": annotation,
            "item": item,
            "task": task,
            "source_language": src,
            "language": tgt,
            "source_tokens": _tokens(item.source, src.code),
            "target_tokens": _tokens(item.translation, tgt.code),
            "progress": selectors.progress(request.user, task),
            "anchors": ESA_ANCHORS,
            "severities": rules.SEVERITIES[task.protocol],
            "categories": rules.MQM_CATEGORIES,
            "retrain": selectors.needs_retraining(request.user, task),
            "previous_url": reverse("spans:annotate", args=[previous]) if previous else "",
            "config": {
                "user": request.user.pk,
                "project": task.project.name,
                "annotation": annotation.pk,
                "protocol": task.protocol,
                "submitted": annotation.submitted_at is not None,
                "score": annotation.score,
                "spans": _spans_shown(annotation),
                "aiSpans": item.ai_spans,
                "criticalWeight": task.critical_weight,
                "severities": list(rules.SEVERITIES[task.protocol]),
                "categories": list(rules.MQM_CATEGORIES),
                "submitUrl": reverse("spans_api:submit", args=[annotation.pk]),
                "nextUrl": start_url + "?go=1",
                "key": uuid.uuid4().hex,
                "sourceRtl": src.rtl,
                "targetRtl": tgt.rtl,
            },
        },
    )


@login_required
@require_GET
@answers_refusals
def quality(request, project, task):
    """Admins: each annotator's attention items passed, pass rate, failing or not, and the actions."""
    access.require_admin(request.user, error=NotFound)
    task = selectors.seen_task(request.user, project, task)
    return render(
        request,
        "spans/quality.html",
        {
            "task": task,
            "rows": selectors.quality_rows(task),
            "summary": selectors.task_summary(task),
            # the span agreement page (annotation.agreement, URL name agreement:spans)
            "agreement_url": _agreement_url(task),
        },
    )


def _agreement_url(task) -> str:
    from django.urls import NoReverseMatch

    try:
        return reverse("agreement:spans", args=[task.project.name, task.name])
    except NoReverseMatch:
        return ""


@login_required
@require_POST
@answers_refusals
def annotator_action(request, project, task, annotator):
    access.require_admin(request.user, error=NotFound)
    task = selectors.seen_task(request.user, project, task)
    with RefusalAsMessage(request) as refusal:
        record = services.annotator_action_record(
            actor=request.user,
            task=task,
            annotator_id=annotator,
            action=request.POST.get("action", ""),
            reason=request.POST.get("reason", ""),
        )
    if refusal.error is None:
        messages.success(request, f"Recorded: {record.action} of annotator {record.annotator.username}.")
    return redirect("spans:quality", project=task.project.name, task=task.name)


@require_GET
@answers_refusals
def crowd(request, task, token):
    """A Prolific link: signs in this study's one-campaign annotator (made on the first visit) and opens the
    task. Prolific's three ids only; nothing else about the worker is kept."""
    user, task_obj = services.crowd_worker_ensure(
        task_id=task,
        token=token,
        prolific_pid=request.GET.get("PROLIFIC_PID", ""),
        study_id=request.GET.get("STUDY_ID", ""),
        session_id=request.GET.get("SESSION_ID", ""),
    )
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return redirect("spans:start", project=task_obj.project.name, task=task_obj.name)
