"""The project pages: the list lives on home (xqmeval.views); here the project page with its pipeline, the
live fragment of one stage, creating a project and importing a corpus or an XQ-MEval release, and the
benchmark page (build, counts, excluded and transplanted candidates, releases: several stages on one page).

Thin over ``core.services`` (writes) and ``xqmeval.projects.selectors`` (reads). Creating and importing are
admin actions (``core.access``); the page itself is for anyone who may see the project, with their
directions only and no action buttons unless they are an admin.
"""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.models import RatingItem, SpanItem, SpanTask
from annotation.rating import services as rating_services
from annotation.review.xqmeval_import import services as xqmeval_services
from annotation.spans import services as span_services
from core import access
from core import selectors as core_selectors
from core.corpus import selectors as corpus_selectors
from core.corpus import tasks as corpus_tasks
from core.corpus.domain import Columns, CorpusError, read_records
from core.corpus.selectors import corpus_limits
from core.corpus.services import CorpusImportRejected, CorpusImportRunning, corpus_source_import
from core.forms import (
    AssignmentForm,
    CorpusUploadForm,
    DirectionAddForm,
    ProjectCreateForm,
    ProjectSettingsForm,
    XQMEvalUploadForm,
)
from core.models import CorpusImport, JobStatus, Profile, Project
from core.services import (
    ImportRejected,
    ProjectRejected,
    assignments_set,
    direction_add,
    project_create,
    project_settings_update,
)
from exports import rating_items, span_items
from exports.benchmark import selectors as benchmark_selectors
from exports.benchmark.views import visible_project_and_directions
from exports.models import Release
from exports.release.domain.release_files import (
    EXCLUDED_COLUMNS,
    EXTRA_FORMATS,
    TRANSPLANTED_COLUMNS,
    write_candidate_table,
)
from xqmeval.projects import selectors, services
from xqmeval.projects.forms import UPLOAD, RatingItemsForm, SpanItemsForm

POLL_SECONDS = 2  # how often a running stage fetches its own update


def _require_admin(request, what: str) -> None:
    if not access.is_admin(request.user):
        raise PermissionDenied(f"only admins {what}")


def _admin_project(request, slug: str, what: str) -> Project:
    """The project of an admins' page; ``what`` the admins do there, for anyone else's refusal."""
    _require_admin(request, what)
    return get_object_or_404(Project, name=slug)


def _visible_project(request, slug: str) -> Project:
    return access.visible_project(request.user, slug)


def _stage_context(request, project: Project, stage: selectors.Stage) -> dict:
    return {"project": project, "stage": stage, "is_admin": access.is_admin(request.user), "poll_seconds": POLL_SECONDS}


@login_required
def project_new(request):
    _require_admin(request, "create projects")
    form = ProjectCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:  # the form's fields are the service's settings, by the same names
            project = project_create(**form.cleaned_data, owner=request.user)
        except ProjectRejected as exc:
            _report(form, exc.errors)
        else:
            messages.success(request, f"Project {project.name} created. Next: import a corpus for each direction.")
            return redirect("projects:detail", slug=project.name)
    return render(request, "projects/new.html", {"form": form})


@login_required
def project_page(request, slug: str):
    project = _visible_project(request, slug)
    stages = selectors.pipeline(project, request.user)
    admin = access.is_admin(request.user)
    return render(
        request,
        "projects/project.html",
        {
            "project": project,
            "stages": stages,
            "next_stage": selectors.next_step(stages)
            if admin
            else None,  # what an admin does next: not an annotator's hint
            "is_admin": admin,
            "gaps": core_selectors.coverage_gaps(project) if admin else [],
            "poll_seconds": POLL_SECONDS,
        },
    )


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
    return render(
        request,
        "projects/_metaeval_headline.html",
        {
            "project": project,
            "stage": stage,
            "headlines": headlines,
            "computing": computing,
            "poll_seconds": POLL_SECONDS,
        },
    )


def _corpus_context(project: Project, form, xq_form) -> dict:
    return {
        "project": project,
        "form": form,
        "xq_form": xq_form,
        **_hub_imports_context(project),
    }


def _hub_imports_context(project: Project) -> dict:
    imports = corpus_selectors.hub_imports(project)
    return {"imports": imports, "polling": corpus_selectors.any_live(imports), "poll_seconds": POLL_SECONDS}


