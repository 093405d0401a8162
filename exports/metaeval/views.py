"""The meta-evaluation page of a release: one metric against the predetermined human scores. Mounted
under /scores/ (``exports.urls``); visible directions as on the scores page."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, render

from exports.metaeval.domain import STATISTIC_LABELS, TAU_STATISTICS
from exports.metaeval.selectors import MetaEvaluationError, release_meta_evaluation
from exports.models import Release
from exports.scores.views import visible_directions


@login_required
def metaeval_page(request, release_id: int):
    """Meta-evaluation of one metric (``?metric=NAME&variant=b``) against the predetermined human scores."""
    release = get_object_or_404(Release.objects.select_related("project"), pk=release_id)
    visible = visible_directions(request.user, release)
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
