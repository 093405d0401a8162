"""Which existing rows become span-annotation items: accepted candidates (one injected error each, the
strongest attention items) or a project's pseudo translations (k injected errors), with ESA-AI spans from a
chosen metric's stored spans (``MetricScore.spans``) of a release. Shared by ``manage.py make_span_items`` and
the span task's items page.

At the exports app's top, like ``exports/rating_items.py``: it reads pseudo translations and metric scores
(exports) and candidates (injection); the items are written by ``annotation.spans.services``."""

from __future__ import annotations

from annotation.models import SpanItem, SpanTask
from annotation.review import domain as review_rules
from annotation.spans import domain as span_rules
from annotation.spans import services as span_services
from core.domain.errors import Invalid
from exports.models import MetricScore, PseudoTranslation, Release
from injection.models import Candidate

ACCEPTED_CANDIDATES = "accepted-candidates"
PSEUDO_TRANSLATIONS = "pseudo-translations"
ORIGINS = (ACCEPTED_CANDIDATES, PSEUDO_TRANSLATIONS)
MAX_ITEMS = 100_000  # one call's items: a task is sampled, not a copy of the benchmark


class SpanSourceRejected(Invalid, ValueError):
    """The options name no valid set of rows; ``problems``: (option, text) pairs. Nothing was written."""

    code = "span_source_rejected"

    def __init__(self, problems: list[tuple[str, str]]):
        super().__init__("; ".join(f"{o}: {t}" for o, t in problems), problems[0][0] if problems else None)
        self.problems = problems


def _check(task: SpanTask, origin, direction_code, level, release, metric) -> Release | None:
    project = task.project
    problems: list[tuple[str, str]] = []
    if origin not in ORIGINS:
        problems.append(("from", f"{origin}: not one of {', '.join(ORIGINS)}"))
    directions = sorted(project.directions.values_list("code", flat=True))
    if direction_code and direction_code not in directions:
        problems.append(
            ("direction", f"{direction_code}: not a direction of project {project.name} ({', '.join(directions)})")
        )
    if level is not None and (origin != PSEUDO_TRANSLATIONS or not 0 <= level <= project.max_errors):
        problems.append(("level", f"{level}: pseudo translations only, levels 0 to {project.max_errors}"))
    found = None
    if release:
        found = Release.objects.filter(project=project, version=release).first()
        if found is None:
            problems.append(("release", f"{release}: no release of project {project.name} has this version"))
    if metric and not release:
        problems.append(("metric", "the metric's spans are read from a release: name the release too"))
    if found is not None and metric and not MetricScore.objects.filter(release=found, metric=metric).exists():
        problems.append(("metric", f"{metric}: release {release} holds no scores of this metric"))
    if problems:
        raise SpanSourceRejected(problems)
    return found


def make_span_items(
    task: SpanTask,
    origin: str,
    *,
    direction_code: str | None = None,
    level: int | None = None,
    limit: int | None = None,
    seed: int = 0,
    attention: bool = False,
    release: str | None = None,
    metric: str | None = None,
) -> int:
    """Add the rows ``origin`` names to ``task`` (a seeded sample of ``limit``); ``attention``: as attention
    items (accepted candidates only: their injected span is the known answer). Returns how many were made."""
    metric = metric or task.ai_metric or None
    found = _check(task, origin, direction_code, level, release, metric if release else None)
    if attention and origin != ACCEPTED_CANDIDATES:
        raise SpanSourceRejected([("attention", "attention items are made from accepted candidates")])
    rows = _source_rows(task.project, origin, direction_code, level)
    ids = list(rows.values_list("pk", flat=True)[: MAX_ITEMS * 10])
    ids = review_rules.sample_ids(ids, min(limit or MAX_ITEMS, MAX_ITEMS), seed)
    rows = rows.filter(pk__in=ids).select_related("segment__direction__target").order_by("pk")
    entries = [_entry(row, origin, attention) for row in rows]
    if found is not None and metric:
        _add_metric_spans(entries, found, metric)
    return span_services.span_items_add(task=task, entries=entries)


def _source_rows(project, origin: str, direction_code: str | None, level: int | None):
    if origin == ACCEPTED_CANDIDATES:
        rows = Candidate.objects.filter(segment__project=project, status=Candidate.Status.ACCEPTED, is_gold=False)
    else:
        rows = PseudoTranslation.objects.filter(segment__project=project)
        if level is not None:
            rows = rows.filter(level=level)
    if direction_code:
        rows = rows.filter(segment__direction__code=direction_code)
    return rows


def _entry(row, origin: str, attention: bool) -> dict:
    """The span item of one accepted candidate or pseudo translation, with its injected spans."""
    seg = row.segment
    lang = seg.direction.target.code
    if origin == ACCEPTED_CANDIDATES:
        span = span_rules.injected_char_span(seg.reference, row.text, lang)
        entry = {
            "kind": SpanItem.Kind.CANDIDATE,
            "candidate_id": row.pk,
            "injected_spans": [span] if span else [],
            "is_attention": attention and span is not None,
        }
    else:
        entry = {
            "kind": SpanItem.Kind.PSEUDO_TRANSLATION,
            "pseudo_translation_id": row.pk,
            "injected_spans": span_rules.marked_char_spans(row.marked_text, lang),
            "triplet_id": f"{seg.direction.code}/{seg.external_id}/"
            + ("+".join(s["label"] for s in row.spans) or "reference"),
        }
    return {
        **entry,
        "direction_id": seg.direction_id,
        "external_id": str(row.pk),
        "system": "attention" if entry.get("is_attention") else "",
        "source": seg.source,
        "reference": seg.reference,
        "translation": row.text,
    }


def _add_metric_spans(entries: list[dict], found, metric: str) -> None:
    """The spans ``metric`` marked on each pseudo translation in release ``found``, as its AI spans."""
    spans = dict(
        MetricScore.objects.filter(
            release=found, metric=metric, triplet_id__in=[e["triplet_id"] for e in entries if "triplet_id" in e]
        ).values_list("triplet_id", "spans")
    )
    for e in entries:
        ai = span_rules.metric_spans(spans.get(e.get("triplet_id")), len(e["translation"]))
        if ai:
            e["ai_spans"], e["ai_metric"] = ai, metric
