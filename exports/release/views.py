"""The release and push actions of the benchmark page (the page itself is ``xqmeval.projects.views``). Thin over
tasks and selectors; they are for admins."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_POST

from core import access
from core.domain.errors import AppError
from core.http import redirect_next
from core.models import Project
from exports.benchmark import selectors
from exports.benchmark import tasks as build_tasks
from exports.benchmark.views import ADMINS_ONLY
from exports.models import Release
from exports.release import services, tasks


def _tell_release_outcome(request, project: Project, version: str, push_repo: str) -> None:
    """Say what happened: without a broker the release was written (and pushed) in this request; with one
    it was handed to a worker and the page shows its progress."""
    release_obj = Release.objects.filter(project=project, version=version).first()
    if build_tasks.queued() or release_obj is None or release_obj.status == Release.Status.BUILDING:
        messages.info(request, f"Release {version} started.")
    elif release_obj.status == Release.Status.FAILED:
        messages.error(request, services.token_remove(text=f"release {version} failed: {release_obj.error}"))
    elif push_repo and release_obj.push_status != Release.PushStatus.DONE:
        messages.warning(
            request,
            services.token_remove(
                text=f"Release {version} written; push to {push_repo} {release_obj.get_push_status_display()}: {release_obj.error}"
            ),
        )
    else:
        messages.success(request, f"Release {version} written" + (f" and pushed to {push_repo}." if push_repo else "."))


@login_required
@require_POST
def release(request, project: str):
    access.require_admin(request.user, message=ADMINS_ONLY)
    project_obj = get_object_or_404(Project, name=project)
    version = request.POST.get("version", "").strip()
    formats = request.POST.getlist("formats")  # an unknown one is refused (start_release), not dropped
    push_repo = request.POST.get("push_repo", "").strip()
    try:
        tasks.start_release(
            project=project_obj,
            version=version,
            formats=formats,
            push_repo=push_repo,
            private=request.POST.get("public") != "1",
            user=request.user,
        )
    except AppError as exc:  # refused (bad request, a release of the project being written): say why
        messages.error(request, exc.message)
    except Exception as exc:  # eager mode runs the task here: show the recorded failure, not a 500
        messages.error(request, services.token_remove(text=f"release {version} failed: {type(exc).__name__}: {exc}"))
    else:
        _tell_release_outcome(request, project_obj, version, push_repo)
    return redirect_next(request, "benchmarks:project", project=project_obj.name)


@login_required
@require_POST
def push(request, project: str, version: str):
    access.require_admin(request.user, message=ADMINS_ONLY)
    project_obj = get_object_or_404(Project, name=project)
    release_obj = get_object_or_404(selectors.releases_of(project_obj), version=version)
    repo_id = request.POST.get("repo_id", "").strip()
    try:
        tasks.start_push(release=release_obj, repo_id=repo_id, private=request.POST.get("public") != "1")
    except AppError as exc:  # refused (bad request, a release of the project being written): say why
        messages.error(request, exc.message)
    except Exception as exc:
        messages.error(
            request, services.token_remove(text=f"push failed: {type(exc).__name__}: {exc} (push again to resume)")
        )
    else:
        messages.add_message(request, *tasks.push_outcome(release_obj, repo_id))
    return redirect_next(request, "benchmarks:project", project=project_obj.name)
