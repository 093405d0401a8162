"""Write operations of the benchmark stage: merging the pool into pseudo translations (SPEC §6).

Thin over the pure ``exports.benchmark.domain`` (merging); this module only reads and writes the database.
Starting a build on the worker is ``exports.benchmark.tasks.start_build``.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Max
from django.utils import timezone

from annotation.review import selectors as review_selectors
from core import bulk
from core.domain.directions import first_failure, with_entry
from core.domain.errors import Conflict
from core.domain.units import Edit, split_units
from core.models import GoldSegment, Project
from exports.benchmark import domain as merging
from exports.benchmark import selectors
from exports.models import BenchmarkBuild, CandidatePlacement, MergedSegment, PseudoTranslation

Progress = Callable[[int, int], None]  # (done, total)

BULK_BATCH = 2000


def _candidate_label(error_type: str, position: str) -> str:
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
    restored: int = 0  # candidates an earlier build excluded that are placed now
    counts: dict = field(default_factory=dict)
    build: BenchmarkBuild | None = None  # the recorded build this is the outcome of (``build_run``)

    def add(self, other: BuildResult) -> None:
        """Add one direction's outcome."""
        for attr in ("segments", "rebuilt", "unchanged", "pseudo_created", "pseudo_deleted", "restored"):
            setattr(self, attr, getattr(self, attr) + getattr(other, attr))
        self.excluded += other.excluded
        self.transplanted += other.transplanted


def _fingerprint(reference: str, language: str, max_errors: int, placed: list[merging.PoolCandidate]) -> str:
    # The drift only where there is one: the fingerprints of gold pairs without transplants stay as they were.
    payload = [
        reference,
        language,
        max_errors,
        [
            (
                c.id,
                c.label,
                c.error_type,
                c.edit.start,
                c.edit.end,
                list(c.edit.replacement),
                *([c.drift] if c.drift else []),
            )
            for c in placed
        ],
    ]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def _pool_by_segment(project: Project, direction_code: str) -> dict[int, list[merging.PoolCandidate]]:
    """The pool (``annotation.review.selectors.pool_candidates``) of one direction, per gold pair. Every
    pool candidate is placed again each build: one an earlier build excluded returns when it can be placed."""
    rows = (
        review_selectors.pool_candidates(project)
        .filter(segment__direction__code=direction_code)
        .values_list(
            "id",
            "segment_id",
            "error_type",
            "position",
            "span_start",
            "span_end",
            "edit_text",
            "text",
            "segment__direction__target__code",
        )
    )
    by_segment: dict[int, list[tuple]] = defaultdict(list)
    for row in rows:
        by_segment[row[1]].append(row)
    pools: dict[int, list[merging.PoolCandidate]] = {}
    for segment_id, cand_rows in by_segment.items():
        labels = [_candidate_label(r[2], r[3]) for r in cand_rows]
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


def _final_counts(project: Project) -> dict:
    """The counts a build ends with, kept for the pages (``selectors.current_level_counts``); the change
    log's rows that the build's own writes added are pruned first (to one new row: its token needs no more)."""
    selectors.CHANGES.prune(project.pk)
    return selectors.current_level_counts(project)


def build_directions_list(*, project: Project) -> list[str]:
    """The directions a build merges, in order (one unit of work each: a Celery task, a committed step)."""
    # ordered by the code alone: under GoldSegment's default ordering (project, direction, id) the DISTINCT
    # would run over those columns too, one row per gold pair instead of one per direction
    codes = _built_segments(project).order_by("direction__code").values_list("direction__code", flat=True)
    return list(codes.distinct())


def _built_segments(project: Project):
    # a retired direction is not built again; the releases already made from it keep their files
    return GoldSegment.objects.filter(project=project).exclude(direction__in=project.retired_directions.all())


