"""Write operations of the benchmark: merging the pool into pseudo translations, releases, Hub pushes.

Thin over the pure modules ``merging`` (SPEC §6), ``sampling`` (SPEC §7) and ``release_files`` (layout,
bytes); this module only reads and writes the database.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from core import bulk
from core.models import Direction, GoldSegment, Project
from core.units import Edit, split_units
from exports import merging, release_files, sampling, selectors
from exports.models import BenchmarkBuild, MergedSegment, PseudoSystem, PseudoTranslation, Release
from exports.release_files import ReleaseContent
from exports.sampling import SamplingPlan
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


def start_build(project: Project, user=None, force: bool = False) -> BenchmarkBuild:
    """Record a build and hand it to the worker (in-process without a broker)."""
    from exports.tasks import build_benchmark_task

    build = BenchmarkBuild.objects.create(project=project, created_by=user if getattr(user, "pk", None) else None)
    transaction.on_commit(lambda: build_benchmark_task.delay(build.pk, force))
    return build


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


# ---- releases ------------------------------------------------------------------------------------------

VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,39}$")


class ReleaseError(Exception):
    """A release request that cannot be carried out (bad version, nothing built, immutable version)."""


def sampling_plan_for(project: Project, overrides: dict | None = None) -> SamplingPlan:
    """The project's sampling plan: defaults (SPEC §7), then ``project.options['sampling']``, then overrides."""
    data = {**(project.options or {}).get("sampling", {}), **(overrides or {})}
    try:
        return SamplingPlan.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise ReleaseError(f"project {project.name}: sampling plan: {exc}") from None


def release_content(project: Project, version: str, plan: SamplingPlan, progress=None, on_system=None) -> ReleaseContent:
    """The release of the project's current pseudo translations, to be streamed by ``write_release``:
    triplet rows are read one direction at a time and the pseudo systems drawn from the triplet ids the
    writer collects, so nothing here holds the release."""
    step = progress or (lambda stage, pct: None)
    counts = selectors.level_counts(project)
    directions = selectors.triplet_directions(project)
    if not directions:
        raise ReleaseError(f"project {project.name} has no pseudo translations: run build_benchmark first")
    # The multilingual level mixes depend only on which levels each direction has (SPEC §7).
    levels = {d: {int(k): cell["total"] for k, cell in counts[d]["levels"].items()} for d in directions}
    plan = sampling.resolve_for_pool(plan, levels)
    step("counts read", 5)

    def systems(pool):
        pool = sampling.normalise_pool(pool)
        return (
            sampling.iter_monolingual_systems(pool, plan, normalised=True),
            sampling.iter_multilingual_systems(pool, plan, normalised=True),
        )

    return ReleaseContent(
        name=project.name,
        version=version,
        title=project.title or project.name,
        description=project.description,
        license=project.license,
        source_language=project.source_language.code,
        directions=directions,
        rows=lambda direction: selectors.iter_triplet_rows(project, direction),
        systems=systems,
        excluded=selectors.excluded_candidates(project),
        transplanted=selectors.transplanted_candidates(project),
        counts=counts,
        sampling_plan=plan.to_dict(),
        build={
            "pool": f"accepted MQM candidates (pool rule: {project.get_pool_rule_display()}); planted gold items left out",
            "max_errors": project.max_errors,
            "mqm_penalty": "5 per major error",
            "error_types": ", ".join(project.error_types) if project.error_types else "all registered types",
        },
        agreement=selectors.agreement_figures(project),
        on_system=on_system,
    )


