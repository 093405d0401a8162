"""Agreement figures of a project, computed from the stored ReviewDecision and LikertRating rows.

Everything on the dashboard, in the CSV/JSON downloads and in ``manage.py agreement`` comes from
``compute_report`` (the pure ``annotation.agreement.domain.report``): one place, so the three always show
the same numbers. Results are cached under a key that is a digest of the rows they are computed from, so any insert, save, delete or bulk update (which
bypasses signals) changes the key and the next read misses; nothing is typed in or invalidated by hand,
and no signal wiring can be forgotten. Downloads and the command compute on a miss (``project_report``);
the pages only read the cache (``cached_report``) and leave computing to the refresh task
(``annotation.agreement.refresh``), which fills the cache for every scope in ``dashboard_scopes``.

The units and sources the figures count are described in ``annotation.agreement.domain.report``.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max
from django.utils import timezone

from annotation.agreement.domain import spans as span_stats
from annotation.agreement.domain.report import (  # noqa: F401  (the names the views, the command and the tests read here)
    ALL,
    DIMENSIONS,
    LENIENCY_LIMIT,
    LENIENCY_MIN_ITEMS,
    OUTLIER_RULES,
    PRIVATE_TABLES,
    PUBLIC_TABLES,
    TABLE_TITLES,
    TABLES,
    DecisionRow,
    RatingRow,
    compute_report,
    own_agreement_table,
)
from annotation.models import LikertRating, ReviewDecision, SpanItem, SpanTask
from annotation.review import changes
from annotation.review import selectors as review_selectors
from annotation.spans.selectors import completed_annotations
from core import access
from core.models import Profile, Project, ReviewerAssignment


def bootstrap_options() -> dict:
    return {
        "resamples": int(getattr(settings, "AGREEMENT_BOOTSTRAP_RESAMPLES", 1000)),
        "seed": int(getattr(settings, "AGREEMENT_BOOTSTRAP_SEED", 0)),
        "confidence": float(getattr(settings, "AGREEMENT_CONFIDENCE", 0.95)),
    }


# ---- loading -------------------------------------------------------------------------------------


def _of_languages(rows, language: str, languages: frozenset[str] | None):
    """``rows`` whose ``language`` (a lookup path to a language code) is one of ``languages`` (None: all)."""
    return rows if languages is None else rows.filter(**{f"{language}__in": languages})


def _decision_rows(project: Project, languages: frozenset[str] | None) -> list[DecisionRow]:
    qs = _of_languages(
        ReviewDecision.objects.filter(candidate__segment__project=project),
        "candidate__segment__direction__target__code",
        languages,
    )
    values = qs.values_list(
        "candidate_id",
        "candidate__segment__direction__target__code",
        "candidate__error_type",
        "candidate__is_gold",
        "candidate__gold_answer",
        "reviewer_id",
        "reviewer__username",
        "round__number",
        "decision",
        "source",
        "time_spent_ms",
    ).order_by("candidate_id", "id")
    return [
        DecisionRow(c, lang, et, gold, ga or "", rid, rname or "", rnum or 1, d, src, t)
        for c, lang, et, gold, ga, rid, rname, rnum, d, src, t in values
    ]


def own_agreement(user, project: Project, languages: frozenset[str] | None) -> list[dict]:
    """The user's agreement with each other reviewer of the units she decided (her languages of the project),
    the others anonymised (``report.own_agreement_table``). Reads her decisions' candidates only: bounded by
    her own work, so the page computes it on the spot."""
    mine = ReviewDecision.objects.filter(
        candidate__segment__project=project,
        reviewer=user,
        source=ReviewDecision.Source.ANNOTATOR,
        candidate__is_gold=False,
    )
    mine = _of_languages(mine, "candidate__segment__direction__target__code", languages)
    values = (
        ReviewDecision.objects.filter(
            candidate__in=mine.values("candidate_id"), source=ReviewDecision.Source.ANNOTATOR, reviewer__isnull=False
        )
        .values_list(
            "candidate_id", "candidate__segment__direction__target__code", "reviewer_id", "round__number", "decision"
        )
        .order_by("candidate_id", "id")
    )
    rows = [
        DecisionRow(c, lang, "", False, "", rid, "", rnum or 1, d, ReviewDecision.Source.ANNOTATOR, None)
        for c, lang, rid, rnum, d in values
    ]
    return own_agreement_table(rows, user.pk, bootstrap_options())


def _rating_rows(project: Project, languages: frozenset[str] | None) -> list[RatingRow]:
    qs = _of_languages(LikertRating.objects.filter(item__project=project), "item__direction__target__code", languages)
    values = qs.values_list(
        "item_id",
        "item__kind",
        "item__direction__target__code",
        "item__external_id",
        "rater_id",
        "rater__username",
        *DIMENSIONS,
        "time_spent_ms",
    ).order_by("item_id", "rater_id")
    return [
        RatingRow(v[0], v[1], v[2], v[3] or "", v[4], v[5], tuple(v[6 : 6 + len(DIMENSIONS)]), v[-1]) for v in values
    ]


# ---- the report ----------------------------------------------------------------------------------


def _digest(
    project: Project,
    langs: frozenset[str] | None,
    private: bool,
    options: dict,
    decisions: list[DecisionRow],
    ratings: list[RatingRow],
) -> str:
    # The key is a digest of the very rows the figures come from, so a cached report can never be stale:
    # reading the rows is cheap, the bootstrap is what the cache saves. v2: entries are {report, computed_at}.
    return (
        "agreement:v2:"
        + hashlib.sha256(
            repr(
                (
                    project.pk,
                    sorted(langs) if langs is not None else None,
                    private,
                    sorted(options.items()),
                    decisions,
                    ratings,
                )
            ).encode()
        ).hexdigest()
    )


def _inputs(
    project: Project, languages: Iterable[str] | None, private: bool
) -> tuple[str, list[DecisionRow], list[RatingRow], dict]:
    langs = frozenset(languages) if languages is not None else None
    options = bootstrap_options()
    decisions, ratings = _decision_rows(project, langs), _rating_rows(project, langs)
    return _digest(project, langs, private, options, decisions, ratings), decisions, ratings, options


def _latest_key(project: Project, langs: frozenset[str] | None, private: bool) -> str:
    """Where the key of the scope's most recently computed report is kept: what a page shows, marked as of
    its time, while the report of the current rows is being computed."""
    scope = "all" if langs is None else ",".join(sorted(langs))
    return f"agreement:latest:v2:{project.pk}:{scope}:{int(private)}"


def _cache_seconds() -> int:
    return int(getattr(settings, "AGREEMENT_CACHE_SECONDS", 24 * 3600))


def _store(project: Project, langs: frozenset[str] | None, private: bool, key: str, entry: dict) -> None:
    """Keep ``entry`` (report, computed_at, and the change ``token``, ``options`` and ``rows`` it was
    computed over) under its digest ``key`` and as the scope's latest."""
    timeout = _cache_seconds()
    cache.set(key, entry, timeout=timeout)
    cache.set(_latest_key(project, langs, private), key, timeout=timeout)