def _hub_import_outcome(job) -> tuple[int, str]:
    """(message level, text) for a Hub import just queued: without a broker it has already run."""
    job.refresh_from_db()
    if corpus_tasks.queued() or job.status in CorpusImport.LIVE:
        return messages.INFO, f"Import {job.pk} of {job.dataset} into {job.direction.code} started."
    if job.status == JobStatus.DONE:
        return messages.SUCCESS, (
            f"{job.dataset}: {job.created} gold segments imported into {job.direction.code}, {job.unchanged} unchanged."
        )
    return messages.ERROR, f"{job.dataset}: nothing imported (import {job.pk} failed; the reason is below)."


def _hub_import_queued(request, project: Project, queue) -> HttpResponse:
    """Queue a Hub import (``queue()`` returns its job), say what became of it and show the corpus page's Hub
    imports."""
    try:
        job = queue()
    except CorpusImportRunning as exc:  # one import per direction at a time: show the one that runs
        messages.info(request, str(exc))
    except CorpusImportRejected as exc:
        for line in exc.errors:
            messages.error(request, line)
    else:
        messages.add_message(request, *_hub_import_outcome(job))
    return redirect(reverse("projects:corpus", args=[project.name]) + "#hub-imports")


@login_required
def corpus_import(request, slug: str):
    project = _admin_project(request, slug, "import corpora")
    form = CorpusUploadForm(request.POST or None, request.FILES or None, project=project, allow_hf=True)
    xq_form = XQMEvalUploadForm()
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        upload = data.get("file")
        columns = Columns(data["id_column"], data["source_column"], data["reference_column"])
        if not upload:  # a Hub dataset: a job run by a task, never inside this request (#36.4)
            start = partial(
                corpus_tasks.start_hub_import,
                project,
                user=request.user,
                direction_code=data["direction"],
                dataset=data["hf_dataset"],
                config=data.get("hf_config") or "",
                split=data.get("hf_split") or "test",
                columns=columns,
                check_language=not data["other_language"],
            )
            return _hub_import_queued(request, project, start)
        try:
            name, result = corpus_source_import(
                project=project,
                direction_code=data["direction"],
                columns=columns,
                upload_name=upload.name,
                data=upload.read(),
                known_direction=True,
                check_language=not data["other_language"],
            )
        except (CorpusError, ImportRejected) as exc:
            for line in exc.errors:
                messages.error(request, line)
            messages.error(request, f"{upload.name}: nothing imported.")
        else:
            messages.success(
                request,
                f"{name}: {result.created} gold segments imported into {data['direction']}, {result.unchanged} unchanged.",
            )
            return redirect("projects:detail", slug=project.name)
    return render(request, "projects/corpus.html", _corpus_context(project, form, xq_form))


@login_required
def hub_imports_fragment(request, slug: str):
    """The corpus page's Hub imports, fetched again every few seconds while one is pending or running."""
    project = _admin_project(request, slug, "see corpus imports")
    return render(request, "projects/_hub_imports.html", {"project": project, **_hub_imports_context(project)})


@login_required
@require_POST
def hub_import_retry(request, slug: str, pk: int):
    """Queue a failed or interrupted Hub import again."""
    project = _admin_project(request, slug, "retry corpus imports")
    job = get_object_or_404(CorpusImport.objects.select_related("direction"), project=project, pk=pk)
    return _hub_import_queued(request, project, partial(corpus_tasks.retry_hub_import, job))