def create_release(
    project: Project,
    version: str,
    *,
    out_dir: str | Path | None = None,
    formats: tuple[str, ...] = (),
    plan_overrides: dict | None = None,
    user=None,
    progress=None,
) -> Release:
    """Write release ``version`` of ``project`` and record it.

    A new version takes the project's sampling plan; an existing version regenerates from its stored plan
    and must give the same content hash (same bytes), or it is refused: versions are immutable. A release
    whose build failed or was interrupted is simply built again."""
    if not VERSION_RE.match(version or ""):
        raise ReleaseError(f"version {version!r}: use letters, digits, '.', '_', '+', '-' (at most 40, e.g. 1.0.0)")
    unknown = set(formats) - set(release_files.EXTRA_FORMATS)
    if unknown:
        raise ReleaseError(f"unknown format(s) {', '.join(sorted(unknown))}; choose from {', '.join(release_files.EXTRA_FORMATS)}")
    existing = Release.objects.filter(project=project, version=version).first()
    released = existing is not None and existing.status == Release.Status.READY
    if released:
        if plan_overrides:
            raise ReleaseError(f"version {version} exists; its sampling plan is fixed (release a new version to change it)")
        plan = SamplingPlan.from_dict(existing.manifest["sampling_plan"])
    else:
        plan = sampling_plan_for(project, plan_overrides)
    out_dir = Path(out_dir) if out_dir else Path(settings.RELEASES_DIR) / project.name / version
    release = existing or Release.objects.create(project=project, version=version, created_by=user)
    if not released:
        _release_progress(release, status=Release.Status.BUILDING, stage="reading triplets", progress=0, error="")

    def step(stage: str, pct: int) -> None:
        if not released:
            _release_progress(release, stage=stage, progress=pct)
        if progress:
            progress(stage, pct)

    store = None if released else _SystemStore(release)
    try:
        content = release_content(project, version, plan, step, on_system=store.add if store else None)
        manifest = release_files.write_release(
            content, out_dir, tuple(sorted(formats)), step, expected_hash=existing.content_hash if released else None
        )
        if store:
            store.flush()
    except Exception as exc:
        if store:
            store.discard()
        if not released:
            _release_progress(release, status=Release.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        if isinstance(exc, sampling.SamplingError):
            raise ReleaseError(f"project {project.name}: {exc}") from None
        raise
    with transaction.atomic():
        release.path = str(out_dir)
        if not released:
            release.content_hash = manifest["content_hash"]
            release.manifest = {k: manifest[k] for k in ("content_hash", "counts", "sampling_plan", "files", "triplets", "systems", "shortfalls", "excluded_candidates", "transplanted_candidates")}
            release.status = Release.Status.READY
            release.stage = "ready"
            release.progress = 100
        else:
            # Extra formats may have been added: keep the recorded file list complete.
            release.manifest = {**release.manifest, "files": {**release.manifest.get("files", {}), **manifest["files"]}}
        release.save()
    return release


def _release_progress(release: Release, **fields) -> None:
    for key, value in fields.items():
        setattr(release, key, value)
    release.save(update_fields=list(fields))


class _SystemStore:
    """Pseudo systems of a release written to the database as they are drawn, in batches (a release of
    200 directions has tens of thousands, each with thousands of triplet ids). Rows of an earlier,
    failed attempt are removed first; a failed attempt removes its own."""

    BATCH_IDS = 200_000  # triplet ids held before a flush (a multilingual system has 102 per direction)

    def __init__(self, release: Release):
        self.release = release
        self.pending: list[PseudoSystem] = []
        self.pending_ids = 0
        self.directions: dict[str, Direction] = {}
        PseudoSystem.objects.filter(release=release).delete()

    def add(self, draw) -> None:
        direction = None
        if draw.direction:
            direction = self.directions.get(draw.direction)
            if direction is None:
                direction = self.directions[draw.direction] = Direction.objects.filter(code=draw.direction).first()
        self.pending.append(
            PseudoSystem(
                release=self.release,
                project=self.release.project,
                kind=draw.kind,
                name=draw.system_id,
                direction=direction,
                level=draw.level,
                level_mix={str(k): v for k, v in sorted(draw.level_mix.items())},
                repetition=draw.repetition,
                seed=draw.seed,
                human_score=draw.human_score,
                triplet_ids=draw.triplet_ids,
            )
        )
        self.pending_ids += draw.size
        if self.pending_ids >= self.BATCH_IDS:
            self.flush()

    def flush(self) -> None:
        bulk.insert_objects(PseudoSystem, self.pending)
        self.pending, self.pending_ids = [], 0

    def discard(self) -> None:
        self.pending, self.pending_ids = [], 0
        PseudoSystem.objects.filter(release=self.release).delete()


def start_release(project: Project, version: str, *, formats=(), push_repo: str = "", private: bool = True, user=None) -> None:
    """Validate a release request from the UI and hand it to the worker; the Release row shows progress."""
    from exports.tasks import create_release_task

    if not VERSION_RE.match(version or ""):
        raise ReleaseError(f"version {version!r}: use letters, digits, '.', '_', '+', '-' (at most 40, e.g. 1.0.0)")
    if push_repo and not HUB_REPO_RE.match(push_repo):
        raise ReleaseError(f"Hub repo {push_repo!r}: expected 'namespace/name'")
    user_id = user.pk if getattr(user, "pk", None) else None
    transaction.on_commit(lambda: create_release_task.delay(project.pk, version, list(formats), push_repo, private, user_id))


def start_push(release: Release, repo_id: str, *, private: bool = True) -> None:
    """Validate a push request from the UI and hand it to the worker."""
    from exports.tasks import push_release_task

    if not HUB_REPO_RE.match(repo_id or ""):
        raise ReleaseError(f"Hub repo {repo_id!r}: expected 'namespace/name'")
    if release.status != Release.Status.READY:
        raise ReleaseError(f"{release} is not ready (status {release.status})")
    _release_progress(release, hub_repo=repo_id, push_status="pushing", stage="push queued", progress=0)
    transaction.on_commit(lambda: push_release_task.delay(release.pk, repo_id, private))


# ---- the Hugging Face Hub ------------------------------------------------------------------------------

HUB_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
CARD_FILES = ("README.md", "manifest.json")


def push_release(release: Release, repo_id: str, *, private: bool = True, progress=None) -> Release:
    """Push a written release to a Hub dataset repo and record the revision.

    The token comes from ``HF_TOKEN`` (never stored), the endpoint from ``HF_ENDPOINT`` when set. Resumable:
    a version already tagged on the repo is only recorded; otherwise the data files go in a first commit
    (files already on the Hub with the same content are skipped by the client), then the dataset card and
    manifest in a second one, so a repo never shows a card for data it does not hold; the commit is tagged
    with the version."""
    import os

    from huggingface_hub import CommitOperationAdd, HfApi

    if not HUB_REPO_RE.match(repo_id or ""):
        raise ReleaseError(f"Hub repo {repo_id!r}: expected 'namespace/name'")
    if release.status != Release.Status.READY:
        raise ReleaseError(f"{release} is not ready (status {release.status}); write it first")
    token = os.environ.get("HF_TOKEN")
    if not token:
        raise ReleaseError("HF_TOKEN is not set in the environment")
    root = Path(release.path)
    if not (root / "manifest.json").is_file():
        raise ReleaseError(f"{release}: no files at {root}; export it again with the release command")
    problems = release_files.verify_release(root)
    if problems:
        raise ReleaseError(f"{release}: files at {root} differ from the manifest: {'; '.join(problems[:5])}")
    step = progress or (lambda stage, pct: None)
    _release_progress(release, hub_repo=repo_id, push_status="pushing", stage="pushing: creating repo", progress=0, error="")
    endpoint = os.environ.get("HF_ENDPOINT") or None
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        tag = next((t for t in api.list_repo_refs(repo_id, repo_type="dataset").tags if t.name == release.version), None)
        if tag is not None:
            revision = tag.target_commit
        else:
            manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
            data_files = sorted(p for p in manifest["files"] if p not in CARD_FILES)
            _release_progress(release, stage="pushing: data files", progress=10)
            step("data files", 10)
            api.create_commit(
                repo_id,
                [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(root / p)) for p in data_files],
                commit_message=f"{release.project.name} {release.version}: data files",
                repo_type="dataset",
            )
            _release_progress(release, stage="pushing: dataset card", progress=80)
            step("dataset card", 80)
            commit = api.create_commit(
                repo_id,
                [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(root / p)) for p in CARD_FILES],
                commit_message=f"{release.project.name} {release.version}: dataset card and manifest",
                commit_description=f"content hash {release.content_hash}",
                repo_type="dataset",
            )
            revision = commit.oid
            api.create_tag(repo_id, tag=release.version, revision=revision, tag_message=f"content hash {release.content_hash}", repo_type="dataset")
    except Exception as exc:
        _release_progress(release, push_status="failed", stage="push failed", error=f"push to {repo_id}: {type(exc).__name__}: {exc}")
        raise
    _release_progress(
        release, hub_revision=revision, push_status="pushed", pushed_at=timezone.now(), stage="pushed", progress=100, error=""
    )
    step("pushed", 100)
    return release