def _entry(report: dict, token: tuple | None, options: dict, rows: int) -> dict:
    return {"report": report, "computed_at": timezone.now(), "token": token, "options": options, "rows": rows}


def report_cache_key(project: Project, *, languages: Iterable[str] | None = None, private: bool = True) -> str:
    """The cache key ``project_report`` uses for these arguments over the rows stored now."""
    return _inputs(project, languages, private)[0]


def project_report(
    project: Project, *, languages: Iterable[str] | None = None, private: bool = True, use_cache: bool = True
) -> dict[str, list[dict]]:
    """Every agreement table of ``project``: ``{table name: [row dict, …]}``, computed now on a cache miss.

    ``languages`` restricts to those target languages (an annotator's view); ``private=False`` leaves out
    the tables that name reviewers. Cached under a digest of the input rows."""
    token = changes.token(project.pk)  # before the rows: a write made meanwhile leaves the entry stale, not wrong
    key, decisions, ratings, options = _inputs(project, languages, private)
    if use_cache:
        cached = cache.get(key)
        if cached is not None:
            return cached["report"]
    report = compute_report(decisions, ratings, private=private, **options)
    if use_cache:
        langs = frozenset(languages) if languages is not None else None
        _store(project, langs, private, key, _entry(report, token, options, len(decisions) + len(ratings)))
    return report


@dataclass(frozen=True)
class CachedReport:
    """What the cache holds for a scope: the report of the rows stored now (``fresh``), else the last one
    computed (stale, as of ``computed_at``), else nothing (``report is None``)."""

    key: str | None  # the key of the current rows' report (None: not read, the change log answered)
    report: dict[str, list[dict]] | None
    computed_at: datetime | None
    fresh: bool
    project: Project | None = field(default=None, compare=False, repr=False)  # where the change log answered
    scope: Scope | None = field(default=None, compare=False, repr=False)

    def again(self) -> CachedReport:
        """Look again for the current rows' report (a refresh that ran in-process may have stored it)."""
        if self.key is None:
            return cached_report(self.project, self.scope) if self.project is not None else self
        entry = cache.get(self.key)
        return CachedReport(self.key, entry["report"], entry["computed_at"], True) if entry else self


