"""Injection runs in the browser: start, watch, cancel, retry failed; candidates with their checks.

Runs are admin work; candidates are visible to annotators for their own languages only (core.access).
Thin over injection.services and injection.selectors.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core import access
from core.domain.params import id_param
from core.models import FINISHED, JobStatus, Project
from core.paging import EstimatedCountPaginator, within_budget
from injection import selectors, services, tasks
from injection.forms import StartRunForm
from injection.models import InjectionRun

ADMINS_ONLY = "injection runs are managed by admins"


def _tell_run_outcome(request, run: InjectionRun, handed_over: str) -> None:
    """Say what happened: without a broker the run went through in this request, so report how it ended;
    with one it was handed to a worker (``handed_over``) and its page shows the progress."""
    run.refresh_from_db()
    if tasks.queued() or run.status not in FINISHED:
        messages.success(request, handed_over)
    elif run.status == JobStatus.DONE:
        messages.success(
            request, f"Run {run.name} finished: {run.done} of {run.total} item(s) done, {run.failed} failed."
        )
    else:
        messages.error(
            request,
            f"Run {run.name} {run.status}: {run.done} of {run.total} item(s) done, {run.failed} failed. {run.error}".rstrip(),
        )


@login_required
def runs(request):
    access.require_admin(request.user, message=ADMINS_ONLY)
    project = Project.objects.filter(name=request.GET.get("project", "")).first()  # started from a project's page
    form = StartRunForm(request.POST or None, project=project)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        spec = services.RunSpec(
            project=data["project"],
            kind=data["kind"],
            backend=data["backend"],
            directions=[d.code for d in data["directions"]],
            error_types=list(data["error_types"]),
            name=data["name"],
            model=data["model"],
            endpoint=data.get("endpoint") or "",
            base_url=data.get("base_url") or "",
            custom_url_allowed=settings.LLM_ALLOW_CUSTOM_URL,
            concurrency=data["concurrency"],
            rpm=data["rpm"],
            seed=data["seed"],
            temperature=data["temperature"],
            engine_options=data["engine_options"],
            created_by=request.user,
            submission=data["submission"],
        )
        try:
            with transaction.atomic():
                earlier = services.run_find_submitted(project=data["project"], submission=data["submission"])
                if earlier is None:
                    run = services.run_start(spec=spec)
                    tasks.enqueue(run=run)
        except services.RunRejected as exc:
            form.add_rejection(exc.problems)
        except services.RunInProgress as exc:  # one start per project at a time: show the one that runs
            messages.info(request, f"Run {exc.run.name} is already {exc.run.status}; no second run was started.")
            return redirect("injection:run", pk=exc.run.pk)
        else:
            if earlier is not None:  # the same form again: show the run it started
                messages.info(request, f"Run {earlier.name} was already started from this form.")
                return redirect("injection:run", pk=earlier.pk)
            _tell_run_outcome(request, run, f"Run {run.name} started: {run.total} item(s).")
            return redirect("injection:run", pk=run.pk)
    recent = InjectionRun.objects.select_related("project").all()
    if project is not None:
        recent = recent.filter(project=project)
    return render(request, "injection/runs.html", {"form": form, "runs": recent[:100], "project": project})


@login_required
def run_detail(request, pk: int):
    access.require_admin(request.user, message=ADMINS_ONLY)
    run = get_object_or_404(InjectionRun.objects.select_related("project"), pk=pk)
    candidates = run.candidates.all()
    return render(
        request,
        "injection/run.html",
        {
            "run": run,
            "progress": selectors.run_progress(run),
            "failed_items": selectors.failed_items(run),
            "reasons": selectors.failure_reasons(run),
            "flags": selectors.flag_counts(candidates, project_id=run.project_id),
            "live": run.status in (InjectionRun.Status.PENDING, InjectionRun.Status.RUNNING),
            "stalled": selectors.stalled_since(run),
            "run_settings": selectors.run_settings(run),
        },
    )


@login_required
def run_progress(request, pk: int):
    access.require_admin(request.user, message=ADMINS_ONLY)
    return JsonResponse(selectors.run_progress(get_object_or_404(InjectionRun, pk=pk)))


@login_required
@require_POST
def run_cancel(request, pk: int):
    access.require_admin(request.user, message=ADMINS_ONLY)
    run = get_object_or_404(InjectionRun, pk=pk)
    if services.run_cancel(run=run):
        messages.success(request, f"Run {run.name} cancelled; answers already in flight are still saved.")
    else:
        messages.info(request, f"Run {run.name} had already finished.")
    return redirect("injection:run", pk=pk)


@login_required
@require_POST
def run_retry(request, pk: int):
    """Retry the failed items (or the one given as `item`), or resume a cancelled/interrupted run."""
    access.require_admin(request.user, message=ADMINS_ONLY)
    run = get_object_or_404(InjectionRun, pk=pk)
    item = request.POST.get("item")
    if item and not run.items.filter(pk=id_param(item) or 0).exists():  # else every failed item would be retried
        messages.error(request, f"item: no item {item!r} in run {run.name}")
        return redirect("injection:run", pk=pk)
    try:
        with transaction.atomic():
            services.runs_lock(project=run.project, besides=run)  # not beside another live run of the project
            if request.POST.get("resume"):
                services.run_resume(run=run)
                count = run.total - run.done - run.failed
            else:
                count = services.run_reset_failed(run=run, item_ids=[id_param(item)] if id_param(item) else None)
            tasks.enqueue(run=run)
    except services.RunInProgress as exc:
        messages.error(request, f"Run {exc.run.name} is already {exc.run.status}; {run.name} was not started again.")
        return redirect("injection:run", pk=exc.run.pk)
    _tell_run_outcome(request, run, f"{count} item(s) of run {run.name} queued again.")
    return redirect("injection:run", pk=pk)


@login_required
def candidates(request):
    qs = selectors.visible_candidates(request.user)
    run_id = request.GET.get("run")
    run = id_param(run_id)
    if run_id and run is None:
        qs = qs.none()  # names no run: no rows (not every candidate)
    slug = request.GET.get("project", "")[:100]
    project = access.visible_projects(request.user).filter(name=slug).first() if slug else None
    if slug and project is None:
        qs = qs.none()  # names no project this user sees: no rows
    qs = selectors.filter_candidates(
        qs,
        flag=request.GET.get("flag", ""),
        direction_code=request.GET.get("direction", ""),
        error_type=request.GET.get("type", ""),
        run=run,
        project=project.pk if project else None,
        clean=request.GET.get("clean") == "1",
    )
    qs = qs.order_by("id").defer("raw_output")  # never shown (up to 20,000 characters a row)
    page = EstimatedCountPaginator(qs, 50).get_page(request.GET.get("page"))  # no COUNT of millions
    # A page holds 50 rows and at most CANDIDATE_PAGE_MAX_CHARS of their texts (#48.2): past it, the rest of
    # the page is a "continue" link; the texts are measured in the database before any is read.
    shown, continues = within_budget(
        selectors.candidate_sizes(qs, page.start_index() - 1, page.end_index()) if page.paginator.count else [],
        id_param(request.GET.get("from", "")),
        settings.CANDIDATE_PAGE_MAX_CHARS,
    )
    rows = [(candidate, selectors.marked_parts(candidate)) for candidate in qs.filter(pk__in=shown)]
    # one run's candidates are all of its project: another project's writes keep their counts
    run_project = InjectionRun.objects.filter(pk=run).values_list("project_id", flat=True).first() if run else None
    run_project = run_project or (project.pk if project else None)
    return render(
        request,
        "injection/candidates.html",
        {
            "page": page,
            "rows": rows,
            "continues": continues,
            "flags": selectors.flag_counts(qs, project_id=run_project),
            "filters": {k: request.GET.get(k, "") for k in ("project", "run", "flag", "direction", "type")},
            "projects": access.visible_projects(request.user).order_by("name"),
            "project": project,
        },
    )
