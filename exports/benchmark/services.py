"""Write operations of the benchmark stage: merging the pool into pseudo translations (SPEC §6).

Thin over the pure ``exports.benchmark.domain`` (merging); this module only reads and writes the database.
Starting a build on the worker is ``exports.benchmark.tasks.start_build``.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from core import bulk
from core.domain.units import Edit, split_units
from core.models import GoldSegment, Project
from exports.benchmark import domain as merging
from exports.benchmark import selectors
from exports.models import BenchmarkBuild, MergedSegment, PseudoTranslation
from injection.models import Candidate

Progress = Callable[[int, int], None]  # (done, total)

EXCLUSION_PREFIX = "merge: cannot be placed: "
_WAS_ACCEPTED = re.compile(r" \(was accepted(?:: (?P<reason>.*))?\)$", re.S)
BULK_BATCH = 2000


def pool_queryset(project: Project):
    """The filtered pool (SPEC glossary): accepted MQM candidates, never planted gold items."""
    return Candidate.objects.filter(
        segment__project=project, status=Candidate.Status.ACCEPTED, kind=Candidate.Kind.MQM, is_gold=False
    )


def _merge_candidates(project: Project):
    """What a build places: the pool, and the candidates an earlier build excluded as unplaceable (accepted
    by the reviewers; placing is recomputed every build, so one that can be placed now returns to the pool)."""
    return _placeable_states(Candidate.objects.filter(segment__project=project, kind=Candidate.Kind.MQM, is_gold=False))


def _placeable_states(candidates):
    """Accepted, or excluded by a merge (a candidate whose status changed meanwhile is left alone)."""
    return candidates.filter(
        Q(status=Candidate.Status.ACCEPTED) | Q(status=Candidate.Status.EXCLUDED, status_reason__startswith=EXCLUSION_PREFIX)
    )


def candidate_label(error_type: str, position: str) -> str:
    return f"{error_type}.{position}"


@dataclass
class BuildResult:
    segments: int = 0
    rebuilt: int = 0
    unchanged: int = 0
    pseudo_created: int = 0
    pseudo_deleted: int = 0
    excluded: list[tuple[int, str]] = field(default_factory=list)  # (candidate id, reason)
    transplanted: list[tuple[int, str]] = field(default_factory=list)  # (candidate id, drift), placed with the flag
    restored: int = 0  # candidates excluded by an earlier build that are placed now
    counts: dict = field(default_factory=dict)


def _fingerprint(reference: str, language: str, max_errors: int, placed: list[merging.PoolCandidate]) -> str:
    # The drift only where there is one: the fingerprints of gold pairs without transplants stay as they were.
    payload = [
        reference,
        language,
        max_errors,
        [(c.id, c.label, c.error_type, c.edit.start, c.edit.end, list(c.edit.replacement), *([c.drift] if c.drift else [])) for c in placed],
    ]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def _pool_by_segment(
    project: Project, direction: str | None = None, state: dict[int, tuple[str, bool]] | None = None
) -> dict[int, list[merging.PoolCandidate]]:
    """The candidates to place, per gold pair (of one direction when given); ``state`` (when given) receives
    each one's (status, whether it carries the ``transplanted`` flag)."""
    queryset = _merge_candidates(project)
    if direction is not None:
        queryset = queryset.filter(segment__direction__code=direction)
    rows = queryset.values_list(
        "id", "segment_id", "error_type", "position", "span_start", "span_end", "edit_text", "text", "segment__direction__target__code",
        "status", "flags",
    )
    by_segment: dict[int, list[tuple]] = defaultdict(list)
    for row in rows:
        by_segment[row[1]].append(row[:9])
        if state is not None:
            state[row[0]] = (row[9], merging.TRANSPLANTED in (row[10] or []))
    pools: dict[int, list[merging.PoolCandidate]] = {}
    for segment_id, cand_rows in by_segment.items():
        labels = [candidate_label(r[2], r[3]) for r in cand_rows]
        seen = defaultdict(int)
        for label in labels:
            seen[label] += 1
        pool = []
        for row, label in zip(cand_rows, labels):
            cid, _, error_type, _, start, end, edit_text, text, language = row
            if seen[label] > 1:  # two runs produced the same (type, position): keep names unique
                label = f"{label}#{cid}"
            edit = Edit(start, end, tuple(split_units(edit_text, language)))
            pool.append(merging.PoolCandidate(id=cid, error_type=error_type, edit=edit, label=label, text=text))
        pools[segment_id] = pool
    return pools


