"""Review and review-admin screens, and the annotator's start page (their review and rating work per project and
language). Thin: reads through selectors, writes through services. (The rating screens are
``annotation.rating.views``, the annotators page ``annotation.people.views``; ``urls.py`` mounts both.)

Every view requires login; items of other languages answer 404 (selectors.visible_*). The screens post
with a CSRF token; the keyboard-driven pages send the same forms through the JSON API with retries.
"""

from __future__ import annotations

import uuid
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation.common.selectors import language_codes
from annotation.common.views import lang_param
from annotation.models import ReviewRound
from annotation.rating import selectors as rating_selectors
from annotation.review import domain as rules
from annotation.review import selectors, services
from core import access
from core import selectors as core_selectors
from core.domain.errors import Invalid, NotFound
from core.domain.params import id_param
from core.errors import RefusalAsMessage, answers_refusals
from core.models import Language, Project

# ---- annotator screens ------------------------------------------------------------------------------


@login_required
def index(request):
    """Per project and language: the reviewer's progress and a start/resume link; the rating queue."""
    rows = []
    codes = language_codes(request.user)
    names = {lang.code: lang for lang in Language.objects.filter(code__in=codes)}
    for project in core_selectors.visible_projects(request.user).order_by("name"):
        in_project = set(language_codes(request.user, project=project))  # the project's assignments
        here = set(project.directions.filter(target__code__in=codes).values_list("target__code", flat=True))
        mine = [c for c in codes if c in here and c in in_project]
        if not mine:
            continue
        units = selectors.tally.units(project) if selectors.tally.available() else None  # one read for every language
        per_round = [
            (rnd, selectors.progress_by_language(request.user, project, rnd, mine, units=units))
            for rnd in selectors.open_rounds(project)
        ]
        for code in mine:
            review = [per[code] for _rnd, per in per_round]
            rating = rating_selectors.rating_progress(request.user, project, [code])
            rows.append({"project": project, "language": names[code], "review": review, "rating": rating})
    return render(request, "review/index.html", {"rows": rows, "is_admin": access.is_admin(request.user)})


@login_required
@require_http_methods(["GET", "POST"])
def next_item(request, project):
    """POST takes the next item's lock; GET only resumes a held item or offers a Start button (which
    static/js/review.js presses once the page is really shown): no state changes on GET (#36.10)."""
    project = access.work_project(request.user, project)
    lang = lang_param(request)
    if request.method == "POST":
        got = services.candidate_take_next(user=request.user, project=project, language=lang)
    else:
        got = services.candidate_get_held(user=request.user, project=project, language=lang)
        if got is None and services.work_exists(user=request.user, project=project, language=lang):
            return render(request, "review/start.html", {"project": project, "lang": lang})
    if got is None:
        return render(request, "review/empty.html", {"project": project, "lang": lang, "what": "review"})
    url = reverse("review:candidate", args=[project.name, got.candidate.pk])
    query = f"?round={got.round.number}" + (f"&lang={lang}" if lang else "")  # the number the page shows, not the id
    return redirect(url + query)


