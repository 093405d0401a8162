"""Gold items: candidates with a known answer, planted among the real ones to measure each annotator.

Two kinds, both obvious to a careful native speaker (issue 5):

- *reject*: the unchanged reference offered as a candidate of some error type — there is no error, so it
  must be rejected;
- *accept*: a clear error — a copy of a candidate that the project already accepted and that passed every
  automatic check, or, where there is none, an obvious Omission built with ``core.domain.units`` (the whole second half of the reference
  removed).

Gold candidates are ordinary ``injection.Candidate`` rows with ``is_gold=True`` and ``gold_answer`` in one
dedicated InjectionRun per project (``backend='gold'``), so the review queue serves them like any other
candidate; merging and agreement leave them out. Planting is idempotent: it tops each direction up to the
requested rate and never duplicates.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, F, Q

from annotation.common.audit import audit_record
from annotation.models import ReviewDecision
from core.domain.units import Edit, apply_edit, half_boundary, join_units, split_units
from core.models import GoldSegment, Project
from injection.models import Candidate, InjectionRun
from injection.services import candidate_objects_create, run_ensure, run_totals_set

GOLD_RUN_NAME = "gold"
GOLD_BACKEND = "gold"
ACCEPT, REJECT = "accept", "reject"
DEFAULT_ERROR_TYPES = ("Addition", "Omission", "Mistranslation", "Untranslated")
MAX_RATE = 0.5
MIN_OMISSION_UNITS = 4  # a reference shorter than this gives no unmistakable omission


@dataclass
class PlantResult:
    planted: Counter = field(default_factory=Counter)  # (direction, answer) → new gold items
    skipped: list[str] = field(default_factory=list)  # directions that could not be topped up, and why

    @property
    def total(self) -> int:
        return sum(self.planted.values())


def gold_run(project: Project, created_by=None) -> InjectionRun:
    return run_ensure(
        project=project,
        name=GOLD_RUN_NAME,
        defaults={
            "backend": GOLD_BACKEND,
            "status": InjectionRun.Status.DONE,
            "created_by": created_by,
            "parameters": {"purpose": "quality-control items with known answers"},
        },
    )


def plant_gold(
    project: Project, rate: float, *, seed: int = 0, directions: list[str] | None = None, created_by=None
) -> PlantResult:
    """Top each direction up to ``round(rate × real candidates)`` gold items, alternating reject and accept
    items (reject first). ``rate`` is gold items per real candidate, in (0, 0.5]. Atomic."""
    if not isinstance(rate, (int, float)) or math.isnan(rate) or not 0 < rate <= MAX_RATE:
        raise ValueError(f"rate: must be a number in (0, {MAX_RATE}], got {rate!r}")
    result = PlantResult()
    with transaction.atomic():
        run = gold_run(project, created_by)
        wanted = directions or list(project.directions.values_list("code", flat=True))
        for direction in project.directions.filter(code__in=wanted).select_related("target"):
            _plant_direction(project, run, direction, rate, seed, result)
        run_totals_set(run=run)
        if result.total:
            audit_record(
                actor=created_by,
                action="plant_gold",
                obj=run,
                new={
                    "rate": rate,
                    "seed": seed,
                    "planted": {f"{d}/{a}": n for (d, a), n in sorted(result.planted.items())},
                },
            )
    return result


def _plant_direction(project, run, direction, rate, seed, result: PlantResult) -> None:
    language = direction.target.code
    real = Candidate.objects.filter(segment__project=project, segment__direction=direction, is_gold=False)
    existing = list(
        run.candidates.filter(segment__direction=direction).values_list(
            "segment_id", "kind", "error_type", "position", "gold_answer"
        )
    )
    target = round(rate * real.count())
    missing = target - len(existing)
    if missing <= 0:
        return
    rng = random.Random(f"{seed}:{project.pk}:{direction.code}")
    taken = {(s, k, e, p) for s, k, e, p, _ in existing}
    answers = Counter(a for *_, a in existing)
    types = list(project.error_types) or list(DEFAULT_ERROR_TYPES)
    segments = list(GoldSegment.objects.filter(project=project, direction=direction).order_by("id"))
    rng.shuffle(segments)
    accepted = list(
        real.filter(status=Candidate.Status.ACCEPTED, kind=Candidate.Kind.MQM).select_related("segment").order_by("id")
    )
    rng.shuffle(accepted)
    new: list[Candidate] = []
    for _ in range(missing):
        answer = REJECT if answers[REJECT] <= answers[ACCEPT] else ACCEPT
        gold = (
            _reject_item(run, segments, types, language, rng, taken)
            if answer == REJECT
            else _accept_item(run, accepted, segments, language, taken)
        )
        if gold is None:
            result.skipped.append(f"{direction.code}: no segment left for another {answer} gold item")
            break
        taken.add((gold.segment_id, gold.kind, gold.error_type, gold.position))
        answers[answer] += 1
        result.planted[(direction.code, answer)] += 1
        new.append(gold)
    candidate_objects_create(candidates=new)


def _gold(
    run, segment, *, answer: str, error_type: str, position: str, text: str, edit: Edit, language: str, origin: str
) -> Candidate:
    return Candidate(
        run=run,
        segment=segment,
        kind=Candidate.Kind.MQM,
        error_type=error_type,
        position=position,
        severity=Candidate.Severity.MAJOR,
        text=text,
        span_start=edit.start,
        span_end=edit.end,
        edit_text=join_units(edit.replacement, language),
        backend=GOLD_BACKEND,
        is_gold=True,
        gold_answer=answer,
        external_id=f"gold:{origin}",
        status_reason=f"gold item ({answer}): {origin}",
    )


def _reject_item(run, segments, types, language, rng, taken) -> Candidate | None:
    for segment in segments:
        error_type, position = rng.choice(types), rng.choice([Candidate.Position.HEAD, Candidate.Position.END])
        if (segment.id, Candidate.Kind.MQM, error_type, position) in taken:
            continue
        at = 0 if position == Candidate.Position.HEAD else half_boundary(segment.reference, language)
        return _gold(
            run,
            segment,
            answer=REJECT,
            error_type=error_type,
            position=position,
            text=segment.reference,
            edit=Edit(at, at, ()),
            language=language,
            origin="unchanged reference",
        )
    return None


def _accept_item(run, accepted, segments, language, taken) -> Candidate | None:
    while accepted:
        c = accepted.pop()
        # Only clean candidates make unmistakable gold: none with a failed automatic check (e.g. text
        # changed outside the span), whose answer a careful reviewer could reasonably dispute.
        if c.flags or (c.segment_id, c.kind, c.error_type, c.position) in taken:
            continue
        replacement = tuple(split_units(c.edit_text, language))
        return _gold(
            run,
            c.segment,
            answer=ACCEPT,
            error_type=c.error_type,
            position=c.position,
            text=c.text,
            edit=Edit(c.span_start, c.span_end, replacement),
            language=language,
            origin=f"copy of accepted candidate {c.pk}",
        )
    for segment in segments:
        key = (segment.id, Candidate.Kind.MQM, "Omission", Candidate.Position.END)
        units = split_units(segment.reference, language)
        if key in taken or len(units) < MIN_OMISSION_UNITS:
            continue
        edit = Edit(half_boundary(segment.reference, language), len(units), ())
        return _gold(
            run,
            segment,
            answer=ACCEPT,
            error_type="Omission",
            position=Candidate.Position.END,
            text=apply_edit(segment.reference, edit, language),
            edit=edit,
            language=language,
            origin="second half omitted",
        )
    return None


def gold_overview(project: Project) -> list[dict]:
    """Per direction: gold items planted (by answer) and the decisions made on them, right and wrong."""
    rows = (
        Candidate.objects.filter(segment__project=project, is_gold=True)
        .values("segment__direction__code", "gold_answer")
        .annotate(
            n_items=Count("id", distinct=True),
            n_decisions=Count("decisions", filter=Q(decisions__source=ReviewDecision.Source.ANNOTATOR)),
            n_correct=Count(
                "decisions",
                filter=Q(decisions__source=ReviewDecision.Source.ANNOTATOR, decisions__decision=F("gold_answer")),
            ),
        )
        .order_by("segment__direction__code", "gold_answer")
    )
    return [
        {
            "direction": r["segment__direction__code"],
            "gold_answer": r["gold_answer"],
            "items": r["n_items"],
            "decisions": r["n_decisions"],
            "correct": r["n_correct"],
            "score": r["n_correct"] / r["n_decisions"] if r["n_decisions"] else None,
        }
        for r in rows
    ]
