"""The Likert rating screens: the next item to rate and the rating page. Thin: reads through selectors,
writes through services. Their URL names stay in the ``review:`` namespace (``annotation.review.urls``
mounts ``annotation.rating.urls``); their templates are ``review/rate.html`` and ``review/empty.html``.

Every view requires login; items of other languages answer 404 (``selectors.visible_rating_items``).
"""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation.common.views import lang_param
from annotation.rating import domain as rules
from annotation.rating import selectors, services
from core import access
from core.domain.errors import Invalid
from core.errors import RefusalAsMessage, answers_refusals


@login_required
def next_rating(request, project):
    project = access.work_project(request.user, project)
    lang = lang_param(request)
    item = services.rating_item_take_next(user=request.user, project=project, language=lang)
    if item is None:
        return render(request, "review/empty.html", {"project": project, "lang": lang, "what": "rating"})
    return redirect(reverse("review:rate", args=[item.pk]) + (f"?lang={lang}" if lang else ""))


@login_required
@require_http_methods(["GET", "POST"])
@answers_refusals
def rate(request, pk):
    item = services.rating_item_get_visible(user=request.user, item_id=pk)
    lang = lang_param(request)
    next_url = reverse("review:rate_next", args=[item.project.name]) + (f"?lang={lang}" if lang else "")
    own = selectors.ratings_of(request.user).filter(item=item, rater=request.user).first()
    if request.method == "POST":
        scores = {name: request.POST.get(name) for name in rules.DIMENSION_NAMES}
        with RefusalAsMessage(request) as refusal:
            repeated = [name for name in rules.DIMENSION_NAMES if len(request.POST.getlist(name)) > 1]
            if repeated:  # two scores for one dimension: which one the rater meant is unknown
                raise Invalid(f"{repeated[0]}: one score, not {len(request.POST.getlist(repeated[0]))}", repeated[0])
            services.rating_submit(
                user=request.user,
                item_id=item.pk,
                scores=scores,
                idempotency_key=request.POST.get("idempotency_key", ""),
                time_spent_ms=request.POST.get("time_spent_ms"),
                client_user=request.POST.get("client_user"),
            )
        return redirect(request.get_full_path() if refusal.error else next_url)
    dims = [
        {"dimension": d, "anchors": list(enumerate(d.anchors, start=1)), "value": getattr(own, d.name) if own else None}
        for d in rules.DIMENSIONS
    ]
    return render(
        request,
        "review/rate.html",
        {
            "item": item,
            "language": item.direction.target,
            "source_language": item.direction.source,
            "dimensions": dims,
            "own": own,
            "progress": selectors.rating_progress(request.user, item.project, [item.direction.target.code]),
            "idempotency_key": uuid.uuid4().hex,
            "next_url": next_url,
            "config": {
                "user": request.user.pk,
                "project": item.project.name,
                "item": item.pk,
                "nextUrl": next_url,
                "ratingsUrl": reverse("review_api:ratings"),
                "dimensions": list(rules.DIMENSION_NAMES),
            },
        },
    )
