"""Read-only queries of review: the review screen, the queue and progress, the admin pages and the API.
(Rating's reads are ``annotation.rating.selectors``; the work languages ``annotation.common.selectors``.)"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import (
    Aggregate,
    Count,
    Exists,
    F,
    FloatField,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.utils import timezone

from annotation.models import ReviewDecision, ReviewLock, ReviewRound, ReviewSkip
from annotation.review import changes, tally
from annotation.review import domain as rules
from core import access
from core.domain.units import split_units
from core.models import Project
from injection.models import Candidate

ANNOTATOR = ReviewDecision.Source.ANNOTATOR


def visible_candidates(user) -> QuerySet[Candidate]:
    if not (access.is_admin(user) or access.is_annotator(user)):
        return Candidate.objects.none()
    return Candidate.objects.filter(
        access.work_filter(user, project_path="segment__project", direction_path="segment__direction")
    )


def first_round(project: Project) -> ReviewRound:
    rnd, _ = ReviewRound.objects.get_or_create(project=project, number=1)
    return rnd


def open_rounds(project: Project) -> list[ReviewRound]:
    rounds = list(ReviewRound.objects.filter(project=project, is_open=True).order_by("number"))
    if not rounds and not ReviewRound.objects.filter(project=project).exists():
        rounds = [first_round(project)]
    return rounds


def _count(qs: QuerySet) -> Subquery:
    """A correlated ``(SELECT COUNT(*) … WHERE …)``: one row, 0 when nothing matches, and no GROUP BY on
    either query (allowed with FOR UPDATE). COUNT as a plain function, not the ``Count`` aggregate, so the
    subquery gets no GROUP BY … LIMIT 1 to plan and run for every candidate the queue looks at."""
    return Subquery(
        qs.order_by().annotate(c=Func(Value(1), function="COUNT", output_field=IntegerField())).values("c"),
        output_field=IntegerField(),
    )


def round_scope(project: Project, rnd: ReviewRound) -> QuerySet[Candidate]:
    """Candidates a round covers: round 1 every undecided one, later rounds their sample."""
    qs = Candidate.objects.filter(segment__project=project)
    if rnd.number == 1:
        # Decided candidates (N reviews, imported or adjudicated) are no longer pending; filtering on the
        # indexed status keeps the queue scan proportional to the work left, not to the project.
        final = ReviewDecision.objects.filter(candidate=OuterRef("pk"), is_final=True)
        return qs.filter(status=Candidate.Status.PENDING).filter(~Exists(final))
    return qs.exclude(status=Candidate.Status.EXCLUDED).filter(sampled_in_rounds=rnd)


def others_taken(rnd: ReviewRound, user, now, candidate=OuterRef("pk")):
    """Reviews of ``candidate`` in this round that are not this user's: decisions plus live locks."""
    decided = ReviewDecision.objects.filter(candidate=candidate, round=rnd, source=ANNOTATOR).exclude(reviewer=user)
    locked = ReviewLock.objects.filter(candidate=candidate, round=rnd, expires_at__gt=now).exclude(reviewer=user)
    return _count(decided) + _count(locked)


def queue(user, project: Project, rnd: ReviewRound, codes: list[str], *, now=None) -> QuerySet[Candidate]:
    """What this reviewer may still be given in this round: their languages, not decided or skipped by
    them, and fewer than N reviews taken (decisions plus other reviewers' live locks)."""
    now = now or timezone.now()
    required = project.reviewers_per_candidate
    own = ReviewDecision.objects.filter(candidate=OuterRef("pk"), round=rnd, source=ANNOTATOR, reviewer=user)
    return (
        round_scope(project, rnd)
        .filter(segment__direction__target__code__in=codes)
        .filter(~Exists(own))
        .filter(~Exists(ReviewSkip.objects.filter(candidate=OuterRef("pk"), round=rnd, reviewer=user)))
        # alias, not annotate: the count is only filtered on, so it is not computed a second time in the
        # SELECT list, and count() needs no wrapping subquery. The user's own decisions are excluded
        # above, so counting only others' decisions gives the same ``taken``.
        .alias(taken=others_taken(rnd, user, now))
        .filter(taken__lt=required)
    )