def cached_report(project: Project, scope: Scope) -> CachedReport:
    """The scope's report from the cache only; never computes (that is the refresh task's job).

    Whether the cached report is that of the rows stored now: where the database keeps the review change
    log (PostgreSQL), the log's token answers (a few rows read), and a stale report of a project above
    ``REVIEW_FIGURES_LIVE_LIMIT`` rows is shown as of its time without reading the rows (a page that asks
    for a refresh without workers runs it in its request and looks ``again``); otherwise (SQLite, or a
    smaller project whose log moved) the page reads the rows and compares their digest (exact, linear)."""
    token = changes.token(project.pk)
    if token is not None:
        latest = cache.get(_latest_key(project, scope.languages, scope.private))
        entry = cache.get(latest) if latest else None
        if entry is None:
            return CachedReport(None, None, None, False, project, scope)  # never computed (or evicted)
        current = entry.get("token") == token and entry.get("options") == bootstrap_options()
        if current or entry.get("rows", 0) >= review_selectors.figures_live_limit():
            return CachedReport(None, entry["report"], entry["computed_at"], current, project, scope)
    key = _inputs(project, scope.languages, scope.private)[0]
    entry = cache.get(key)
    if entry is not None:
        return CachedReport(key, entry["report"], entry["computed_at"], True)
    latest = cache.get(_latest_key(project, scope.languages, scope.private))
    entry = cache.get(latest) if latest else None
    if entry is not None:
        return CachedReport(key, entry["report"], entry["computed_at"], False)
    return CachedReport(key, None, None, False)


def warm_reports(
    project: Project,
    scopes: Iterable[Scope],
    progress: Callable[[Scope, bool], None] | None = None,
    *,
    token: tuple | None = None,
) -> tuple[int, int]:
    """Compute and cache the report of each scope whose current rows have none. Returns (computed, hits).

    The rows are read once and narrowed per scope in Python: the same rows in the same order as
    ``_inputs`` reads for that scope, hence the same keys as the pages and ``project_report`` use."""
    options = bootstrap_options()
    token = changes.token(project.pk) if token is None else token  # before the rows (see changes.token)
    all_decisions, all_ratings = _decision_rows(project, None), _rating_rows(project, None)
    computed = hits = 0
    for scope in scopes:
        langs = scope.languages
        decisions = all_decisions if langs is None else [d for d in all_decisions if d.language in langs]
        ratings = all_ratings if langs is None else [r for r in all_ratings if r.language in langs]
        key = _digest(project, langs, scope.private, options, decisions, ratings)
        rows = len(decisions) + len(ratings)
        entry = cache.get(key)
        hit = entry is not None
        if hit:  # the same rows again (a change undone, or only other scopes changed): now current for this token
            hits += 1
            _store(project, langs, scope.private, key, {**entry, "token": token, "options": options, "rows": rows})
        else:
            _store(
                project,
                langs,
                scope.private,
                key,
                _entry(compute_report(decisions, ratings, private=scope.private, **options), token, options, rows),
            )
            computed += 1
        if progress is not None:
            progress(scope, not hit)
    return computed, hits


@dataclass(frozen=True)
class Scope:
    """What one user may see of a project's agreement: all languages (``None``) or some, and whether the
    tables naming reviewers are included."""

    languages: frozenset[str] | None
    private: bool

    @property
    def tables(self) -> tuple[str, ...]:
        return TABLES if self.private else PUBLIC_TABLES


def scope_for(user, project: Project) -> Scope | None:
    """Admins see everything. Annotators (and viewers) see aggregates over the project's languages that are
    assigned to them, without per-reviewer tables; ``None`` when they have no language of the project."""
    if access.is_admin(user):
        return Scope(None, True)
    mine = set(access.allowed_languages(user, project).values_list("code", flat=True))
    theirs = set(project.directions.values_list("target__code", flat=True))
    shared = frozenset(mine & theirs)
    return Scope(shared, False) if shared else None


def report_for(project: Project, scope: Scope) -> dict[str, list[dict]]:
    return project_report(project, languages=scope.languages, private=scope.private)


def dashboard_scopes(project: Project) -> list[Scope]:
    """Every scope ``scope_for`` gives someone for this project now: the admins' (all languages, private)
    and one per distinct set of the project's languages assigned to an active non-admin. The refresh task
    computes these, so whoever opens the dashboard finds their report cached."""
    targets = set(project.directions.values_list("target__code", flat=True))
    # Mirrors core.access.is_admin (role admin, staff or superuser): admins get the all-languages scope.
    others = Profile.objects.filter(user__is_active=True, user__is_staff=False, user__is_superuser=False).exclude(
        role=Profile.Role.ADMIN
    )
    per_user: dict[int, set[str]] = defaultdict(set)
    # scope_for's languages (access.allowed_languages in this project): once the project assigns anyone, an
    # annotator's are her assigned targets here; a viewer's, and everyone's in a project that assigns nobody,
    # are the account's languages
    assigning = ReviewerAssignment.objects.filter(project=project).exists()
    by_language = others.exclude(role=Profile.Role.ANNOTATOR) if assigning else others
    languages = Profile.languages.through.objects.filter(profile__in=by_language, language__code__in=targets)
    for user_id, code in languages.values_list("profile__user_id", "language__code"):
        per_user[user_id].add(code)
    assigned = ReviewerAssignment.objects.filter(project=project, user__profile__in=others)
    for user_id, code in assigned.values_list("user_id", "direction__target__code"):
        per_user[user_id].add(code)
    sets = {frozenset(codes) for codes in per_user.values()}
    return [Scope(None, True), *(Scope(s, False) for s in sorted(sets, key=sorted))]