def direction_merge(*, project: Project, direction_code: str, result: BuildResult, force: bool = False) -> int:
    """Merge one direction's pool (committed on its own; nothing in it depends on another direction's, so
    directions may run on different workers at once); adds to ``result``, returns its number of gold pairs."""
    max_errors = project.max_errors
    segments = list(
        GoldSegment.objects.filter(project=project, direction__code=direction_code)
        .select_related("direction__target")
        .order_by("id")
        .only("id", "reference", "external_id", "direction__code", "direction__target__code")
    )
    pools = _pool_by_segment(project, direction_code)
    states = dict(
        MergedSegment.objects.filter(segment__project=project, segment__direction__code=direction_code).values_list(
            "segment_id", "fingerprint"
        )
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
        result.restored += _record_placements(project, direction_code, direction_exclusions, direction_placed)
        if plans:
            _write_direction(plans, result, written_before=set(states))
    result.excluded += direction_exclusions
    result.transplanted += [(cid, drift) for cid, drift, _, _ in direction_placed if drift]
    return len(segments)


def _record_placements(
    project: Project, direction_code: str, exclusions: list[tuple[int, str]], placed: list[tuple[int, str, int, int]]
) -> int:
    """Make the direction's ``CandidatePlacement`` rows say what this merge did: a row per excluded candidate
    (with the reason) and per transplanted one (with the drift and the span its edit was placed at); none
    for a candidate placed as it stands. Only rows that differ are written. Returns how many candidates an
    earlier build had excluded are placed now."""
    excluded, transplanted = CandidatePlacement.Outcome.EXCLUDED, CandidatePlacement.Outcome.TRANSPLANTED
    wanted: dict[int, tuple] = {cid: (excluded, reason, "", None, None) for cid, reason in exclusions}
    wanted.update((cid, (transplanted, "", drift, start, end)) for cid, drift, start, end in placed if drift)
    fields = ("outcome", "reason", "drift", "span_start", "span_end")
    held = {
        row[0]: row[1:]
        for row in CandidatePlacement.objects.filter(
            candidate__segment__project=project, candidate__segment__direction__code=direction_code
        ).values_list("candidate_id", *fields)
    }
    placed_ids = {cid for cid, _, _, _ in placed}
    restored = sum(1 for cid, row in held.items() if row[0] == excluded and cid in placed_ids)
    stale = [cid for cid, row in held.items() if wanted.get(cid) != row]
    for i in range(0, len(stale), BULK_BATCH):
        CandidatePlacement.objects.filter(candidate_id__in=stale[i : i + BULK_BATCH]).delete()
    CandidatePlacement.objects.bulk_create(
        [
            CandidatePlacement(candidate_id=cid, **dict(zip(fields, row)))
            for cid, row in wanted.items()
            if held.get(cid) != row
        ],
        batch_size=BULK_BATCH,
    )
    return restored


def _delete_stale(stale: list[int], result: BuildResult) -> None:
    """The pseudo translations of gold pairs merged before, with their candidate links."""
    Through = PseudoTranslation.candidates.through
    for i in range(0, len(stale), 500):
        chunk = stale[i : i + 500]
        # The links by their pseudo translations' ids, not through a join on the gold pair: the planner
        # hashes a join against a sequential scan of every link of the project (quadratic over a rebuild).
        old_ids = list(PseudoTranslation.objects.filter(segment_id__in=chunk).values_list("id", flat=True))
        for j in range(0, len(old_ids), 5000):
            Through.objects.filter(
                pseudotranslation_id__in=old_ids[j : j + 5000]
            ).delete()  # fast delete: one statement
        # One DELETE without collecting rows: nothing but the M2M rows (gone above) points at a pseudo translation.
        result.pseudo_deleted += PseudoTranslation.objects.filter(segment_id__in=chunk)._raw_delete(
            PseudoTranslation.objects.db
        )


def _pseudo_rows(plans, now) -> tuple[list[tuple], dict[tuple[int, str], tuple]]:
    """The planned pseudo translations as raw rows (table columns but the id), and each one's candidate ids
    by (gold pair, key)."""
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
                (
                    seg.id,
                    p.level,
                    key,
                    p.text,
                    p.marked_text,
                    _json(list(p.error_types)),
                    p.mqm_penalty,
                    _json(spans),
                    _json(list(p.flags)),
                    now,
                )
            )
    return rows, members


def _pseudo_ids(segment_ids: list[int]) -> dict[tuple[int, str], int]:
    """The ids the database gave the rows just written, by (gold pair, key) (backends without reserved ids)."""
    ids = {}
    for i in range(0, len(segment_ids), 500):
        for pk, sid, key in PseudoTranslation.objects.filter(segment_id__in=segment_ids[i : i + 500]).values_list(
            "id", "segment_id", "key"
        ):
            ids[(sid, key)] = pk
    return ids