def progress(user, project: Project, rnd: ReviewRound, codes: list[str], *, units=None) -> dict:
    """The reviewer's decisions in this round and what their queue still holds (these languages), exact."""
    per = progress_by_language(user, project, rnd, codes, units=units)
    return {
        "done": sum(p["done"] for p in per.values()),
        "remaining": sum(p["remaining"] for p in per.values()),
        "round": rnd.number,
    }


LANG = "segment__direction__target__code"


def _per_language(qs: QuerySet, lang: str = LANG) -> dict[str, int]:
    return dict(qs.order_by().values_list(lang).annotate(n=Count("pk")).values_list(lang, "n"))


def progress_by_language(user, project: Project, rnd: ReviewRound, codes: list[str], *, units=None) -> dict[str, dict]:
    """Per language: the reviewer's decisions in this round and what their queue still holds, exact.

    "Remaining" without counting the queue: the tally's open candidates (in scope, fewer than N reviews)
    less those the queue leaves out, which are all among a small set S: this user's own decisions and
    skips in the round and the candidates others hold live locks on. So
    remaining = open − |open ∩ S| + |queue ∩ S|, two counts bounded by the user's history and the locks.
    A handful of queries whatever the number of languages. ``units``: the project's tally when the caller
    already read it."""
    done = _per_language(
        ReviewDecision.objects.filter(
            reviewer=user,
            round=rnd,
            candidate__segment__project=project,
            candidate__segment__direction__target__code__in=codes,
        ),
        "candidate__" + LANG,
    )
    skipped = skipped_open(user, project, rnd, codes)
    if not tally.available():
        left = _per_language(queue(user, project, rnd, codes))
        return {
            c: {"done": done.get(c, 0), "remaining": left.get(c, 0), "skipped": skipped.get(c, 0), "round": rnd.number}
            for c in codes
        }
    required = project.reviewers_per_candidate
    units = tally.units(project) if units is None else units
    now = timezone.now()
    near = list(
        ReviewDecision.objects.filter(round=rnd, reviewer=user)
        .values_list("candidate_id", flat=True)
        .union(ReviewSkip.objects.filter(round=rnd, reviewer=user).values_list("candidate_id", flat=True))
        .union(
            ReviewLock.objects.filter(round=rnd, expires_at__gt=now)
            .exclude(reviewer=user)
            .values_list("candidate_id", flat=True)
        )
    )
    left_out = _per_language(open_candidates(project, rnd, codes).filter(pk__in=near)) if near else {}
    kept = _per_language(queue(user, project, rnd, codes, now=now).filter(pk__in=near)) if near else {}
    return {
        c: {
            "done": done.get(c, 0),
            "remaining": tally.open_in_scope(units, rnd.number, [c], required) - left_out.get(c, 0) + kept.get(c, 0),
            "skipped": skipped.get(c, 0),
            "round": rnd.number,
        }
        for c in codes
    }


def decisions_done(user, project: Project, rnd: ReviewRound, codes: list[str]) -> int:
    """This reviewer's decisions in the round (index reviewer, round: bounded by their own history)."""
    return ReviewDecision.objects.filter(
        reviewer=user,
        round=rnd,
        candidate__segment__project=project,
        candidate__segment__direction__target__code__in=codes,
    ).count()


def skipped_open(user, project: Project, rnd: ReviewRound, codes: list[str]) -> dict[str, int]:
    """Per language: the candidates this reviewer skipped in the round and has not decided, still open
    (fewer than N reviews). Her queue leaves them out, so "0 remaining" alone hid them (#46). Bounded by her
    own skips."""
    mine = ReviewSkip.objects.filter(round=rnd, reviewer=user).values("candidate_id")
    decided = ReviewDecision.objects.filter(round=rnd, reviewer=user).values("candidate_id")
    return _per_language(open_candidates(project, rnd, codes).filter(pk__in=mine).exclude(pk__in=decided))