@login_required
def xqmeval_import(request, slug: str):
    project = _admin_project(request, slug, "import XQ-MEval releases")
    if request.method != "POST":
        return redirect("projects:corpus", slug=project.name)
    xq_form = XQMEvalUploadForm(request.POST, request.FILES)
    if xq_form.is_valid():
        files = [(f.name, f.read()) for f in xq_form.cleaned_data["candidate_files"]]
        decisions = xq_form.cleaned_data.get("decisions")
        try:
            result = xqmeval_services.xqmeval_import(
                project_name=project.name,
                files=files,
                decisions=(decisions.name, decisions.read()) if decisions else None,
                strict=xq_form.cleaned_data["strict"],
                owner=request.user,
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
    form = CorpusUploadForm(project=project, allow_hf=True)
    return render(request, "projects/corpus.html", _corpus_context(project, form, xq_form))


def _report(form, problems: list[str]) -> None:
    """Each 'field: message' problem under its field of ``form`` (the others above the form)."""
    for problem in problems:
        field_name, _, message = problem.partition(": ")
        form.add_error(
            field_name if field_name in form.fields else None, message if field_name in form.fields else problem
        )


SETTINGS_FIELDS = ("title", "description", "reviewers_per_candidate", "max_errors", "error_types")


def _annotators() -> list[str]:
    return list(
        Profile.objects.filter(role=Profile.Role.ANNOTATOR)
        .order_by("user__username")
        .values_list("user__username", flat=True)
    )


def _settings_context(project: Project, *, form=None, add_form=None, assignment_form=None) -> dict:
    annotators = _annotators()
    rows = []
    for cover in core_selectors.coverage(project):
        bound = (
            assignment_form
            if assignment_form is not None and assignment_form.prefix == f"assign-{cover.direction_code}"
            else None
        )
        rows.append(
            {
                "coverage": cover,
                "form": bound
                or AssignmentForm(
                    direction_code=cover.direction_code,
                    annotators=annotators,
                    initial={"reviewers": list(cover.reviewers)},
                ),
            }
        )
    return {
        "project": project,
        "is_admin": True,
        "form": form or ProjectSettingsForm(initial={f: getattr(project, f) for f in SETTINGS_FIELDS}),
        "add_form": add_form or DirectionAddForm(project=project),
        "directions": services.direction_data_list(project=project),
        "assignments": rows,
        "gaps": [row["coverage"] for row in rows if row["coverage"].missing],
        "assignment_form": assignment_form,  # the one sent back with its errors, if any
    }


@login_required
def assignments(request, slug: str):
    """Set the reviewers of one direction (the settings page has one such form per active direction)."""
    project = _admin_project(request, slug, "assign reviewers")
    if request.method != "POST":
        return redirect("projects:settings", slug=project.name)
    direction_code = request.POST.get("direction", "")[:40]
    if not core_selectors.active_directions(project).filter(code=direction_code).exists():
        messages.error(
            request,
            f"direction: {direction_code or 'none'} is not an active direction of {project.name}; nothing changed.",
        )
        return redirect("projects:settings", slug=project.name)
    form = AssignmentForm(request.POST, direction_code=direction_code, annotators=_annotators())
    if form.is_valid():
        try:
            names = assignments_set(
                project=project, direction_code=direction_code, usernames=form.cleaned_data["reviewers"]
            )
        except ProjectRejected as exc:
            _report(form, exc.errors)
        else:
            messages.success(request, f"Reviewers of {direction_code}: {', '.join(names) or 'none'}.")
            outside = core_selectors.outside_languages(direction_code=direction_code, usernames=names)
            if outside:
                target = direction_code.rsplit("-", 1)[-1]
                messages.warning(
                    request,
                    f"{target} is not among the languages of {', '.join(outside)}. Assigned to {direction_code} anyway: "
                    f"check that they read {target}, or add it to their languages.",
                )
            return redirect(reverse("projects:settings", args=[project.name]) + "#reviewers")
    return render(request, "projects/settings.html", _settings_context(project, assignment_form=form))


@login_required
def project_settings(request, slug: str):
    """Title, reviewers per candidate, maximum errors, error types; the directions, each with what it holds."""
    project = _admin_project(request, slug, "change a project's settings")
    form = ProjectSettingsForm(request.POST or None, initial={f: getattr(project, f) for f in SETTINGS_FIELDS})
    if request.method == "POST" and form.is_valid():
        try:
            project_settings_update(project=project, **form.cleaned_data)
        except ProjectRejected as exc:
            _report(form, exc.errors)
        else:
            messages.success(request, "Settings saved.")
            return redirect("projects:settings", slug=project.name)
    return render(request, "projects/settings.html", _settings_context(project, form=form))


@login_required
def direction_add_view(request, slug: str):
    """Adding a direction takes two steps: choose the target language, then confirm on a page that says what
    it means (a direction is the unit of imports, review and releases)."""
    project = _admin_project(request, slug, "add directions")
    if request.method != "POST":
        return redirect("projects:settings", slug=project.name)
    form = DirectionAddForm(request.POST, project=project)
    if form.is_valid():
        target = form.cleaned_data["target"]
        code = f"{project.source_language.code}-{target}"
        if form.cleaned_data["confirmed"]:
            try:
                direction_add(project=project, target=target)
            except ProjectRejected as exc:
                _report(form, exc.errors)
            else:
                messages.success(request, f"Direction {code} added. Next: import its gold pairs.")
                return redirect("projects:settings", slug=project.name)
        else:
            return render(
                request,
                "projects/direction_confirm.html",
                {
                    "project": project,
                    "code": code,
                    "action": "add",
                    "target": target,
                    "post_url": reverse("projects:direction_add", args=[project.name]),
                },
            )
    return render(request, "projects/settings.html", _settings_context(project, add_form=form))


# what each direction action does, its confirmation's wording and the service that does it
DIRECTION_ACTIONS = {
    "remove": ("Remove", "It holds no data; it leaves the project and its imports.", services.direction_remove),
    "retire": (
        "Retire",
        "It is hidden from new imports, injection runs and builds; its data and the releases made from it stay.",
        services.direction_retire,
    ),
    "reinstate": ("Reinstate", "It is open to imports, injection runs and builds again.", services.direction_reinstate),
}


@login_required
def direction_action(request, slug: str, code: str, action: str):
    """GET: the confirmation of removing, retiring or reinstating a direction; POST (confirmed): do it."""
    project = _admin_project(request, slug, "change directions")
    if action not in DIRECTION_ACTIONS or not project.directions.filter(code=code).exists():
        raise Http404("no such direction action")
    verb, meaning, act = DIRECTION_ACTIONS[action]
    if request.method == "POST":
        try:
            act(project=project, code=code)
        except ProjectRejected as exc:
            for line in exc.errors:
                messages.error(request, line.partition(": ")[2] or line)
        else:
            messages.success(request, f"Direction {code}: {verb.lower()}d.")
        return redirect("projects:settings", slug=project.name)
    return render(
        request,
        "projects/direction_confirm.html",
        {
            "project": project,
            "code": code,
            "action": action,
            "verb": verb,
            "meaning": meaning,
            "post_url": reverse("projects:direction_action", args=[project.name, code, action]),
        },
    )


def project_url(project: Project) -> str:
    return reverse("projects:detail", kwargs={"slug": project.name})


# a source the options do not name, for either kind of item: ``problems`` are (option, text) pairs
SOURCE_REJECTED = (rating_items.RatingSourceRejected, span_items.SpanSourceRejected)


def _items_made(form, make, *args):
    """What ``make(*args)`` returns, or None when it made nothing: then each problem is on ``form``, a rejected
    source's under its option, a file's bad rows under the file."""
    try:
        return make(*args)
    except SOURCE_REJECTED as exc:
        for option, text in exc.problems:
            form.add_error(option if option in form.fields else None, text)
    except (CorpusError, ImportRejected) as exc:
        form.add_error(None, "Nothing imported.")
        for line in exc.errors:
            form.add_error("file", line)
    return None


def _sample_options(data: dict) -> dict:
    """Which of a source's rows an items form makes items of, as make_rating_items and make_span_items take it."""
    return {
        "direction_code": data["direction"] or None,
        "level": data["level"],
        "limit": data["limit"],
        "seed": data["seed"] or 0,
    }


def _rating_items_made(project: Project, data: dict) -> tuple[int, str]:
    """(items made, what the message says of the rest)."""
    if data["source"] == UPLOAD:
        upload = data["file"]
        rows = [
            {**row, "_location": where}
            # the corpus file's limits (rows, columns, nesting, parquet size), as for every upload
            for where, row in read_records(upload.read(), upload.name, limits=corpus_limits())
        ]
        result = rating_services.system_outputs_import(
            project=project,
            direction_code=data["direction"],
            rows=rows,
            source_name=upload.name,
            system=data["system"],
        )
        return result.created, f"{upload.name}: {result.unchanged} unchanged"
    created = rating_items.make_rating_items(project, data["source"], **_sample_options(data))
    return created, "items made before were kept"


@login_required
def rating_items_view(request, slug: str):
    """Make Likert items on the site, by the rules of the make_rating_items and import_rating_items commands."""
    if not access.is_admin(request.user):
        raise access.not_found()  # annotators and viewers: as if there were no such page
    project = get_object_or_404(Project, name=slug)
    form = RatingItemsForm(request.POST or None, request.FILES or None, project=project)
    if request.method == "POST" and form.is_valid():
        made = _items_made(form, _rating_items_made, project, form.cleaned_data)
        if made is not None:
            created, what = made
            messages.success(request, f"{created} rating items made ({what}).")
            return redirect("projects:rating_items", slug=project.name)
    counts = dict(RatingItem.objects.filter(project=project).values_list("kind").annotate(n=Count("pk")).order_by())
    return render(request, "projects/rating_items.html", {"project": project, "form": form, "counts": counts})


def _span_items_made(task: SpanTask, data: dict) -> int:
    if data["source"] == UPLOAD:
        upload = data["file"]
        if upload is None or not data["direction"]:
            raise span_items.SpanSourceRejected([("file", "a file and its direction are needed")])
        rows = [{**row, "_location": where} for where, row in read_records(upload.read(), upload.name)]
        return span_services.span_items_import(
            task=task,
            direction_code=data["direction"],
            rows=rows,
            source_name=upload.name,
            system=data["system"],
            kind=SpanItem.Kind.SYSTEM_OUTPUT if data["system"] else SpanItem.Kind.FILE,
        )
    return span_items.make_span_items(
        task,
        data["source"],
        **_sample_options(data),
        attention=data["attention"],
        release=data["release"] or None,
        metric=data["metric"] or None,
    )


@login_required
def span_items_view(request, slug: str, task: str):
    """Add items to a span task on the site, by the rules of the make_span_items command."""
    if not access.is_admin(request.user):
        raise access.not_found()  # annotators and viewers: as if there were no such page
    task = get_object_or_404(SpanTask.objects.select_related("project"), project__name=slug, name=task)
    project = task.project
    form = SpanItemsForm(request.POST or None, request.FILES or None, project=project)
    if request.method == "POST" and form.is_valid():
        created = _items_made(form, _span_items_made, task, form.cleaned_data)
        if created is not None:
            messages.success(request, f"{created} span items made (items made before were kept).")
            return redirect("projects:span_items", slug=project.name, task=task.name)
    counts = dict(SpanItem.objects.filter(task=task).values_list("kind").annotate(n=Count("pk")).order_by())
    attention = SpanItem.objects.filter(task=task, is_attention=True).count()
    return render(
        request,
        "projects/span_items.html",
        {"project": project, "task": task, "form": form, "counts": counts, "attention": attention},
    )


# ---- the benchmark page: every stage from the build to the releases, under /benchmarks/ -----------------------


# the page's lists of candidates, downloadable whole: rows and columns as in the release's files of these names
CANDIDATE_TABLES = {
    "excluded": (benchmark_selectors.excluded_candidates, EXCLUDED_COLUMNS),
    "transplanted": (benchmark_selectors.transplanted_candidates, TRANSPLANTED_COLUMNS),
}


@login_required
def benchmarks_index(request):
    return render(request, "benchmarks/index.html", {"projects": benchmark_selectors.visible_projects(request.user)})


@login_required
def benchmark_page(request, project: str):
    project_obj, directions = visible_project_and_directions(request, project)
    listed = benchmark_selectors.item_directions(request.user, project_obj)  # a viewer: the totals only
    context = benchmark_selectors.benchmark_page(project_obj, directions, listed)
    context.update({"project": project_obj, "is_admin": access.is_admin(request.user), "formats": EXTRA_FORMATS})
    return render(request, "benchmarks/project.html", context)


@login_required
def benchmark_candidates_csv(request, project: str, table: str):
    """Every excluded or transplanted candidate of the directions whose items this user may read, as CSV.
    A list of candidates, not an aggregate: a viewer gets 404, as for any item (#48.5)."""
    project_obj, _ = visible_project_and_directions(request, project)
    directions = benchmark_selectors.item_directions(request.user, project_obj)
    if directions is not None and not directions:
        raise access.not_found()
    rows, columns = CANDIDATE_TABLES[table]
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project_obj.name}-{table}_candidates.csv"'
    write_candidate_table(rows(project_obj, directions), response, columns)
    return response
