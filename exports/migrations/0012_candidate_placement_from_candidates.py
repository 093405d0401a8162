"""Move what builds wrote into candidates to the build's own table, and give the candidates back their review
outcome.

Builds before this one wrote their outcome into ``injection.Candidate``: an unplaceable candidate got status
``excluded`` with the reason ``merge: cannot be placed: <reason> (was accepted[: <review reason>])``; a
transplanted one got the flag ``transplanted`` and a check of that name holding the span and the drift. Here
each becomes a ``CandidatePlacement`` row, and the candidate gets its status ``accepted`` and review reason
back, without the flag and the check. The prose is read this once, to convert the old rows; no code reads
it afterwards. Reversible: the backward step writes the old form again."""

import re

from django.db import migrations

EXCLUSION_PREFIX = "merge: cannot be placed: "
WAS_ACCEPTED = re.compile(r" \(was accepted(?:: (?P<reason>.*))?\)$", re.S)
TRANSPLANTED = "transplanted"
BATCH = 2000


def _without_transplant(candidate) -> None:
    candidate.flags = [f for f in candidate.flags or [] if f != TRANSPLANTED]
    candidate.checks = {k: v for k, v in (candidate.checks or {}).items() if k != TRANSPLANTED}


def _flush(Candidate, Placement, candidates: list, placements: list) -> None:
    Placement.objects.bulk_create(placements, batch_size=BATCH, ignore_conflicts=True)
    Candidate.objects.bulk_update(candidates, ["status", "status_reason", "flags", "checks"], batch_size=BATCH)
    candidates.clear()
    placements.clear()


def candidates_to_placements(apps, schema_editor) -> None:
    Candidate = apps.get_model("injection", "Candidate")
    Placement = apps.get_model("exports", "CandidatePlacement")
    candidates, placements = [], []
    excluded = Candidate.objects.filter(status="excluded", status_reason__startswith=EXCLUSION_PREFIX)
    for cand in (
        excluded.only("id", "status", "status_reason", "flags", "checks").order_by("id").iterator(chunk_size=BATCH)
    ):
        text = cand.status_reason[len(EXCLUSION_PREFIX) :]
        match = WAS_ACCEPTED.search(text)
        reason = text[: match.start()] if match else text
        placements.append(Placement(candidate_id=cand.id, outcome="excluded", reason=reason))
        cand.status, cand.status_reason = "accepted", (match.group("reason") or "") if match else ""
        _without_transplant(cand)
        candidates.append(cand)
        if len(candidates) >= BATCH:
            _flush(Candidate, Placement, candidates, placements)
    _flush(Candidate, Placement, candidates, placements)
    # the flagged candidates only (the candidate_flagged partial index); the flag itself is matched here in
    # Python, where SQLite's JSON text match would ignore case
    flagged = Candidate.objects.exclude(flags=[]).exclude(status="excluded")
    for cand in (
        flagged.only("id", "flags", "checks", "status", "status_reason").order_by("id").iterator(chunk_size=BATCH)
    ):
        if TRANSPLANTED not in (cand.flags or []):
            continue
        check = (cand.checks or {}).get(TRANSPLANTED) or {}
        span = check.get("span") or [None, None]
        placements.append(
            Placement(
                candidate_id=cand.id,
                outcome="transplanted",
                drift=check.get("drift", ""),
                span_start=span[0],
                span_end=span[1],
            )
        )
        _without_transplant(cand)
        candidates.append(cand)
        if len(candidates) >= BATCH:
            _flush(Candidate, Placement, candidates, placements)
    _flush(Candidate, Placement, candidates, placements)


def placements_to_candidates(apps, schema_editor) -> None:
    Candidate = apps.get_model("injection", "Candidate")
    Placement = apps.get_model("exports", "CandidatePlacement")
    candidates = []
    rows = Placement.objects.select_related("candidate").order_by("candidate_id")
    for row in rows.iterator(chunk_size=BATCH):
        cand = row.candidate
        if row.outcome == "excluded":
            was = f" (was accepted: {cand.status_reason})" if cand.status_reason else " (was accepted)"
            cand.status, cand.status_reason = "excluded", EXCLUSION_PREFIX + row.reason + was
        else:
            cand.flags = [*[f for f in cand.flags or [] if f != TRANSPLANTED], TRANSPLANTED]
            cand.checks = {
                **(cand.checks or {}),
                TRANSPLANTED: {
                    "passed": False,
                    "detail": f"edit transplanted onto the reference at span [{row.span_start}, {row.span_end}); "
                    f"drift outside the span: {row.drift}",
                    "span": [row.span_start, row.span_end],
                    "drift": row.drift,
                },
            }
        candidates.append(cand)
        if len(candidates) >= BATCH:
            Candidate.objects.bulk_update(candidates, ["status", "status_reason", "flags", "checks"], batch_size=BATCH)
            candidates.clear()
    Candidate.objects.bulk_update(candidates, ["status", "status_reason", "flags", "checks"], batch_size=BATCH)
    Placement.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("exports", "0011_candidate_placement"),
    ]

    operations = [
        migrations.RunPython(candidates_to_placements, placements_to_candidates, elidable=False),
    ]