def open_candidates(project: Project, rnd: ReviewRound, codes: list[str]) -> QuerySet[Candidate]:
    """In the round's scope, these languages, fewer than N annotator reviews: what the tally's open count
    counts (the queue less the per-user conditions)."""
    reviews = ReviewDecision.objects.filter(candidate=OuterRef("pk"), round=rnd, source=ANNOTATOR)
    return (
        round_scope(project, rnd)
        .filter(segment__direction__target__code__in=codes)
        .alias(n=_count(reviews))
        .filter(n__lt=project.reviewers_per_candidate)
    )


def exact_progress(user, project: Project, rnd: ReviewRound, codes: list[str]) -> dict:
    """Progress counted from the rows (linear in the queue): the test oracle and the SQLite path."""
    return {
        "done": decisions_done(user, project, rnd, codes),
        "remaining": queue(user, project, rnd, codes).count(),
        "round": rnd.number,
    }


# ---- the review screen ------------------------------------------------------------------------------


def candidate_view(candidate: Candidate) -> dict:
    """Everything the review screen shows, with highlights drawn from the stored span offsets."""
    segment = candidate.segment
    target = segment.direction.target
    lang = target.code
    edit_units = len(split_units(candidate.edit_text, lang))
    cand_start, cand_end = rules.candidate_span(candidate.span_start, edit_units)
    checks = candidate.checks or {}
    warnings = [
        {"name": name, "detail": (checks.get(name) or {}).get("detail", "")} for name in (candidate.flags or [])
    ]
    return {
        "candidate": candidate,
        "language": target,
        "source_language": segment.direction.source,  # the source text reads in its own direction
        "direction": segment.direction.code,
        "source": segment.source,
        "reference_pieces": rules.highlight(segment.reference, candidate.span_start, candidate.span_end, lang),
        "candidate_pieces": rules.highlight(candidate.text, cand_start, cand_end, lang),
        "edit_kind": "deletion"
        if edit_units == 0
        else ("insertion" if candidate.span_start == candidate.span_end else "replacement"),
        "guideline": rules.guideline_for(candidate.error_type),
        "general_rule": rules.GENERAL_RULE,
        "warnings": warnings,
    }


def own_decision(user, candidate: Candidate, rnd: ReviewRound | None) -> ReviewDecision | None:
    return ReviewDecision.objects.filter(candidate=candidate, reviewer=user, round=rnd).first()


def own_skip(user, candidate: Candidate, rnd: ReviewRound | None) -> ReviewSkip | None:
    return ReviewSkip.objects.filter(candidate=candidate, reviewer=user, round=rnd).first()


# ---- admin pages ------------------------------------------------------------------------------------

LANGUAGE_FIGURES = ("total", "pending", "accepted", "rejected", "excluded", "reviews", "missing_reviews")


def language_progress(project: Project) -> list[dict]:
    """Per target language: candidates by status and how many reviews are still missing in round 1 (from
    the tally: a few rows whatever the size of the project)."""
    if not tally.available():
        return exact_language_progress(project)
    required = project.reviewers_per_candidate
    out = []
    for lang, units in sorted(tally.by_language(tally.units(project), 1).items()):
        t = dict.fromkeys(LANGUAGE_FIGURES, 0) | {"language": lang}
        for u in units:
            t["total"] += u.candidates
            t[u.status] += u.candidates
            t["reviews"] += u.reviews * u.candidates
            if u.status == Candidate.Status.PENDING:
                t["missing_reviews"] += max(0, required - u.reviews) * u.candidates
        if t["total"]:
            out.append(t)
    return out


