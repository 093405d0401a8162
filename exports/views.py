"""Benchmark pages: counts table, builds, releases and Hub pushes with progress. Thin over services and
selectors; actions are for admins, counts for anyone who may see the project (their directions only)."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core import access
from core.http import redirect_next
from core.models import Project
from exports import plots, selectors, services
from exports.release_files import EXTRA_FORMATS


def _visible_project(request, name: str) -> tuple[Project, set[str] | None]:
    """The project and the directions this user may see (None: all)."""
    project = get_object_or_404(Project, name=name)
    directions = selectors.visible_directions(request.user, project)
    if directions is not None and not directions:
        raise Http404("no such project among those you may see")
    return project, directions


def _require_admin(request) -> None:
    if not access.is_admin(request.user):
        raise PermissionDenied("only admins build and release benchmarks")


@login_required
def index(request):
    return render(request, "benchmarks/index.html", {"projects": selectors.visible_projects(request.user)})


@login_required
def project_page(request, project: str):
    project_obj, directions = _visible_project(request, project)
    context = selectors.benchmark_page(project_obj, directions)
    context.update({"project": project_obj, "is_admin": access.is_admin(request.user), "formats": EXTRA_FORMATS})
    return render(request, "benchmarks/project.html", context)


@login_required
def status(request, project: str):
    """Progress of the latest build and of every release, polled by the project page."""
    project_obj, _ = _visible_project(request, project)
    return JsonResponse(selectors.progress_status(project_obj))


@login_required
@require_POST
def build(request, project: str):
    _require_admin(request)
    project_obj = get_object_or_404(Project, name=project)
    build_obj = services.start_build(project_obj, request.user, force=request.POST.get("force") == "1")
    messages.info(request, f"Build {build_obj.pk} started.")
    return redirect_next(request, "benchmarks:project", project=project_obj.name)


@login_required
@require_POST
def release(request, project: str):
    _require_admin(request)
    project_obj = get_object_or_404(Project, name=project)
    version = request.POST.get("version", "").strip()
    formats = [f for f in request.POST.getlist("formats") if f in EXTRA_FORMATS]
    push_repo = request.POST.get("push_repo", "").strip()
    try:
        services.start_release(project_obj, version, formats=formats, push_repo=push_repo, private=request.POST.get("public") != "1", user=request.user)
    except services.ReleaseError as exc:
        messages.error(request, str(exc))
    except Exception as exc:  # eager mode runs the task here: show the recorded failure, not a 500
        messages.error(request, f"release {version} failed: {type(exc).__name__}: {exc}")
    else:
        messages.info(request, f"Release {version} started.")
    return redirect_next(request, "benchmarks:project", project=project_obj.name)


@login_required
@require_POST
def push(request, project: str, version: str):
    _require_admin(request)
    project_obj = get_object_or_404(Project, name=project)
    release_obj = get_object_or_404(selectors.releases_of(project_obj), version=version)
    repo_id = request.POST.get("repo_id", "").strip()
    try:
        services.start_push(release_obj, repo_id, private=request.POST.get("public") != "1")
    except services.ReleaseError as exc:
        messages.error(request, str(exc))
    except Exception as exc:
        messages.error(request, f"push failed: {type(exc).__name__}: {exc} (push again to resume)")
    else:
        messages.info(request, f"Push of {version} to {repo_id} started.")
    return redirect_next(request, "benchmarks:project", project=project_obj.name)


@login_required
def counts_plot(request, project: str):
    project_obj, directions = _visible_project(request, project)
    counts = selectors.benchmark_page(project_obj, directions)["counts"]
    return HttpResponse(plots.level_counts(counts), content_type="image/svg+xml")
