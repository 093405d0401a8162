"""The meta-evaluation page of a release: one metric against the predetermined human scores. Mounted
under /scores/ (``exports.urls``); visible directions as on the scores page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from exports.metaeval import selectors, tasks
from exports.metaeval.domain import STATISTIC_LABELS, TAU_STATISTICS
from exports.metaeval.statistics import STATISTICS
from exports.scores.selectors import scores_digest
from exports.scores.views import visible_release

POLL_SECONDS = 5


@login_required
def metaeval_page(request, release_id: int):
    """Meta-evaluation of one metric (``?metric=NAME&variant=b``) against the predetermined human scores."""
    release, visible = visible_release(request.user, release_id)
    metric, variant = request.GET.get("metric", ""), request.GET.get("variant", "b")
    if variant not in TAU_STATISTICS:
        variant = "b"
    scope = sorted(visible) if visible is not None else None
    # A pass over every score of the metric (minutes at FLORES size): kept in the cache under the scores'
    # key, computed by a worker where one runs (the page polls meanwhile), else here.
    result = selectors.cached_meta_evaluation(release, metric, variant, scope)
    computing = False
    if result is None and tasks.queued() and scores_digest(release, metric)[0]:
        tasks.request_result(release, metric, variant, scope)
        computing = True
    elif result is None:
        result = selectors.compute_meta_evaluation(release, metric, variant, scope)
    if result is not None and "error" in result:
        raise Http404(result["error"])
    rows = (
        []
        if computing
        else [{**row, "system": result["system_level"].get(row["direction"])} for row in result["triplet_level"]]
    )
    return render(
        request,
        "scores/metaeval.html",
        {
            "release": release,
            "result": result,
            "rows": rows,
            "variants": [(v, STATISTIC_LABELS[v]) for v in TAU_STATISTICS],
            "variant": variant,
            "label": STATISTIC_LABELS[variant],
            "metric": metric,
            "computing": computing,
            "poll_seconds": POLL_SECONDS,
        },
    )


MAX_METRICS = 20


def _metrics_param(request) -> list[str]:
    """``?metrics=a,b``: distinct names in the order given, bounded in number and length."""
    names = []
    for part in request.GET.get("metrics", "").split(",")[: MAX_METRICS + 1]:
        name = part.strip()[:80]
        if name and name not in names:
            names.append(name)
    if not names or len(names) > MAX_METRICS:
        raise Http404(f"name between one and {MAX_METRICS} metrics: ?metrics=chrF++,BLEU")
    return names


def _release_in_scope(request, release_id: int):
    """The release and the directions of it the user may see, sorted (None: all); a release with none of
    theirs answers as a missing one does."""
    release, visible = visible_release(request.user, release_id)
    return release, (sorted(visible) if visible is not None else None)


@login_required
def leaderboard_page(request, release_id: int):
    """The metrics of ``?metrics=`` ranked with significance clusters, per visible direction and over them."""
    release, scope = _release_in_scope(request, release_id)
    metrics = _metrics_param(request)
    # A page answers in linear time: the pairwise statistics (O(n²) per resample) are the command's
    offered = {name: s for name, s in STATISTICS.items() if not s.pairwise}
    statistic = request.GET.get("statistic", "pearson")
    if statistic not in offered:
        statistic = "pearson"
    gold = request.GET.get("gold", selectors.PREDETERMINED)
    if gold not in selectors.GOLDS:
        gold = selectors.PREDETERMINED
    try:
        board = selectors.release_leaderboard(release, metrics, statistic=statistic, directions=scope, gold=gold)
    except selectors.MetaEvaluationError as exc:
        raise Http404(str(exc)) from None
    return render(
        request,
        "scores/leaderboard.html",
        {
            "release": release,
            "board": board,
            "groups": [*board["directions"], board["overall"]],
            "statistics": [(name, s.label) for name, s in offered.items()],
            "statistic": statistic,
            "gold": gold,
            "golds": [
                (selectors.PREDETERMINED, "the predetermined quality (−5·k)"),
                ("esa", "people's ESA scores"),
                ("mqm", "people's MQM scores"),
            ],
            "metrics_param": ",".join(metrics),
        },
    )


HEAT_BUCKETS = 5


def _bucket(rate: float | None) -> int | None:
    return None if rate is None else min(int(rate * HEAT_BUCKETS), HEAT_BUCKETS - 1)


@login_required
def diagnostics_page(request, release_id: int):
    """Known-answer diagnostics of the metrics of ``?metrics=``: sensitivity per error type, additivity, and a
    heatmap of detection rates, over the visible directions."""
    release, scope = _release_in_scope(request, release_id)
    metrics = _metrics_param(request)
    try:
        result = selectors.release_diagnostics(release, metrics, directions=scope)
    except selectors.MetaEvaluationError as exc:
        raise Http404(str(exc)) from None
    heatmaps = []
    for metric, grid in result["heatmap"].items():
        rows = [
            {"error_type": t, "cells": [{"rate": v, "bucket": _bucket(v)} for v in values]}
            for t, values in zip(grid["error_types"], grid["rows"])
        ]
        heatmaps.append({"metric": metric, "directions": grid["directions"], "rows": rows})
    return render(request, "scores/diagnostics.html", {"release": release, "result": result, "heatmaps": heatmaps})
