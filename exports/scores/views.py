"""Scores of releases by metric, direction and level; starting scoring (admins). Thin over the stage's
selectors and tasks. Pages only read: finished jobs are ingested by the ``collect_scores`` task."""

from __future__ import annotations

from argparse import ArgumentTypeError

from celery import current_app
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core import access
from core.access import allowed_languages, is_admin, require_admin
from core.domain.params import positive_number
from core.http import redirect_next
from core.svg_cache import cached_svg
from exports.models import Release
from exports.release import selectors as release_selectors
from exports.scores import plots, selectors, services, tasks
from exports.scores.domain import ScoringError
from scoring.api import all_metrics


def visible_directions(user, release: Release) -> list[str] | None:
    """None: all (admins); otherwise the directions into the user's languages."""
    if is_admin(user):
        return None
    langs = set(allowed_languages(user, release.project).values_list("code", flat=True))
    return [d.code for d in release.project.directions.all() if d.target.code in langs]


def visible_release(user, release_id) -> tuple[Release, list[str] | None]:
    """The release and the directions of it this user may see (None: all); a release with none of theirs
    answers as a missing one does (``access.not_found``)."""
    release = Release.objects.select_related("project").filter(pk=release_id).first()
    if release is None:
        raise access.not_found()
    visible = visible_directions(user, release)
    if visible is not None and not visible:
        raise access.not_found()
    return release, visible


@login_required
def index(request):
    releases = Release.objects.select_related("project").filter(status=Release.Status.READY)
    if not is_admin(request.user):  # each project by its own rule (access.allowed_languages)
        releases = releases.filter(project__in=access.visible_projects(request.user))
    return render(request, "scores/index.html", {"releases": releases})


def _context(request, release: Release, visible: list[str] | None) -> dict:
    admin = is_admin(request.user)
    worker = tasks.worker_configured() if admin else True
    metrics = all_metrics() if admin else []
    if not worker:  # what this process can score itself
        metrics = [m for m in metrics if m.family in services.IN_PROCESS_FAMILIES]
    jobs = selectors.job_states(release=release, app=current_app) if admin else []
    if admin and tasks.request_collect(release=release, states=jobs) and current_app.conf.task_always_eager:
        jobs = selectors.job_states(release=release, app=current_app)  # collected in-process just now
    return {
        "release": release,
        "tables": selectors.score_table(release, visible),
        "jobs": jobs,
        "running": any(s.status in ("pending", "running") for s in jobs),  # the page refreshes itself
        "is_admin": admin,
        "metrics": metrics,
        "judge": selectors.judge_reports(release, visible),
        "people": release_selectors.people_agreement(release, visible),
        # said before anything is ticked: without a worker, queueing would only fail
        "worker": worker,
        "no_worker": tasks.NO_WORKER,
        "ticked": set(),
    }


@login_required
def release_scores(request, release_id: int):
    release, visible = visible_release(request.user, release_id)
    return render(request, "scores/release.html", _context(request, release, visible))


@login_required
def progress(request, release_id: int):
    require_admin(request.user)  # before the lookup: a 404 would tell a non-admin which ids exist
    release = get_object_or_404(Release, pk=release_id)
    states = selectors.job_states(release=release, app=current_app)
    if tasks.request_collect(release=release, states=states) and current_app.conf.task_always_eager:
        states = selectors.job_states(release=release, app=current_app)
    return JsonResponse(
        {
            "jobs": [
                {
                    "metric": s.job.metric,
                    "direction": s.job.direction.code,
                    "status": s.status,
                    "percent": s.percent,
                    "error": s.job.error,
                    "judge_requests": s.sent,
                    "cost_usd": s.cost_usd,
                }
                for s in states
            ]
        }
    )


@login_required
@require_POST
def start(request, release_id: int):
    require_admin(request.user)  # before the lookup: a 404 would tell a non-admin which ids exist
    release = get_object_or_404(Release, pk=release_id)
    metrics = request.POST.getlist("metric")
    judge = {k: request.POST.get(f"judge_{k}", "").strip() for k in ("url", "model", "max_usd")}
    options = {}
    if any(judge.values()):  # LLM judges: endpoint, model, budget (the workers on queue 'judge' use them)
        try:
            max_usd = positive_number(judge["max_usd"]) if judge["max_usd"] else None
        except ArgumentTypeError as exc:  # NaN, inf, negative: a budget no worker could keep to
            messages.error(request, f"budget {judge['max_usd']!r}: {exc} (US dollars)")
            return redirect("scores:release", release_id=release.pk)
        configured = any(
            e.base_url and e.base_url.rstrip("/") == judge["url"].rstrip("/") for e in settings.LLM_ENDPOINTS
        )
        if (
            judge["url"] and not configured and not settings.LLM_ALLOW_CUSTOM_URL
        ):  # no server as a form's target (#36.1)
            messages.error(
                request,
                f"judge endpoint {judge['url']!r}: not a configured endpoint (LLM_ENDPOINTS), and "
                "typed URLs are off (LLM_ALLOW_CUSTOM_URL)",
            )
            return redirect("scores:release", release_id=release.pk)
        options["judge"] = {
            k: v for k, v in (("base_url", judge["url"]), ("model", judge["model"]), ("max_usd", max_usd)) if v
        }
    # Per-metric switches the registry offers (e.g. COMET-22's encode_once), named option:<metric>:<option>.
    switched = {
        spec.name: {name: True for name in spec.options if request.POST.get(f"option:{spec.name}:{name}")}
        for spec in all_metrics()
        if spec.name in metrics
    }
    try:
        jobs = tasks.start_scoring(
            release=release,
            metrics=metrics,
            options=options or None,
            force=bool(request.POST.get("force")),
            metric_options={m: o for m, o in switched.items() if o},
        )
    except ScoringError as exc:
        messages.error(request, str(exc))
        # the form again with the ticks kept, so nothing chosen is lost
        # None: every direction, an admin's view (the merge of #37 left this call without it: a 500)
        context = _context(request, release, None)
        return render(request, "scores/release.html", {**context, "ticked": set(metrics)})
    else:
        if tasks.worker_configured():
            messages.success(request, f"{len(jobs)} scoring job(s) for {release}")
        else:
            jobs = [j for j in selectors.job_states(release=release, app=current_app) if j.job in jobs]
            failed = sum(1 for s in jobs if s.job.status == "failed")
            messages.success(request, f"{len(jobs)} scoring job(s) for {release} scored here, {failed} failed")
    return redirect_next(request, "scores:release", release_id=release.pk)


@login_required
def trend_plot(request, release_id: int):
    """One metric's mean score by level and direction (``?metric=NAME``), limited to visible directions."""
    release, visible = visible_release(request.user, release_id)
    metric = request.GET.get("metric", "")[:80]
    table = next((t for t in selectors.score_table(release, visible) if t["metric"] == metric), None)
    if table is None:
        if not selectors.known_metric(release, metric):
            metric = ""  # no metric named, or one unknown: the empty plot (one cache entry for all of them)
        table = {
            "metric": metric,
            "better": "",
            "levels": [],
            "rows": [],
        }  # a metric with no scores (yet): the empty state
    svg = cached_svg("score-trend", plots.score_trend, table["metric"], table["better"], table["levels"], table["rows"])
    return HttpResponse(svg, content_type="image/svg+xml")
