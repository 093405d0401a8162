"""Agreement dashboard, downloads and plots: thin views over ``annotation.agreement.selectors`` and
``annotation.review.gold``.

Admins see every table; annotators and viewers see accept/reject aggregates over their own languages of the
project (no table that names reviewers, no Likert figure: ratings stay blind), and an annotator her own
agreement with the others, anonymised. Anyone else gets 404 for the project, as for a missing one; an
admin-only page or table answers 403 before the project is looked up, whatever the project.

The pages (dashboard, annotator quality, plots) never compute the report: they show what the cache holds
(current, or the last one marked as of its time) and ask ``annotation.agreement.tasks.page_missed`` for a refresh on a miss.
Downloads are explicit requests for the numbers and compute on a miss, like ``manage.py agreement``."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.agreement import refresh, tasks
from annotation.agreement import selectors as sel
from annotation.agreement.domain import plots, tables
from annotation.review import gold
from core import access, selectors
from core.domain.params import MAX_ID
from core.domain.plotting import empty as empty_plot
from core.models import Project
from core.svg_cache import cached_svg

FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json"}
REFRESH_SECONDS = 10  # how often a page waiting for the current report reloads itself

# name → title: the plot's own (drawn and as its SVG <title>), the page's alt text, and the title of its
# empty state while the report is computed
PLOT_TITLES = {
    "by-language": "Agreement by language",
    "by-error-type": "Agreement by error type (all languages)",
    "rwg": plots.RWG_TITLE,
    "score-vs-agreement": plots.SCORE_TITLE,
    "annotators": plots.QUALITY_TITLE,
}

# name → (drawing function over the report, admin only)
PLOTS = {
    "by-language": (
        lambda r: plots.agreement_by_group(r["languages"], lambda x: x["language"], PLOT_TITLES["by-language"]),
        False,
    ),
    "by-error-type": (
        lambda r: plots.agreement_by_group(
            [x for x in r["error_types"] if x["language"] == sel.ALL],
            lambda x: x["error_type"],
            PLOT_TITLES["by-error-type"],
        ),
        False,
    ),
    # Likert plots are admins' too: ratings stay blind (report.PUBLIC_TABLES says why)
    "rwg": (lambda r: plots.rwg_distribution(r["likert_items"], sel.DIMENSIONS), True),
    "score-vs-agreement": (lambda r: plots.agreement_vs_score(r["likert_dimensions"]), True),
    "annotators": (lambda r: plots.annotator_quality(r["annotators"]), True),
}


def _project_and_scope(request, name: str) -> tuple[Project, sel.Scope]:
    project = access.visible_project(request.user, name)
    scope = sel.scope_for(request.user, project)
    if scope is None:
        raise access.not_found()
    return project, scope


@login_required
def index(request):
    return render(request, "agreement/index.html", {"projects": selectors.visible_projects(request.user)})


def _shown_report(project: Project, scope: sel.Scope) -> sel.CachedReport:
    """The report a page shows, from the cache only. On a miss, ask for a refresh (debounced); without a
    broker it has run in-process by the time it returns, so look again."""
    shown = sel.cached_report(project, scope)
    if not shown.fresh and tasks.page_missed(project.pk):
        shown = shown.again()
    return shown


def _refresh_context(project: Project, shown: sel.CachedReport, scope: sel.Scope) -> dict:
    state = refresh.status(project.pk)
    failing = refresh.failing(state)
    return {
        "shown": shown,
        "refresh_state": state,
        "refresh_failing": failing,
        "refresh_error": state.get("last_error", "") if failing and scope.private else "",  # the reason is for admins
        "auto_refresh": REFRESH_SECONDS if not shown.fresh else None,  # reload until the current report is there
    }


@login_required
def dashboard(request, project: str):
    project_obj, scope = _project_and_scope(request, project)
    shown = _shown_report(project_obj, scope)
    report = shown.report
    own = None
    if access.is_annotator(request.user):  # her own agreement with the others, who stay anonymous
        try:
            own = tables.display(sel.own_agreement(request.user, project_obj, scope.languages))
        except ValueError:  # bad bootstrap settings: the refresh records why, for admins; the page still answers
            own = None
    sections = []
    for name in scope.tables if report is not None else ():
        if name in ("annotators", "likert_raters", "likert_items"):
            continue  # long tables: on the annotators page, or as downloads
        headers, cells = tables.display(report[name])
        sections.append({"name": name, "title": sel.TABLE_TITLES[name], "headers": headers, "cells": cells})
    return render(
        request,
        "agreement/dashboard.html",
        {
            "project": project_obj,
            "scope": scope,
            "sections": sections,
            "is_admin": scope.private,
            "tables": [(name, sel.TABLE_TITLES[name]) for name in scope.tables],
            "plots": [
                {"name": name, "title": PLOT_TITLES[name]}
                for name, (_, private) in PLOTS.items()
                if scope.private or not private
            ],
            "likert_items": len(report["likert_items"]) if report is not None and scope.private else None,
            "own_headers": own[0] if own else None,
            "own_cells": own[1] if own else None,
            "bootstrap": sel.bootstrap_options(),
            "languages": sorted(scope.languages) if scope.languages is not None else None,
            "span_tasks": sel.SpanTask.objects.filter(project=project_obj).order_by("name"),
            **_refresh_context(project_obj, shown, scope),
        },
    )


def _form_number(request, name: str, kind: type, default: str = ""):
    """A number from the form, or a ValueError naming the field."""
    text = request.POST.get(name, "").strip() or default
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{name} {text!r} is not {'an integer' if kind is int else 'a number'}") from None


@login_required
@require_http_methods(["GET", "POST"])
def annotators(request, project: str):
    access.require_admin(
        request.user, message="annotator quality is for admins"
    )  # before the lookup: any project alike
    project_obj, scope = _project_and_scope(request, project)
    if request.method == "POST":
        try:
            rate = _form_number(request, "rate", float)
            seed = _form_number(request, "seed", int, default="0")
            if not -MAX_ID - 1 <= seed <= MAX_ID:
                raise ValueError("seed must fit in 64 bits")
            result = gold.plant_gold(project_obj, rate, seed=seed, created_by=request.user)
        except ValueError as exc:
            messages.error(request, f"Nothing planted: {exc}")
        else:
            planted = (
                ", ".join(f"{d} {a}: {n}" for (d, a), n in sorted(result.planted.items()))
                or "nothing (already at that rate)"
            )
            messages.success(request, f"Gold items planted: {planted}")
            for note in result.skipped:
                messages.warning(request, note)
        return redirect("agreement:annotators", project=project_obj.name)
    shown = _shown_report(project_obj, scope)
    report = shown.report or {}
    headers, cells = tables.display(report.get("annotators", []))
    rater_headers, rater_cells = tables.display(report.get("likert_raters", []))
    gold_headers, gold_cells = tables.display(gold.gold_overview(project_obj))  # a count query, not the report
    return render(
        request,
        "agreement/annotators.html",
        {
            "project": project_obj,
            "headers": headers,
            "cells": cells,
            "rules": sel.OUTLIER_RULES,
            "rater_headers": rater_headers,
            "rater_cells": rater_cells,
            "leniency_limit": sel.LENIENCY_LIMIT,
            "leniency_min_items": sel.LENIENCY_MIN_ITEMS,
            "gold_headers": gold_headers,
            "gold_cells": gold_cells,
            "max_rate": gold.MAX_RATE,
            "plot_title": PLOT_TITLES["annotators"],
            **_refresh_context(project_obj, shown, scope),
        },
    )


@login_required
def download(request, project: str, table: str, fmt: str):
    # Admin-only tables are refused before the lookup, so the answer is the same for every project.
    if table == "gold":
        access.require_admin(request.user, message="gold scores are for admins")
    elif table in sel.PRIVATE_TABLES:
        access.require_admin(
            request.user, message="this table names reviewers or holds blind ratings and is for admins"
        )
    project_obj, scope = _project_and_scope(request, project)
    if fmt not in FORMATS:
        raise Http404(f"format must be one of {', '.join(FORMATS)}")
    if table == "gold":
        rows = gold.gold_overview(project_obj)
    elif table not in sel.TABLES:
        raise Http404(f"no table {table!r}")
    else:
        rows = sel.report_for(project_obj, scope)[table]
    if fmt == "csv":
        body = tables.to_csv(rows)
    else:
        body = tables.to_json({"project": project_obj.name, "table": table, "rows": rows})
    response = HttpResponse(body, content_type=FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="{project_obj.name}-{table}.{fmt}"'
    return response


@login_required
def plot(request, project: str, plot: str):
    if PLOTS.get(plot, (None, False))[1]:  # before the lookup, as for the tables
        access.require_admin(request.user, message="this plot names reviewers or shows blind ratings and is for admins")
    project_obj, scope = _project_and_scope(request, project)
    if plot not in PLOTS:
        raise Http404(f"no plot {plot!r}")
    draw, _private = PLOTS[plot]
    report = _shown_report(project_obj, scope).report
    body = (
        cached_svg(f"agreement-{plot}", draw, report)
        if report is not None
        else empty_plot("being computed: reload the page in a moment", PLOT_TITLES[plot])
    )
    response = HttpResponse(body, content_type="image/svg+xml")
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    return response


def _interval_cells(stats: dict, names) -> list[list[str]]:
    cell = tables.display_cell
    return [
        [title, cell(stats[name]["estimate"]), cell(stats[name]["low"]), cell(stats[name]["high"])]
        for name, title in names
    ]


@login_required
def spans(request, project: str, task: str):
    """Agreement of an error-span task (ESA, MQM), per direction of the user's scope: aggregates only, so
    viewers and annotators of the languages see it as admins do."""
    project_obj, scope = _project_and_scope(request, project)
    task_obj = sel.SpanTask.objects.filter(project=project_obj, name=str(task)[:100]).first()
    if task_obj is None:
        raise access.not_found()
    figures = sel.cached_span_agreement(task_obj, scope.languages)
    if figures is None and tasks.span_page_missed(task_obj.pk, scope.languages):
        figures = sel.cached_span_agreement(task_obj, scope.languages)  # without a broker it has run by now
    directions = []
    for d in figures or ():
        directions.append(
            {
                "code": d["direction"],
                "counts": d,
                "agreement": _interval_cells(d, sel.SPAN_STATISTICS),
                "injected": _interval_cells(d["injected"], sel.INJECTED_STATISTICS),
                "by_errors": [
                    [str(r["errors"]), str(r["items"]), str(r["scores"])]
                    + [tables.display_cell(r[k]) for k in ("estimate", "low", "high")]
                    for r in d["score_by_errors"]
                ],
            }
        )
    return render(
        request,
        "agreement/spans.html",
        {
            "project": project_obj,
            "task": task_obj,
            "directions": directions,
            "bootstrap": sel.bootstrap_options(),
            "headers_interval": ["statistic", "estimate", "low", "high"],
            "headers_errors": ["injected errors k", "items", "scores", "mean score", "low", "high"],
            "computing": figures is None,
            "auto_refresh": REFRESH_SECONDS if figures is None else None,
        },
    )