def exact_language_progress(project: Project) -> list[dict]:
    """``language_progress`` counted from the rows (reads every candidate): the test oracle, SQLite."""
    rnd = first_round(project)
    required = project.reviewers_per_candidate
    reviews = ReviewDecision.objects.filter(candidate=OuterRef("pk"), round=rnd, source=ANNOTATOR)
    rows = (
        Candidate.objects.filter(segment__project=project)
        .annotate(lang=F("segment__direction__target__code"), n=_count(reviews))
        .values("lang", "status", "n")
    )
    table: dict[str, dict] = {}
    for row in rows:
        t = table.setdefault(row["lang"], dict.fromkeys(LANGUAGE_FIGURES, 0) | {"language": row["lang"]})
        t["total"] += 1
        t[row["status"]] += 1
        t["reviews"] += row["n"]
        if row["status"] == Candidate.Status.PENDING:
            t["missing_reviews"] += max(0, required - row["n"])
    return sorted(table.values(), key=lambda t: t["language"])


class _Median(Aggregate):
    """PostgreSQL's exact median (``percentile_cont(0.5)``: the mean of the two middle values for an even
    count, as ``statistics.median``)."""

    function = "PERCENTILE_CONT"
    name = "Median"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def annotator_stats(project: Project, *, now=None) -> list[dict]:
    """Per annotator of the project: decisions, share accepted, median seconds on an item, decisions per
    working hour, decisions in the last hour, languages. On PostgreSQL one grouped query: the rows never
    come to Python, so the admin page does not read every decision of a large project (the work is still
    a pass over the project's annotator decisions, in the database)."""
    now = now or timezone.now()
    if connection.vendor != "postgresql":
        return exact_annotator_stats(project, now=now)
    from django.contrib.postgres.aggregates import ArrayAgg

    timed = Q(time_spent_ms__gt=0)
    rows = (
        ReviewDecision.objects.filter(candidate__segment__project=project, source=ANNOTATOR)
        .values("reviewer_id", "reviewer__username")
        .annotate(
            decisions=Count("id"),
            accepted=Count("id", filter=Q(decision="accept")),
            last_hour=Count("id", filter=Q(created_at__gte=now - timedelta(hours=1))),
            work_ms=Sum("time_spent_ms", filter=timed),
            median_ms=_Median("time_spent_ms", filter=timed),
            languages=ArrayAgg("candidate__segment__direction__target__code", distinct=True),
        )
        .order_by()
    )
    out = [
        {
            "reviewer_id": r["reviewer_id"],
            "username": r["reviewer__username"],
            "languages": ", ".join(sorted(r["languages"])),
            "decisions": r["decisions"],
            "accept_percent": 100 * r["accepted"] / r["decisions"],
            "median_seconds": None if r["median_ms"] is None else r["median_ms"] / 1000,
            "per_hour": rules.decisions_per_hour(r["decisions"], r["work_ms"] or 0),
            "last_hour": r["last_hour"],
        }
        for r in rows
    ]
    return sorted(out, key=lambda r: r["username"])


def exact_annotator_stats(project: Project, *, now=None) -> list[dict]:
    """``annotator_stats`` computed in Python from every decision: the test oracle and the SQLite path."""
    now = now or timezone.now()
    rows: dict[int, dict] = {}
    for d in ReviewDecision.objects.filter(candidate__segment__project=project, source=ANNOTATOR).values(
        "reviewer_id",
        "reviewer__username",
        "decision",
        "time_spent_ms",
        "created_at",
        "candidate__segment__direction__target__code",
    ):
        r = rows.setdefault(
            d["reviewer_id"],
            {
                "username": d["reviewer__username"],
                "decisions": 0,
                "accepted": 0,
                "times": [],
                "last_hour": 0,
                "languages": set(),
            },
        )
        r["decisions"] += 1
        r["accepted"] += d["decision"] == "accept"
        if d["time_spent_ms"]:
            r["times"].append(d["time_spent_ms"])
        r["last_hour"] += d["created_at"] >= now - timedelta(hours=1)
        r["languages"].add(d["candidate__segment__direction__target__code"])
    out = []
    for reviewer_id, r in rows.items():
        med = rules.median(r["times"])
        out.append(
            {
                "reviewer_id": reviewer_id,
                "username": r["username"],
                "languages": ", ".join(sorted(r["languages"])),
                "decisions": r["decisions"],
                "accept_percent": 100 * r["accepted"] / r["decisions"],
                "median_seconds": None if med is None else med / 1000,
                "per_hour": rules.decisions_per_hour(r["decisions"], sum(r["times"])),
                "last_hour": r["last_hour"],
            }
        )
    return sorted(out, key=lambda r: r["username"])