def build_benchmark(project: Project, *, progress: Progress | None = None, build: BenchmarkBuild | None = None, force: bool = False) -> BuildResult:
    """Merge the project's pool into pseudo translations, rebuilding only gold pairs whose placed pool
    (or reference, or max_errors) changed since the last build. Unplaceable candidates get status
    ``excluded`` with the reason; candidates placed by transplanting their edit (text outside the span
    drifts from the reference) get the ``transplanted`` flag; candidates an earlier build excluded are
    placed again when they can be. Each direction is committed on its own, so an interrupted build resumes
    where it stopped."""
    max_errors = project.max_errors
    # One direction at a time (its gold pairs, pool and merge states), so memory follows a direction,
    # not the project: 200 directions build in the memory of one.
    total = GoldSegment.objects.filter(project=project).count()
    direction_codes = sorted(
        set(GoldSegment.objects.filter(project=project).values_list("direction__code", flat=True).distinct())
    )
    candidate_state: dict[int, tuple[str, bool]] = {}
    result = BuildResult(segments=total)
    if build is not None:
        build.total_segments = total
        build.save(update_fields=["total_segments"])

    done = 0
    for direction_code in direction_codes:
        segments = list(
            GoldSegment.objects.filter(project=project, direction__code=direction_code)
            .select_related("direction__target")
            .order_by("id")
            .only("id", "reference", "external_id", "direction__code", "direction__target__code")
        )
        pools = _pool_by_segment(project, direction_code, candidate_state)
        states = dict(
            MergedSegment.objects.filter(segment__project=project, segment__direction__code=direction_code).values_list("segment_id", "fingerprint")
        )
        plans = []  # (segment, fingerprint, SegmentMerge)
        direction_exclusions: list[tuple[int, str]] = []
        direction_placed: list[tuple[int, str, int, int]] = []  # (candidate id, drift or '', placed span)
        for seg in segments:
            language = seg.direction.target.code
            placed, exclusions = merging.place_candidates(seg.reference, language, pools.get(seg.id, []))
            fingerprint = _fingerprint(seg.reference, language, max_errors, placed)
            direction_exclusions += [(exc.candidate_id, exc.reason) for exc in exclusions]
            direction_placed += [(c.id, c.drift, c.edit.start, c.edit.end) for c in placed]
            if not force and states.get(seg.id) == fingerprint:
                result.unchanged += 1  # same placed pool: its pseudo translations stand, no need to merge
                continue
            merged = merging.merge_segment(seg.reference, language, (), max_errors, placed=(placed, exclusions))
            plans.append((seg, fingerprint, merged))
        with transaction.atomic():
            # Two builds of one project take turns per direction (PostgreSQL row lock; SQLite serialises writes
            # anyway); each deletes a gold pair's rows before writing them, so the later one simply wins.
            Project.objects.select_for_update().filter(pk=project.pk).first()
            _exclude(direction_exclusions)
            rebuilt_ids = {c.id for _, _, merged in plans for c in merged.placed}
            result.restored += _mark_placed(direction_placed, candidate_state, rebuilt_ids)
            if plans:
                _write_direction(plans, result)
        result.excluded += direction_exclusions
        result.transplanted += [(cid, drift) for cid, drift, _, _ in direction_placed if drift]
        done += len(segments)
        if progress:
            progress(done, total)
        if build is not None:
            build.done_segments = done
            build.rebuilt_segments = result.rebuilt
            build.pseudo_created = result.pseudo_created
            build.save(update_fields=["done_segments", "rebuilt_segments", "pseudo_created"])
    result.counts = selectors.level_counts(project)
    return result


