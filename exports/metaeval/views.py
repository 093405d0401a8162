"""The meta-evaluation page of a release: one metric against the predetermined human scores. Mounted
under /scores/ (``exports.urls``); visible directions as on the scores page."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from exports.metaeval.domain import STATISTIC_LABELS, TAU_STATISTICS
from exports.metaeval import selectors, tasks
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
    rows = [] if computing else [{**row, "system": result["system_level"].get(row["direction"])} for row in result["triplet_level"]]
    return render(
        request,
        "scores/metaeval.html",
        {"release": release, "result": result, "rows": rows, "variants": [(v, STATISTIC_LABELS[v]) for v in TAU_STATISTICS],
         "variant": variant, "label": STATISTIC_LABELS[variant], "metric": metric, "computing": computing, "poll_seconds": POLL_SECONDS},
    )