def _write_direction(plans, result: BuildResult, *, written_before: set[int]) -> None:
    """Replace the pseudo translations of the planned gold pairs. Raw rows (``core.bulk.copy_rows``: COPY on
    PostgreSQL, ``executemany`` elsewhere) rather than ``bulk_create``: building ~250,000 model instances
    (rows and M2M links) costs most of the merge time otherwise; values are adapted with the backend's own
    operations, so SQLite and PostgreSQL both work.

    Only gold pairs merged before (``written_before``: those with a ``MergedSegment``, written in the same
    transaction as their rows) have rows to delete: a first build issues no DELETE at all. That matters at
    scale: while the table is too new for PostgreSQL's statistics, ``segment_id IN (…)`` plans as a
    sequential scan, so each direction's DELETE and read-back would scan every row written so far. (A row
    without its state would make the COPY fail on the unique (segment, key) constraint, loudly.)"""
    segment_ids = [seg.id for seg, _, _ in plans]
    stale = [sid for sid in segment_ids if sid in written_before]
    Through = PseudoTranslation.candidates.through
    _delete_stale(stale, result)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    rows, members = _pseudo_rows(plans, now)
    columns = [
        "segment_id",
        "level",
        "key",
        "text",
        "marked_text",
        "error_types",
        "mqm_penalty",
        "spans",
        "flags",
        "created_at",
    ]
    reserved = bulk.reserve_ids(PseudoTranslation, len(rows))
    if reserved is not None:  # PostgreSQL: the rows go in with their ids, nothing is read back
        ids = dict(zip(members, reserved))
        rows = [(pk, *row) for pk, row in zip(reserved, rows)]
        columns = ["id", *columns]
    bulk.copy_rows(PseudoTranslation._meta.db_table, columns, rows, batch_size=BULK_BATCH * 5)
    if reserved is None:
        ids = _pseudo_ids(segment_ids)
    links = [(ids[k], cid) for k, cids in members.items() for cid in cids]
    bulk.copy_rows(Through._meta.db_table, ["pseudotranslation_id", "candidate_id"], links, batch_size=BULK_BATCH * 10)
    states = [
        MergedSegment(segment_id=seg.id, fingerprint=fp, pseudo_count=len(m.pseudo_translations))
        for seg, fp, m in plans
    ]
    MergedSegment.objects.bulk_create(
        states,
        batch_size=BULK_BATCH,
        update_conflicts=True,
        unique_fields=["segment"],
        update_fields=["fingerprint", "pseudo_count", "built_at"],
    )
    result.rebuilt += len(plans)
    result.pseudo_created += len(rows)


def _refresh_statistics() -> None:
    """Planner statistics for the rows a build wrote: the release reads them next, 100 gold pairs at a time."""
    bulk.refresh_planner_statistics(
        PseudoTranslation, PseudoTranslation.candidates.through, MergedSegment, CandidatePlacement
    )


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


DirectionDone = Callable[[str, dict], None]  # (direction, its entry in ``BenchmarkBuild.directions``)
_SUMMED = {
    "done_segments": "gold_pairs",
    "rebuilt_segments": "rebuilt",
    "pseudo_created": "pseudo_created",
    "excluded": "excluded",
    "transplanted": "transplanted",
}


def build_begin(*, build: BenchmarkBuild) -> list[str]:
    """Mark a recorded build running and return the directions it has left to merge: all of them for a new
    build or a finished one run again; for an interrupted or failed one, those not done yet (a build resumes
    per direction). ``build.directions`` gets an entry per direction (what the UI and the command show)."""
    pairs = dict(
        _built_segments(build.project)
        .order_by()
        .values("direction__code")
        .annotate(n=Count("id"))
        .values_list("direction__code", "n")
    )
    with transaction.atomic():
        row = BenchmarkBuild.objects.select_for_update().get(pk=build.pk)
        kept = {} if row.status == BenchmarkBuild.Status.DONE else row.directions or {}
        row.directions = {
            code: kept[code] if kept.get(code, {}).get("status") == "done" else {"status": "pending", "gold_pairs": n}
            for code, n in sorted(pairs.items())
        }
        row.status, row.error, row.finished_at = BenchmarkBuild.Status.RUNNING, "", None
        row.lease_expires_at = _lease_end()
        row.total_segments = sum(pairs.values())
        _sum_directions(row)
        row.save(
            update_fields=[
                "directions",
                "status",
                "error",
                "finished_at",
                "lease_expires_at",
                "total_segments",
                *_SUMMED,
            ]
        )
    _copy(row, build)
    return [code for code, entry in build.directions.items() if entry["status"] != "done"]