def _exclude(exclusions: list[tuple[int, str]]) -> None:
    """Unplaceable candidates: status ``excluded`` with the reason (and what their status said before), and
    no ``transplanted`` flag."""
    if not exclusions:
        return
    reasons = dict(exclusions)
    to_update = []
    for cand in _placeable_states(Candidate.objects.filter(id__in=reasons)).only("id", "status", "status_reason", "flags", "checks"):
        if cand.status == Candidate.Status.ACCEPTED:
            was = f" (was accepted: {cand.status_reason})" if cand.status_reason else " (was accepted)"
        else:  # excluded by an earlier build: keep what it was before, with today's reason
            match = _WAS_ACCEPTED.search(cand.status_reason)
            was = match.group(0) if match else " (was accepted)"
        reason = EXCLUSION_PREFIX + reasons[cand.id] + was
        changed = _set_transplanted(cand, "", None)
        if (cand.status, cand.status_reason) != (Candidate.Status.EXCLUDED, reason) or changed:
            cand.status, cand.status_reason = Candidate.Status.EXCLUDED, reason
            to_update.append(cand)
    Candidate.objects.bulk_update(to_update, ["status", "status_reason", "flags", "checks"], batch_size=BULK_BATCH)


def _mark_placed(placed: list[tuple[int, str, int, int]], state: dict[int, tuple[str, bool]], rebuilt: set[int]) -> int:
    """Placed candidates: back to ``accepted`` when an earlier build had excluded them (with the reason
    their status had before), and the ``transplanted`` flag set (with the drift) exactly on those placed
    despite drift. ``state`` is each candidate's (status, has the flag) as read, ``rebuilt`` the candidates
    of the gold pairs merged again; only rows that may change are read again, only changed ones written.
    Returns how many came back into the pool."""
    # A flagged candidate whose drift or span changed is in a rebuilt gold pair (its fingerprint changed):
    # its flag is rewritten there; the flag's presence decides here.
    drifts = {
        cid: (drift, (start, end))
        for cid, drift, start, end in placed
        if state[cid][0] == Candidate.Status.EXCLUDED or bool(drift) != state[cid][1] or (drift and cid in rebuilt)
    }
    if not drifts:
        return 0
    to_update, restored = [], 0
    for cand in _placeable_states(Candidate.objects.filter(id__in=drifts)).only("id", "status", "status_reason", "flags", "checks"):
        changed = _set_transplanted(cand, *drifts[cand.id])
        if cand.status == Candidate.Status.EXCLUDED:
            match = _WAS_ACCEPTED.search(cand.status_reason)
            cand.status, cand.status_reason = Candidate.Status.ACCEPTED, (match.group("reason") or "") if match else ""
            restored += 1
            changed = True
        if changed:
            to_update.append(cand)
    Candidate.objects.bulk_update(to_update, ["status", "status_reason", "flags", "checks"], batch_size=BULK_BATCH)
    return restored


def _set_transplanted(cand: Candidate, drift: str, span: tuple[int, int] | None) -> bool:
    """Set (drift given) or clear the ``transplanted`` flag and its entry in ``checks`` (the drift, and the
    span the edit was placed at, in reference units); True when changed."""
    flag = merging.TRANSPLANTED
    flags = [f for f in (cand.flags or []) if f != flag] + ([flag] if drift else [])
    checks = {k: v for k, v in (cand.checks or {}).items() if k != flag}
    if drift:
        checks[flag] = {
            "passed": False,
            "detail": f"edit transplanted onto the reference at span [{span[0]}, {span[1]}); drift outside the span: {drift}",
            "span": list(span),
            "drift": drift,
        }
    if flags == (cand.flags or []) and checks == (cand.checks or {}):
        return False
    cand.flags, cand.checks = flags, checks
    return True


