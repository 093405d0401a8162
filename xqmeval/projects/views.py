"""The project pages: the list lives on home (xqmeval.views); here the project page with its pipeline, the
live fragment of one stage, creating a project and importing a corpus or an XQ-MEval release.

Thin over ``core.services`` (writes) and ``xqmeval.projects.selectors`` (reads). Creating and importing are
admin actions (``core.access``); the page itself is for anyone who may see the project, with their
directions only and no action buttons unless they are an admin.
"""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from annotation.review.xqmeval_import import import_xqmeval
from core import access
from core.corpus.domain import Columns, CorpusError
from core.forms import CorpusUploadForm, ProjectCreateForm, XQMEvalUploadForm
from core.models import Project
from exports.models import Release
from core.services import ImportRejected, ProjectRejected, import_corpus_source, project_create
from xqmeval.projects import selectors

POLL_SECONDS = 2  # how often a running stage fetches its own update


def _require_admin(request, what: str) -> None:
    if not access.is_admin(request.user):
        raise PermissionDenied(f"only admins {what}")


def _visible_project(request, slug: str) -> Project:
    return access.visible_project(request.user, slug)


def _stage_context(request, project: Project, stage: selectors.Stage) -> dict:
    return {"project": project, "stage": stage, "is_admin": access.is_admin(request.user), "poll_seconds": POLL_SECONDS}


@login_required
def project_new(request):
    _require_admin(request, "create projects")
    form = ProjectCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            project = project_create(
                name=data["name"], title=data["title"], source_language=data["source_language"],
                directions=data["directions"], error_types=data["error_types"], perturbations=data["perturbations"],
                reviewers_per_candidate=data["reviewers_per_candidate"], max_errors=data["max_errors"],
                description=data["description"], owner=request.user,
            )
        except ProjectRejected as exc:
            for problem in exc.errors:
                field_name, _, message = problem.partition(": ")
                if field_name in form.fields:
                    form.add_error(field_name, message)
                else:
                    form.add_error(None, problem)
        else:
            messages.success(request, f"Project {project.name} created. Next: import a corpus for each direction.")
            return redirect("projects:detail", slug=project.name)
    return render(request, "projects/new.html", {"form": form})


@login_required
def project_page(request, slug: str):
    project = _visible_project(request, slug)
    stages = selectors.pipeline(project, request.user)
    admin = access.is_admin(request.user)
    return render(request, "projects/project.html", {
        "project": project,
        "stages": stages,
        "next_stage": selectors.next_step(stages) if admin else None,  # what an admin does next: not an annotator's hint
        "is_admin": admin,
        "poll_seconds": POLL_SECONDS,
    })


@login_required
def stage_fragment(request, slug: str, key: str):
    """One stage's card, for a running stage's live update (htmx swaps it in place)."""
    if key not in selectors.STAGE_KEYS:
        raise Http404(f"no stage {key!r}")
    project = _visible_project(request, slug)
    stage = selectors.stage_for(key, project, request.user)
    return render(request, "projects/_stage.html", _stage_context(request, project, stage))


@login_required
def metaeval_fragment(request, slug: str):
    """The meta-evaluation headline (τ, CV) of the newest scored release, loaded after the page."""
    project = _visible_project(request, slug)
    stage = selectors.metaeval_stage(project)
    headlines, computing = [], False
    if stage.state == "done" and access.is_admin(request.user):  # over every direction; others follow the link
        release = Release.objects.get(pk=stage.data["release_id"])
        headlines, computing = selectors.metaeval_headlines(
            release, [row["metric"] for row in stage.data["metrics"]], queued=selectors.tasks_queued()
        )
    return render(request, "projects/_metaeval_headline.html", {
        "project": project, "stage": stage, "headlines": headlines, "computing": computing, "poll_seconds": POLL_SECONDS,
    })


@login_required
def corpus_import(request, slug: str):
    _require_admin(request, "import corpora")
    project = get_object_or_404(Project, name=slug)
    form = CorpusUploadForm(request.POST or None, request.FILES or None, allow_hf=True,
                            initial={"direction": (project.directions.order_by("code").first() or "")})
    xq_form = XQMEvalUploadForm()
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        upload = data.get("file")
        columns = Columns(data["id_column"], data["source_column"], data["reference_column"])
        try:
            name, result = import_corpus_source(
                project, direction=data["direction"], columns=columns,
                upload_name=upload.name if upload else "", data=upload.read() if upload else None,
                hf_dataset=data.get("hf_dataset", ""), hf_config=data.get("hf_config") or None, hf_split=data.get("hf_split") or "test",
            )
        except (CorpusError, ImportRejected) as exc:
            for line in exc.errors:
                messages.error(request, line)
            messages.error(request, f"{upload.name if upload else data.get('hf_dataset')}: nothing imported.")
        else:
            messages.success(request, f"{name}: {result.created} gold segments imported into {data['direction']}, {result.unchanged} unchanged.")
            return redirect("projects:detail", slug=project.name)
    return render(request, "projects/corpus.html", {"project": project, "form": form, "xq_form": xq_form})


@login_required
def xqmeval_import(request, slug: str):
    _require_admin(request, "import XQ-MEval releases")
    project = get_object_or_404(Project, name=slug)
    if request.method != "POST":
        return redirect("projects:corpus", slug=project.name)
    xq_form = XQMEvalUploadForm(request.POST, request.FILES)
    if xq_form.is_valid():
        files = [(f.name, f.read()) for f in xq_form.cleaned_data["candidate_files"]]
        decisions = xq_form.cleaned_data.get("decisions")
        try:
            result = import_xqmeval(
                project.name, files=files, decisions=(decisions.name, decisions.read()) if decisions else None,
                strict=xq_form.cleaned_data["strict"], owner=request.user,
            )
        except ImportRejected as exc:
            for line in exc.errors:
                messages.error(request, line)
            messages.error(request, "Nothing imported.")
        else:
            messages.success(
                request,
                f"{result.segments_created} gold segments, {result.candidates_created} candidates "
                f"({result.candidates_unchanged} unchanged), {result.decisions_created} decisions imported.",
            )
            return redirect("projects:detail", slug=project.name)
    form = CorpusUploadForm(allow_hf=True)
    return render(request, "projects/corpus.html", {"project": project, "form": form, "xq_form": xq_form})


def project_url(project: Project) -> str:
    return reverse("projects:detail", kwargs={"slug": project.name})