# ---- the admin page's figures that grow with the decisions --------------------------------------------
#
# Per-annotator statistics (a median over every decision) and the count of disagreements are passes over
# the project's decisions: 3.5 s at 1.6 M decisions. Below REVIEW_FIGURES_LIVE_LIMIT annotator decisions
# the page computes them itself, exact and current; above it, and when workers run the agreement refresh
# (the task queued after every burst of decisions), it shows what that refresh computed last, marked as of
# its time, and the live part ("last hour", probes of the (reviewer, created_at) index) stays live.


@dataclass(frozen=True)
class DecisionFigures:
    annotators: list[dict]
    disagreements: int
    computed_at: datetime
    fresh: bool  # computed over the decisions stored now


def figures_live_limit() -> int:
    return int(getattr(settings, "REVIEW_FIGURES_LIVE_LIMIT", 20_000))


def _figures_key(project: Project) -> str:
    return f"review:decision-figures:v1:{project.pk}"


def compute_decision_figures(project: Project, *, now=None, token: tuple | None = None) -> DecisionFigures:
    """Compute the figures now and keep them for the page (the refresh task and a small project's page).
    ``token``: ``changes.token(project.pk)`` as the caller read it before this call."""
    token = token or changes.token(
        project.pk
    )  # before reading: a decision written meanwhile makes the entry stale, not wrong
    now = now or timezone.now()
    figures = DecisionFigures(annotator_stats(project, now=now), disagreements(project).count(), now, True)
    if token is not None:
        total = sum(a["decisions"] for a in figures.annotators)
        cache.set(_figures_key(project), {"token": token, "figures": figures, "decisions": total}, timeout=24 * 3600)
    return figures


def decision_figures(project: Project, *, now=None) -> DecisionFigures:
    """The admin page's per-annotator statistics and disagreement count, bounded in the decisions (above)."""
    now = now or timezone.now()
    token = changes.token(project.pk)
    entry = cache.get(_figures_key(project)) if token is not None else None
    if entry is None or (
        entry["token"] != token and (entry["decisions"] < figures_live_limit() or not refreshed_by_workers())
    ):
        return compute_decision_figures(project, now=now, token=token)
    figures: DecisionFigures = entry["figures"]
    last_hour = _last_hour(project, [a["reviewer_id"] for a in figures.annotators], now)
    annotators = [{**a, "last_hour": last_hour.get(a["reviewer_id"], 0)} for a in figures.annotators]
    return DecisionFigures(annotators, figures.disagreements, figures.computed_at, entry["token"] == token)


def refreshed_by_workers() -> bool:
    """Whether the agreement refresh runs on workers after writes (a broker is configured). Without one
    nothing recomputes the figures in the background, so the page does."""
    return not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", True)


