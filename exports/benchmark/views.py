"""Benchmark stage views: build progress, the counts plot and starting a build. Thin over tasks and
selectors; actions are for admins, counts for anyone who may see the project (their directions only). The
benchmark page itself, which also lists releases, is ``xqmeval.projects.views.benchmark_page``."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from core import access
from core.http import redirect_next
from core.models import Project
from core.svg_cache import cached_svg
from exports.benchmark import plots, selectors, services, tasks


def visible_project_and_directions(request, name: str) -> tuple[Project, set[str] | None]:
    """The project and the directions this user may see (None: all)."""
    project = access.visible_project(request.user, name)
    return project, selectors.visible_directions(request.user, project)


ADMINS_ONLY = "only admins build and release benchmarks"


@login_required
def status(request, project: str):
    """Progress of the latest build and of every release, polled by the project page."""
    project_obj, directions = visible_project_and_directions(request, project)
    return JsonResponse(selectors.progress_status(project_obj, directions))


@login_required
@require_POST
def build(request, project: str):
    access.require_admin(request.user, message=ADMINS_ONLY)
    project_obj = get_object_or_404(Project, name=project)
    warnings = selectors.build_warnings(project_obj)
    if warnings and request.POST.get("confirm") != "1":
        # a build with an undecided or empty direction is a decision: name each, build only when confirmed
        return render(
            request,
            "benchmarks/build_confirm.html",
            {
                "project": project_obj,
                "warnings": warnings,
                "force": request.POST.get("force") == "1",
                "next": request.POST.get("next", ""),
            },
        )
    try:
        build_obj = tasks.start_build(
            project=project_obj,
            user=request.user,
            force=request.POST.get("force") == "1",
            acknowledged=warnings,
        )
    except services.BuildRunning as running:  # a second submit shows the running build
        messages.info(
            request,
            f"Build {running.build.number} is already {running.build.status} "
            f"({running.build.done_segments} / {running.build.total_segments} gold pairs); it was not started again.",
        )
    else:
        messages.add_message(request, *tasks.build_outcome(build_obj))
    return redirect_next(request, "benchmarks:project", project=project_obj.name)


@login_required
def counts_plot(request, project: str):
    project_obj, directions = visible_project_and_directions(request, project)
    counts = selectors.visible_counts(project_obj, directions)
    return HttpResponse(cached_svg("level-counts", plots.level_counts, counts), content_type="image/svg+xml")
