"""Scores of releases by metric, direction and level; starting scoring (admins). Thin over scoring_jobs."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core.access import allowed_languages, is_admin
from core.http import redirect_next
from exports import plots, scoring_jobs
from exports.models import Release
from scoring.registry import all_metrics


def _visible_directions(user, release: Release) -> list[str] | None:
    """None: all (admins); otherwise the directions into the user's languages."""
    if is_admin(user):
        return None
    langs = set(allowed_languages(user).values_list("code", flat=True))
    return [d.code for d in release.project.directions.all() if d.target.code in langs]


@login_required
def index(request):
    releases = Release.objects.select_related("project").filter(status=Release.Status.READY)
    if not is_admin(request.user):
        langs = allowed_languages(request.user)
        releases = releases.filter(project__directions__target__in=langs).distinct()
    return render(request, "scores/index.html", {"releases": releases})


def _context(request, release: Release) -> dict:
    visible = _visible_directions(request.user, release)
    if visible is not None and not visible:
        raise PermissionDenied("no direction of this release is in your languages")
    admin = is_admin(request.user)
    jobs = scoring_jobs.poll_scoring(release) if admin else []
    return {
        "release": release,
        "tables": scoring_jobs.score_table(release, visible),
        "jobs": jobs,
        "running": any(s.job.status in ("pending", "running") for s in jobs),  # the page refreshes itself
        "is_admin": admin,
        "metrics": all_metrics() if admin else [],
        "judge": scoring_jobs.judge_reports(release, visible),
    }


@login_required
def release_scores(request, release_id: int):
    release = get_object_or_404(Release.objects.select_related("project"), pk=release_id)
    return render(request, "scores/release.html", _context(request, release))


@login_required
def progress(request, release_id: int):
    release = get_object_or_404(Release, pk=release_id)
    if not is_admin(request.user):
        raise PermissionDenied
    states = scoring_jobs.poll_scoring(release)
    return JsonResponse(
        {"jobs": [{"metric": s.job.metric, "direction": s.job.direction.code, "status": s.job.status, "percent": s.percent, "error": s.job.error,
                   "judge_requests": s.sent, "cost_usd": s.cost_usd} for s in states]}
    )


@login_required
@require_POST
def start(request, release_id: int):
    release = get_object_or_404(Release, pk=release_id)
    if not is_admin(request.user):
        raise PermissionDenied
    metrics = request.POST.getlist("metric")
    judge = {k: request.POST.get(f"judge_{k}", "").strip() for k in ("url", "model", "max_usd")}
    options = {}
    if any(judge.values()):  # LLM judges: endpoint, model, budget (the workers on queue 'judge' use them)
        try:
            max_usd = float(judge["max_usd"]) if judge["max_usd"] else None
        except ValueError:
            messages.error(request, f"budget {judge['max_usd']!r} is not a number of US dollars")
            return redirect("scores:release", release_id=release.pk)
        options["judge"] = {k: v for k, v in (("base_url", judge["url"]), ("model", judge["model"]), ("max_usd", max_usd)) if v}
    try:
        jobs = scoring_jobs.start_scoring(release, metrics, options=options or None, force=bool(request.POST.get("force")))
    except scoring_jobs.ScoringError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{len(jobs)} scoring job(s) for {release}")
    return redirect_next(request, "scores:release", release_id=release.pk)


@login_required
def trend_plot(request, release_id: int):
    """One metric's mean score by level and direction (``?metric=NAME``), limited to visible directions."""
    release = get_object_or_404(Release.objects.select_related("project"), pk=release_id)
    visible = _visible_directions(request.user, release)
    if visible is not None and not visible:
        raise PermissionDenied("no direction of this release is in your languages")
    metric = request.GET.get("metric", "")
    table = next((t for t in scoring_jobs.score_table(release, visible) if t["metric"] == metric), None)
    if table is None:
        if not scoring_jobs.known_metric(release, metric):
            raise Http404(f"no scores of metric {metric!r} in this release")
        table = {"metric": metric, "better": "", "levels": [], "rows": []}  # a metric with no scores (yet): the empty state
    return HttpResponse(plots.score_trend(table["metric"], table["better"], table["levels"], table["rows"]), content_type="image/svg+xml")


@login_required
def metaeval_page(request, release_id: int):
    """Meta-evaluation of one metric (``?metric=NAME&variant=b``) against the predetermined human scores."""
    from exports.metaeval import STATISTIC_LABELS, TAU_STATISTICS
    from exports.metaeval_selectors import MetaEvaluationError, release_meta_evaluation

    release = get_object_or_404(Release.objects.select_related("project"), pk=release_id)
    visible = _visible_directions(request.user, release)
    if visible is not None and not visible:
        raise PermissionDenied("no direction of this release is in your languages")
    metric, variant = request.GET.get("metric", ""), request.GET.get("variant", "b")
    if variant not in TAU_STATISTICS:
        variant = "b"
    try:
        result = release_meta_evaluation(release, metric, directions=visible, variant=variant)
    except MetaEvaluationError as exc:
        raise Http404(str(exc)) from None
    rows = [{**row, "system": result["system_level"].get(row["direction"])} for row in result["triplet_level"]]
    return render(
        request,
        "scores/metaeval.html",
        {"release": release, "result": result, "rows": rows, "variants": [(v, STATISTIC_LABELS[v]) for v in TAU_STATISTICS], "variant": variant, "label": STATISTIC_LABELS[variant], "metric": metric},
    )