def _write_direction(plans, result: BuildResult) -> None:
    """Replace the pseudo translations of the planned gold pairs. Raw rows (``core.bulk.copy_rows``: COPY on
    PostgreSQL, ``executemany`` elsewhere) rather than ``bulk_create``: building ~250,000 model instances
    (rows and M2M links) costs most of the merge time otherwise; values are adapted with the backend's own
    operations, so SQLite and PostgreSQL both work."""
    segment_ids = [seg.id for seg, _, _ in plans]
    Through = PseudoTranslation.candidates.through
    for i in range(0, len(segment_ids), 500):
        chunk = segment_ids[i : i + 500]
        Through.objects.filter(pseudotranslation__segment_id__in=chunk).delete()  # fast delete: one statement
        # One DELETE without collecting rows: nothing but the M2M rows (gone above) points at a pseudo translation.
        result.pseudo_deleted += PseudoTranslation.objects.filter(segment_id__in=chunk)._raw_delete(PseudoTranslation.objects.db)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    rows: list[tuple] = []
    members: dict[tuple[int, str], tuple] = {}
    for seg, _, merged in plans:
        for p in merged.pseudo_translations:
            spans = [
                {
                    "candidate_id": s.candidate_id,
                    "label": s.label,
                    "error_type": s.error_type,
                    "ref_start": s.ref_start,
                    "ref_end": s.ref_end,
                    "mt_start": s.mt_start,
                    "mt_end": s.mt_end,
                    **({"flags": list(s.flags)} if s.flags else {}),
                }
                for s in p.spans
            ]
            key = p.key
            members[(seg.id, key)] = p.candidate_ids
            rows.append(
                (seg.id, p.level, key, p.text, p.marked_text, _json(list(p.error_types)), p.mqm_penalty, _json(spans), _json(list(p.flags)), now)
            )
    columns = ["segment_id", "level", "key", "text", "marked_text", "error_types", "mqm_penalty", "spans", "flags", "created_at"]
    bulk.copy_rows(PseudoTranslation._meta.db_table, columns, rows, batch_size=BULK_BATCH * 5)
    ids = {}
    for i in range(0, len(segment_ids), 500):
        for pk, sid, key in PseudoTranslation.objects.filter(segment_id__in=segment_ids[i : i + 500]).values_list("id", "segment_id", "key"):
            ids[(sid, key)] = pk
    links = [(ids[k], cid) for k, cids in members.items() for cid in cids]
    bulk.copy_rows(Through._meta.db_table, ["pseudotranslation_id", "candidate_id"], links, batch_size=BULK_BATCH * 10)
    states = [MergedSegment(segment_id=seg.id, fingerprint=fp, pseudo_count=len(m.pseudo_translations)) for seg, fp, m in plans]
    MergedSegment.objects.bulk_create(
        states, batch_size=BULK_BATCH, update_conflicts=True, unique_fields=["segment"], update_fields=["fingerprint", "pseudo_count", "built_at"]
    )
    result.rebuilt += len(plans)
    result.pseudo_created += len(rows)


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def run_build(build: BenchmarkBuild, progress: Progress | None = None, force: bool = False) -> BenchmarkBuild:
    """Run one recorded build (what the task and the command call): status, counts, failure reason."""
    build.status = BenchmarkBuild.Status.RUNNING
    build.error = ""
    build.save(update_fields=["status", "error"])
    try:
        result = build_benchmark(build.project, progress=progress, build=build, force=force)
    except Exception as exc:
        build.status = BenchmarkBuild.Status.FAILED
        build.error = f"{type(exc).__name__}: {exc}"
        build.finished_at = timezone.now()
        build.save(update_fields=["status", "error", "finished_at"])
        raise
    build.status = BenchmarkBuild.Status.DONE
    build.excluded = len({cid for cid, _ in result.excluded})
    build.transplanted = len({cid for cid, _ in result.transplanted})
    build.counts = result.counts
    build.done_segments = result.segments
    build.rebuilt_segments = result.rebuilt
    build.pseudo_created = result.pseudo_created
    build.finished_at = timezone.now()
    build.save(update_fields=["status", "excluded", "transplanted", "counts", "done_segments", "rebuilt_segments", "pseudo_created", "finished_at"])
    return build


def create_build(*, project: Project, user=None) -> BenchmarkBuild:
    """Record a build to run (``exports.benchmark.tasks.start_build`` hands it to the worker)."""
    return BenchmarkBuild.objects.create(project=project, created_by=user if getattr(user, "pk", None) else None)


def format_counts(counts: dict) -> list[str]:
    """The counts table as text lines (command output)."""
    if not counts:
        return []
    levels = sorted({int(k) for d in counts.values() for k in d["levels"]})
    lines = ["direction  pairs  " + "  ".join(f"{'k=' + str(k):>16}" for k in levels) + f"  {'total':>16}"]
    for direction in sorted(counts):
        row = counts[direction]
        cells = [f"{row['levels'][str(k)]['total']:>6} ({row['levels'][str(k)]['min_per_pair']:>2}–{row['levels'][str(k)]['max_per_pair']:>3})" for k in levels]
        lines.append(f"{direction:<9}  {row['gold_pairs']:>5}  " + "  ".join(f"{c:>16}" for c in cells) + f"  {row['total']:>6} ({row['min_per_pair']}–{row['max_per_pair']})")
    return lines
