"""The meta-evaluation page of a release: one metric against the predetermined human scores. Mounted
under /scores/ (``exports.urls``); visible directions as on the scores page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from exports.metaeval import selectors, tasks, taskset_selectors
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
# the leaderboard page's average_by (mt-metrics-eval's): all triplets at once, or per gold segment
GROUPINGS = {"none": "over all triplets", "item": "per segment (its pseudo translations)"}


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
    # A page answers in about linear time: the pair-counting statistics (O(n log n) and a bootstrap besides) and
    # PCE (segment scores by system: EvalSets and task sets) are the command's
    offered = {name: s for name, s in STATISTICS.items() if not s.pairwise and not s.by_system}
    statistic = request.GET.get("statistic", "pearson")
    if statistic not in offered:
        statistic = "pearson"
    average_by = request.GET.get("average_by", "none")
    if average_by not in GROUPINGS:
        average_by = "none"
    try:
        board = selectors.release_leaderboard(
            release, metrics, statistic=statistic, directions=scope, average_by=average_by
        )
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
            "groupings": list(GROUPINGS.items()),
            "average_by": average_by,
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
    task_set, computing = _task_set(release, metrics, scope)
    heatmaps = []
    for metric, grid in result["heatmap"].items():
        rows = [
            {"error_type": t, "cells": [{"rate": v, "bucket": _bucket(v)} for v in values]}
            for t, values in zip(grid["error_types"], grid["rows"])
        ]
        heatmaps.append({"metric": metric, "directions": grid["directions"], "rows": rows})
    return render(
        request,
        "scores/diagnostics.html",
        {
            "release": release,
            "result": result,
            "heatmaps": heatmaps,
            "task_set": task_set,
            "task_set_computing": computing,
            "poll_seconds": POLL_SECONDS,
        },
    )


def _task_set(release, metrics: list[str], scope: list[str] | None) -> tuple[dict | None, bool]:
    """The WMT24 task-set table beside the diagnostics: from the cache, else computed by a worker where one runs
    (the page polls meanwhile; k = 1000 permutation tests per task take minutes at WMT size), else here. None
    with one metric (a task set ranks several)."""
    if len(metrics) < 2:
        return None, False
    table = taskset_selectors.cached_task_set(release, metrics, scope)
    if table is None and tasks.queued():
        tasks.request_task_set(release, metrics, scope)
        return None, True
    if table is None and taskset_selectors.scores_count(release, metrics, scope) > taskset_selectors.INLINE_SCORES:
        return {
            "error": "too many scores to compute in a page view and no worker runs: see `manage.py metaeval --task-set`"
        }, False
    if table is None:
        table = taskset_selectors.compute_task_set(release, metrics, scope)
    if "error" in table:
        return table, False
    averages = {row["metric"]: row for row in table["overall"]}
    order = [row["metric"] for row in table["overall"]]
    for task in table["tasks"]:
        order += [row["metric"] for row in task["ranking"] if row["metric"] not in order]
    cells = {(i, row["metric"]): row for i, task in enumerate(table["tasks"]) for row in task["ranking"]}
    rows = [
        {
            "metric": m,
            "average": averages.get(m),
            "cells": [cells.get((i, m)) for i in range(len(table["tasks"]))],
        }
        for m in order
    ]
    return {**table, "rows": rows}, False