def _last_hour(project: Project, reviewer_ids: list[int], now) -> dict[int, int]:
    rows = (
        ReviewDecision.objects.filter(
            reviewer_id__in=reviewer_ids,
            created_at__gte=now - timedelta(hours=1),
            source=ANNOTATOR,
            candidate__segment__project=project,
        )
        .values("reviewer_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {r["reviewer_id"]: r["n"] for r in rows}


def disagreements(project: Project) -> QuerySet[Candidate]:
    """Round-1 candidates whose reviewers disagree and that no final decision has settled."""
    rnd = first_round(project)
    base = ReviewDecision.objects.filter(candidate=OuterRef("pk"), round=rnd, source=ANNOTATOR)
    return (
        Candidate.objects.filter(segment__project=project)
        .filter(Exists(base.filter(decision="accept")), Exists(base.filter(decision="reject")))
        .filter(~Exists(ReviewDecision.objects.filter(candidate=OuterRef("pk"), is_final=True)))
        .select_related("segment__direction__target")
        .prefetch_related("decisions__reviewer")
        .order_by("segment_id", "id")
    )


def pool_candidates(project: Project) -> QuerySet[Candidate]:
    """The pool (SPEC glossary), the one definition every stage reads: the project's MQM candidates that
    review accepted under the project's pool rule (``domain.pool_outcome`` decides the status), never a
    planted gold item and never a perturbation. What a benchmark build then does with each one is the
    benchmark stage's record (``exports.models.CandidatePlacement``), not a change to this set."""
    return Candidate.objects.filter(segment__project=project).filter(in_pool())


def in_pool(via: str = "") -> Q:
    """The condition of ``pool_candidates`` on a candidate, or on the candidate reached through ``via``
    (``"candidate__"`` from a row that points at one), for reads that start from another table."""
    return Q(**{f"{via}status": Candidate.Status.ACCEPTED, f"{via}kind": Candidate.Kind.MQM, f"{via}is_gold": False})


def pool_counts(project: Project) -> dict[str, int]:
    """``pool_candidates`` per direction code (the benchmark card). With the review counters (PostgreSQL):
    their accepted count per direction minus the accepted gold items and perturbations, read through their
    partial indexes (``candidate_gold``, ``candidate_not_mqm``), so a view reads those few candidates
    instead of every accepted one (94 % of them in XQ-MEval: a grouped count of 1.5 M rows per view at
    FLORES size). Elsewhere one grouped count of the pool."""
    if not tally.available():
        return dict(pool_candidates(project).values_list("segment__direction__code").annotate(n=Count("id")).order_by())
    codes = dict(project.directions.values_list("id", "code"))
    accepted = {d: by_status.get(Candidate.Status.ACCEPTED, 0) for d, by_status in candidate_statuses(project).items()}
    outside = (
        Candidate.objects.filter(segment__project=project, status=Candidate.Status.ACCEPTED)
        .filter(Q(is_gold=True) | ~Q(kind=Candidate.Kind.MQM))
        .values_list("segment__direction_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    for direction_id, n in outside:
        accepted[direction_id] = accepted.get(direction_id, 0) - n
    return {codes[d]: n for d, n in accepted.items() if n and d in codes}


def candidate_statuses(project: Project) -> dict[int, dict[str, int]]:
    """Candidates per direction id and status: from the review counters (a few rows) on PostgreSQL, else
    one grouped count."""
    if tally.available():
        return tally.statuses_by_direction(project)
    out: dict[int, dict[str, int]] = {}
    for direction_id, status, n in (
        Candidate.objects.filter(segment__project=project)
        .values_list("segment__direction_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    ):
        out.setdefault(direction_id, {})[status] = n
    return out


def round_summaries(project: Project) -> list[dict]:
    """Per round: its sample's size (later rounds), annotator decisions and distinct reviewers."""
    if not tally.available():
        return exact_round_summaries(project)
    units = tally.units(project)
    out = []
    for rnd in ReviewRound.objects.filter(project=project).order_by("number"):
        mine = [u for u in units if u.round_number == rnd.number]
        size = sum(u.candidates for u in mine if tally.in_scope(u.status, rnd.number)) if rnd.number > 1 else None
        out.append(
            {
                "round": rnd,
                "size": size,
                "decisions": sum(u.reviews * u.candidates for u in mine),
                "reviewers": reviewers_in(rnd),
            }
        )
    return out


def reviewers_in(rnd: ReviewRound) -> int:
    """Distinct reviewers of the round: per user, one probe of the (reviewer, round) index, instead of a
    DISTINCT over every decision of the round."""
    from django.contrib.auth import get_user_model

    took_part = ReviewDecision.objects.filter(reviewer=OuterRef("pk"), round=rnd, source=ANNOTATOR)
    return get_user_model().objects.filter(Exists(took_part)).count()


def exact_round_summaries(project: Project) -> list[dict]:
    """``round_summaries`` counted from the rows: the test oracle and the SQLite path."""
    out = []
    for rnd in ReviewRound.objects.filter(project=project).order_by("number"):
        decided = ReviewDecision.objects.filter(round=rnd, source=ANNOTATOR)
        size = round_scope(project, rnd).count() if rnd.number > 1 else None
        out.append(
            {
                "round": rnd,
                "size": size,
                "decisions": decided.count(),
                "reviewers": decided.values("reviewer").distinct().count(),
            }
        )
    return out


def decisions_of(user) -> QuerySet[ReviewDecision]:
    """Decisions a user may read: an admin all; an annotator only their own, and not those of a candidate
    that an open later round re-reviews (that round must stay blind to the earlier decision)."""
    qs = ReviewDecision.objects.select_related("candidate", "round")
    if access.is_admin(user):
        return qs
    later = ReviewRound.objects.filter(
        is_open=True, candidates=OuterRef("candidate"), number__gt=OuterRef("round__number")
    )
    return qs.filter(reviewer=user).filter(~Exists(later))


def skips_of(user, *, project: Project | None = None):
    """Skips and "broken item" reports: an annotator's own; an admin's view of one project: everyone's."""
    qs = ReviewSkip.objects.select_related(
        "candidate__segment__project",
        "candidate__segment__direction__target",
        "round",
        "reviewer",
    ).order_by("-created_at", "-id")
    if project is not None:
        qs = qs.filter(candidate__segment__project=project)
    if not access.is_admin(user):
        qs = qs.filter(reviewer=user)
    return qs


def previous_item(user, project: Project, codes: list[str], *, current: Candidate | None = None, rnd=None):
    """(candidate id, round id, round number) of the item this reviewer decided or skipped last before ``current`` (before
    their own decision or skip of it; the last of all when they have none), in this project's open rounds
    and these languages, or None: what the review screen's Previous opens. Open rounds only, as the
    service's rule for changing work allows (``services.round_check_revisable``); a decision that a later open
    round re-reviews stays hidden, as in ``decisions_of``."""
    where = {
        "round__project": project,
        "round__is_open": True,
        "candidate__segment__direction__target__code__in": codes,
    }
    decided = decisions_of(user).filter(reviewer=user, source=ANNOTATOR, **where)
    skipped = ReviewSkip.objects.filter(reviewer=user, **where)
    if current is not None:
        own_at = [
            at
            for at in (
                decided.filter(candidate=current, round=rnd).values_list("updated_at", flat=True).first(),
                skipped.filter(candidate=current, round=rnd).values_list("created_at", flat=True).first(),
            )
            if at is not None
        ]
        decided = decided.exclude(candidate=current, round=rnd)
        skipped = skipped.exclude(candidate=current, round=rnd)
        if own_at:
            decided = decided.filter(updated_at__lt=max(own_at))
            skipped = skipped.filter(created_at__lt=max(own_at))
    last = [
        row
        for row in (
            decided.order_by("-updated_at", "-id")
            .values_list("updated_at", "candidate_id", "round_id", "round__number")
            .first(),
            skipped.order_by("-created_at", "-id")
            .values_list("created_at", "candidate_id", "round_id", "round__number")
            .first(),
        )
        if row is not None
    ]
    return max(last)[1:] if last else None