@login_required
@require_http_methods(["GET", "POST"])
@answers_refusals
def candidate(request, project, pk):
    project = access.work_project(request.user, project)
    cand = services.candidate_get_visible(user=request.user, candidate_id=pk)
    if cand.segment.project_id != project.pk:
        raise Http404
    rnd = services.round_resolve(
        user=request.user, candidate=cand, number=request.GET.get("round") or request.POST.get("round")
    )
    lang = lang_param(request)
    next_url = reverse("review:next", args=[project.name]) + (f"?lang={lang}" if lang else "")
    if request.method == "POST":  # the no-JavaScript path; the keyboard path posts the same fields to the API
        return _candidate_post(request, cand, rnd, next_url)
    codes = [cand.segment.direction.target.code]
    own = selectors.own_decision(request.user, cand, rnd)
    own_skip = selectors.own_skip(request.user, cand, rnd)
    previous_url = _previous_url(request, project, cand, rnd, lang)
    context = selectors.candidate_view(cand) | {
        "project": project,
        "round": rnd,
        "own": own,
        "own_skip": own_skip,
        "own_skip_reason": rules.reason_label(own_skip.reason, rules.SKIP_REASONS) if own_skip else "",
        "previous_url": previous_url,
        "progress": selectors.progress(request.user, project, rnd, codes),
        "reject_reasons": rules.REJECT_REASONS,
        "skip_reasons": rules.SKIP_REASONS,
        "idempotency_key": uuid.uuid4().hex,
        "next_url": next_url,
        "lang": lang,
        "config": {
            "user": request.user.pk,  # unsent decisions are kept per user and project (review.js)
            "project": project.name,
            "candidate": cand.pk,
            "round": rnd.pk,
            "open": rnd.is_open,  # work in a closed round cannot be withdrawn (services.round_check_revisable)
            "nextUrl": next_url,
            "decisionsUrl": reverse("review_api:decisions"),
            "skipsUrl": reverse("review_api:skips"),
            "withdrawalsUrl": reverse("review_api:withdrawals"),
            "previousUrl": previous_url,
        },
    }
    return render(request, "review/review.html", context)


def _candidate_post(request, cand, rnd, next_url: str):
    """A decision, a skip or a withdrawal posted from the page; a refusal comes back to it as a message."""
    with RefusalAsMessage(request) as refusal:
        action = request.POST.get("action")
        client_user = request.POST.get("client_user")
        if action == "withdraw":  # undo: the same item again, undecided and held for this reviewer
            services.decision_withdraw(
                user=request.user, candidate_id=cand.pk, round_id=rnd.pk, client_user=client_user
            )
            messages.success(request, "Withdrawn: decide this item again, or go on with Next.")
            return redirect(request.get_full_path())
        if action == "skip":
            services.candidate_skip(
                user=request.user,
                candidate_id=cand.pk,
                reason=request.POST.get("skip_reason", ""),
                comment=request.POST.get("comment", ""),
                round_id=rnd.pk,
                client_user=client_user,
            )
        else:
            services.decision_submit(
                user=request.user,
                candidate_id=cand.pk,
                decision=action or "",
                idempotency_key=request.POST.get("idempotency_key", ""),
                reason=request.POST.get("reason", ""),
                comment=request.POST.get("comment", ""),
                time_spent_ms=request.POST.get("time_spent_ms"),
                round_id=rnd.pk,
                client_user=client_user,
            )
    return redirect(request.get_full_path() if refusal.error else next_url)


def _previous_url(request, project, cand, rnd, lang: str) -> str:
    """The reviewer's item before this one, in its round (the round's number, as the pages name rounds)."""
    previous = selectors.previous_item(
        request.user, project, language_codes(request.user, lang, project), current=cand, rnd=rnd
    )
    if not previous:
        return ""
    return (
        reverse("review:candidate", args=[project.name, previous[0]])
        + f"?round={previous[2]}"
        + (f"&lang={lang}" if lang else "")
    )


def _integer(form, name: str) -> int:
    """A whole number from a form field (empty: 0); anything else is refused naming the field."""
    try:
        return int(form.get(name) or 0)
    except ValueError:
        raise Invalid(f"{name.replace('_', ' ')} must be an integer", name) from None


MINE_SHOWN = 500  # newest first; the filters narrow it


@login_required
def my_decisions(request):
    """The reviewer's own decisions with the candidate's text, filterable by project, direction and
    decision; and their skips and "broken item" reports, each with a way back to the item."""
    decisions = (
        selectors.decisions_of(request.user)
        .filter(reviewer=request.user)
        .select_related("candidate__segment__project", "candidate__segment__direction__target", "round")
        .order_by("-updated_at")
    )
    skips = selectors.skips_of(request.user).filter(reviewer=request.user)
    wanted = {key: request.GET.get(key, "")[:100] for key in ("project", "direction", "decision")}
    if wanted["project"]:
        decisions = decisions.filter(candidate__segment__project__name=wanted["project"])
        skips = skips.filter(candidate__segment__project__name=wanted["project"])
    if wanted["direction"]:
        decisions = decisions.filter(candidate__segment__direction__code=wanted["direction"])
        skips = skips.filter(candidate__segment__direction__code=wanted["direction"])
    if wanted["decision"]:
        decisions = decisions.filter(decision=wanted["decision"])
    return render(
        request,
        "review/mine.html",
        {
            "decisions": decisions[:MINE_SHOWN],
            "skips": [_skip_row(s) for s in skips[:MINE_SHOWN]],
            "wanted": wanted,
            "decision_choices": [("accept", "accepted"), ("reject", "rejected")],
        },
    )