# ---- error spans (ESA, MQM) ------------------------------------------------------------------------------

SPAN_STATISTICS = (
    ("character_f1", "Character F1 between annotators (any severity)"),
    ("character_f1_severity", "Character F1 between annotators (same severity)"),
    ("character_alpha", "Krippendorff's α on character labels (none, minor, major, critical; nominal)"),
    ("score_alpha", "Krippendorff's α on the scores (interval)"),
)
INJECTED_STATISTICS = (
    ("found", "Injected errors found (≥ 1 character marked)"),
    ("recall", "Character recall of the injected spans"),
    ("precision", "Character precision against the injected spans"),
    ("f1", "Character F1 against the injected spans"),
)


def span_inputs(
    task: SpanTask, languages: frozenset[str] | None = None
) -> dict[str, tuple[list[span_stats.Item], list[span_stats.Annotation]]]:
    """Per direction code, the task's regular items and their completed annotations (attention items and
    excluded annotators left out) as the pure span statistics take them."""
    items = SpanItem.objects.filter(task=task, is_attention=False).select_related("direction", "pseudo_translation")
    if languages is not None:
        items = items.filter(direction__target__code__in=languages)
    out: dict[str, tuple[list, list]] = {}
    code_of = {}
    for it in items.only(
        "pk", "kind", "translation", "source", "injected_spans", "direction__code", "pseudo_translation__level"
    ):
        # a pseudo translation's injected spans are known (none for a reference); a candidate's when the room
        # could place its edit
        known = it.kind == "pseudo_translation" or (it.kind == "candidate" and bool(it.injected_spans))
        errors = it.pseudo_translation.level if it.pseudo_translation_id else (1 if it.kind == "candidate" else None)
        item = span_stats.Item(
            it.pk,
            len(it.translation),
            len(it.source),
            [tuple(s) for s in it.injected_spans] if known else None,
            errors,
        )
        out.setdefault(it.direction.code, ([], []))[0].append(item)
        code_of[it.pk] = it.direction.code
    done = completed_annotations(task, attention=False).filter(item_id__in=list(code_of)).prefetch_related("spans")
    for a in done.only("pk", "item_id", "annotator_id", "score"):
        spans = [span_stats.Span(s.start, s.end, s.severity, s.side) for s in a.spans.all()]
        out[code_of[a.item_id]][1].append(span_stats.Annotation(a.item_id, a.annotator_id, spans, a.score))
    return dict(sorted(out.items()))


def span_agreement_key(task: SpanTask, languages: frozenset[str] | None = None) -> str:
    """The cache key of a task's span figures: a digest of the annotations they come from (count, last change,
    spans), the scope and the bootstrap settings, so a submission, an edit or an exclusion changes it."""
    done = completed_annotations(task, attention=False)
    marks = done.aggregate(n=Count("pk", distinct=True), last=Max("updated_at"), spans=Count("spans", distinct=True))
    scope = sorted(languages) if languages is not None else "*"
    token = f"{task.pk}:{scope}:{marks}:{sorted(bootstrap_options().items())}"
    return "span-agreement:" + hashlib.sha256(token.encode()).hexdigest()


def cached_span_agreement(task: SpanTask, languages: frozenset[str] | None = None) -> list[dict] | None:
    """What the cache holds for the current annotations (None: not computed yet); the page reads only this."""
    return cache.get(span_agreement_key(task, languages))


def span_agreement(task: SpanTask, languages: frozenset[str] | None = None) -> list[dict]:
    """Per direction, every span statistic with its bootstrap interval (``span_stats.report``), computed on a
    miss and cached (``span_agreement_key``). The refresh task calls it; a WMT-size direction takes seconds
    (``perf/bench_span_agreement.py``)."""
    key = span_agreement_key(task, languages)
    cached = cache.get(key)
    if cached is not None:
        return cached
    options = bootstrap_options()
    result = [
        {"direction": code, **span_stats.report(items, annotations, **options)}
        for code, (items, annotations) in span_inputs(task, languages).items()
    ]
    cache.set(key, result, _cache_seconds())
    return result