def build_direction_run(
    *, build: BenchmarkBuild, direction_code: str, force: bool = False, total: BuildResult | None = None
) -> dict:
    """Merge one direction of a recorded build (what each task of a build's chord runs) and record its
    outcome in ``build.directions``, in the transaction that writes the direction, so a recorded ``done``
    means written. A failure is recorded on the direction and the build, with its reason, and raised.
    ``total``: a result of the whole build to add this direction's outcome to (``build_run``)."""
    _record_direction(build, direction_code, {"status": "running"})
    result = BuildResult()
    try:
        with transaction.atomic():
            segments = direction_merge(project=build.project, direction_code=direction_code, result=result, force=force)
            entry = {
                "status": "done",
                "gold_pairs": segments,
                "rebuilt": result.rebuilt,
                "pseudo_created": result.pseudo_created,
                "excluded": len({cid for cid, _ in result.excluded}),  # a candidate belongs to one direction
                "transplanted": len({cid for cid, _ in result.transplanted}),
                "restored": result.restored,
            }
            _record_direction(build, direction_code, entry)
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        _record_direction(
            build, direction_code, {"status": "failed", "error": reason}, failure=f"{direction_code}: {reason}"
        )
        raise
    if total is not None:
        result.segments = segments
        total.add(result)
    return entry


def build_retry_record(*, build: BenchmarkBuild, direction_code: str, reason: str) -> None:
    """A direction whose merge hit a transient fault and is tried again: it says so, and the build is running
    again (not failed) unless another direction failed for good."""
    with transaction.atomic():
        row = BenchmarkBuild.objects.select_for_update().get(pk=build.pk)
        row.directions = with_entry(row.directions, direction_code, {"status": "retrying", "error": reason})
        if failed := first_failure(row.directions):
            row.status, row.error = BenchmarkBuild.Status.FAILED, failed
        else:
            row.status, row.error, row.finished_at = BenchmarkBuild.Status.RUNNING, "", None
        row.save(update_fields=["directions", "status", "error", "finished_at"])
    _copy(row, build)


def build_finish(*, build: BenchmarkBuild) -> BenchmarkBuild:
    """Close a build whose directions are all merged (the chord's last task): planner statistics for the
    rows just written (the release reads them next), counts per direction and level."""
    _refresh_statistics()
    counts = _final_counts(build.project)
    with transaction.atomic():
        row = BenchmarkBuild.objects.select_for_update().get(pk=build.pk)
        missing = sorted(code for code, entry in row.directions.items() if entry.get("status") != "done")
        if missing:
            row.status, row.error = (
                BenchmarkBuild.Status.FAILED,
                row.error or f"directions not merged: {', '.join(missing)}",
            )
        else:
            row.status, row.error, row.counts = BenchmarkBuild.Status.DONE, "", counts  # a retried direction succeeded
        row.finished_at, row.lease_expires_at = timezone.now(), None
        row.save(update_fields=["status", "error", "counts", "finished_at", "lease_expires_at"])
    _copy(row, build)
    return build


def build_run(
    *,
    project: Project | None = None,
    build: BenchmarkBuild | None = None,
    user=None,
    force: bool = False,
    progress: Progress | None = None,
    on_direction: DirectionDone | None = None,
) -> BuildResult:
    """The one way a build runs in this process (the tests, the perf scripts, the command and the demo): record
    a build of ``project`` (``build_create``: one per project at a time) or take the recorded ``build``, and run
    the steps the worker's task spreads over a chord (``build_begin``, ``build_direction_run`` per direction
    left, ``build_finish``), direction after direction: status, counts, failure reason, progress per direction.
    Returns what the directions run here did (``result.build``: the build row)."""
    if build is None:
        build = build_create(project=project, user=user)
    result = BuildResult(build=build)
    for code in build_begin(build=build):
        entry = build_direction_run(build=build, direction_code=code, force=force, total=result)
        if on_direction:
            on_direction(code, entry)
        if progress:
            progress(build.done_segments, build.total_segments)
    build_finish(build=build)
    result.counts = build.counts
    return result