def _skip_row(skip) -> dict:
    return {
        "skip": skip,
        "reason": rules.reason_label(skip.reason, rules.SKIP_REASONS),
        "open": bool(skip.round and skip.round.is_open),
    }


# ---- admin screens ----------------------------------------------------------------------------------


def _admin_screen(view):
    """An admin's screen of one project (GET shows, POST acts): login, an admin, the project by name."""

    @login_required
    @require_http_methods(["GET", "POST"])
    @wraps(view)
    def screen(request, project):
        access.require_admin(request.user)
        return view(request, access.work_project(request.user, project))

    return screen


@_admin_screen
def manage(request, project):
    if request.method == "POST":
        with RefusalAsMessage(request):
            if request.POST.get("action") == "open_round":
                langs = [c for c in request.POST.get("languages", "").replace(",", " ").split() if c]
                rnd = services.round_open(
                    admin=request.user,
                    project=project,
                    sample_size=_integer(request.POST, "sample_size"),
                    seed=_integer(request.POST, "seed"),
                    languages=langs or None,
                )
                # a resent form answers with the round it opened (``round_open``): the message is the same
                messages.success(request, f"Round {rnd.number} is open on {rnd.candidates.count()} candidates.")
            elif request.POST.get("action") == "close_round":
                rnd = ReviewRound.objects.filter(pk=id_param(request.POST.get("round")) or 0, project=project).first()
                if rnd is None:  # deleted meanwhile, or never of this project: say so on the page
                    raise NotFound(f"round: no round {request.POST.get('round', '')!r} in {project.name}", "round")
                services.round_close(admin=request.user, rnd=rnd)
                messages.success(request, "Round closed.")
            elif request.POST.get("action") == "pool_rule":
                changed = services.pool_rule_set(
                    admin=request.user, project=project, rule=request.POST.get("pool_rule", "")
                )
                messages.success(request, f"Pool rule set; {changed} candidate status(es) changed.")
            else:
                raise Invalid(f"action: unknown action {request.POST.get('action', '')!r}", "action")
        return redirect("review:manage", project=project.name)
    figures = selectors.decision_figures(project)
    return render(
        request,
        "review/manage.html",
        {
            "project": project,
            "languages": selectors.language_progress(project),
            "annotators": figures.annotators,
            "figures": figures,
            "rounds": selectors.round_summaries(project),
            "pool_rules": Project.PoolRule.choices,
            "disagreements": figures.disagreements,
            "gaps": core_selectors.coverage_gaps(project),
            "is_admin": True,
            "skips": [_skip_row(s) for s in selectors.skips_of(request.user, project=project)[:MINE_SHOWN]],
        },
    )


@_admin_screen
def adjudication(request, project):
    if request.method == "POST":
        with RefusalAsMessage(request):
            services.candidate_adjudicate(
                admin=request.user,
                candidate_id=request.POST.get("candidate"),
                decision=request.POST.get("decision", ""),
                comment=request.POST.get("comment", ""),
            )
            messages.success(request, "Final decision recorded.")
        return redirect("review:adjudication", project=project.name)
    items = [
        selectors.candidate_view(c) | {"decisions": [d for d in c.decisions.all() if d.source == "annotator"]}
        for c in selectors.disagreements(project)[:200]
    ]
    return render(request, "review/adjudication.html", {"project": project, "items": items})