def _record_direction(build: BenchmarkBuild, direction_code: str, entry: dict, failure: str = "") -> None:
    """Set one direction's entry (the build row is locked: directions on other workers record theirs too)."""
    with transaction.atomic():
        row = BenchmarkBuild.objects.select_for_update().get(pk=build.pk)
        row.directions = with_entry(row.directions, direction_code, entry)
        row.lease_expires_at = _lease_end()  # a direction started or ended: the build's process is alive
        if failure:
            row.status, row.error, row.finished_at = BenchmarkBuild.Status.FAILED, failure, timezone.now()
        _sum_directions(row)
        row.save(update_fields=["directions", "status", "error", "finished_at", "lease_expires_at", *_SUMMED])
    _copy(row, build)


def _sum_directions(build: BenchmarkBuild) -> None:
    done = [entry for entry in build.directions.values() if entry.get("status") == "done"]
    for attr, key in _SUMMED.items():
        setattr(build, attr, sum(entry.get(key, 0) for entry in done))


def _copy(row: BenchmarkBuild, build: BenchmarkBuild) -> None:
    if row is not build:
        for attr in ("directions", "status", "error", "finished_at", "total_segments", "counts", *_SUMMED):
            setattr(build, attr, getattr(row, attr))


class BuildRunning(Conflict):
    """A build of the project is already pending or running: it is not started twice."""

    code = "build_running"

    def __init__(self, build: BenchmarkBuild):
        super().__init__(
            f"build {build.number} of {build.project.name} is already {build.status}; it was not started again"
        )
        self.build = build


def _lease_end():
    return timezone.now() + timedelta(seconds=int(getattr(settings, "BUILD_LEASE_SECONDS", 3600)))


def build_create(*, project: Project, user=None, acknowledged: list[str] | None = None) -> BenchmarkBuild:
    """Record a build to run (``exports.benchmark.tasks.start_build`` hands it to the worker), one per project
    at a time: a live build raises ``BuildRunning``; an interrupted one (its process died: lease passed) is
    returned to be run again, which resumes it with the directions not done. The project's row lock (on
    SQLite, the write lock an IMMEDIATE transaction takes) serialises concurrent starts, and the unique
    constraint ``one_live_build_per_project`` holds even without it. ``acknowledged``: what the admin confirmed
    building with (the undecided or empty directions)."""
    try:
        with transaction.atomic():
            Project.objects.select_for_update().filter(pk=project.pk).exists()
            live = (
                BenchmarkBuild.objects.select_related("project")
                .filter(project=project, status__in=BenchmarkBuild.LIVE)
                .first()
            )
            if live is not None:
                if not live.interrupted:
                    raise BuildRunning(live)
                live.lease_expires_at = _lease_end()  # taken over by this start: it resumes where it stopped
                live.save(update_fields=["lease_expires_at"])
                return live
            last = BenchmarkBuild.objects.filter(project=project).aggregate(n=Max("number"))["n"] or 0
            return BenchmarkBuild.objects.create(
                project=project,
                number=last + 1,
                created_by=user if getattr(user, "pk", None) else None,
                lease_expires_at=_lease_end(),
                acknowledged=list(acknowledged or []),
            )
    except IntegrityError:  # a concurrent start won (the constraint, where the lock did not serialise)
        live = (
            BenchmarkBuild.objects.select_related("project")
            .filter(project=project, status__in=BenchmarkBuild.LIVE)
            .first()
        )
        if live is None:
            raise
        raise BuildRunning(live) from None


def counts_format(*, counts: dict) -> list[str]:
    """The counts table as text lines (command output)."""
    if not counts:
        return []
    levels, rows = merging.counts_table_rows(counts)
    lines = ["direction  pairs  " + "  ".join(f"{'k=' + str(k):>16}" for k in levels) + f"  {'total':>16}"]
    for direction_code, row, level_cells in rows:
        cells = [f"{c['total']:>6} ({c['min_per_pair']:>2}–{c['max_per_pair']:>3})" for c in level_cells]
        lines.append(
            f"{direction_code:<9}  {row['gold_pairs']:>5}  "
            + "  ".join(f"{c:>16}" for c in cells)
            + f"  {row['total']:>6} ({row['min_per_pair']}–{row['max_per_pair']})"
        )
    return lines
