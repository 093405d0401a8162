"""Write operations of the release stage: sampling pseudo systems, writing release files, Hub pushes.

Thin over the pure ``exports.release.domain`` (``sampling``, SPEC §7; ``release_files``, layout and bytes);
this module only reads and writes the database. A new release is staged one direction at a time
(``release_begin``, ``release_direction_run``, ``release_finish``: a Celery chord on workers, a loop in
the command). Starting a release or a push on the worker is
``exports.release.tasks.start_release`` / ``start_push``, which call ``release_request_check`` /
``push_prepare`` here first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone

from core import bulk, storage
from core.domain.directions import first_failure, with_entry
from core.domain.errors import Conflict, Invalid, NotFound
from core.http import body_copy
from core.models import Direction, Project
from exports.benchmark import selectors
from exports.models import MergedSegment, PseudoSystem, PseudoTranslation, Release, StagedUpload
from exports.release import selectors as release_selectors
from exports.release.domain import release_files, sampling, staged_upload, versions
from exports.release.domain.release_files import ReleaseContent
from exports.release.domain.sampling import SamplingPlan
from exports.release.domain.staged_upload import StagedConflict, StagedRefused
from scoring.api import is_transient  # network faults and Hub 5xx/429, as the scoring workers retry them

VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,39}$")


class ReleaseError(Invalid):
    """A release request that cannot be carried out (bad version, nothing built, immutable version)."""

    code = "release_refused"


def _plan_data(project: Project, overrides: dict | None = None) -> dict:
    """The project's sampling options with the overrides, as given (unresolved: the level mixes are fixed
    against the pool when the systems are drawn)."""
    return {**(project.options or {}).get("sampling", {}), **(overrides or {})}


def sampling_plan_make(*, project: Project, overrides: dict | None = None) -> SamplingPlan:
    """The project's sampling plan: defaults (SPEC §7), then ``project.options['sampling']``, then overrides."""
    data = _plan_data(project, overrides)
    try:
        return SamplingPlan.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise ReleaseError(f"project {project.name}: sampling plan: {exc}") from None


def release_content_make(
    *, project: Project, version: str, plan: SamplingPlan, progress=None, on_system=None
) -> ReleaseContent:
    """The release of the project's current pseudo translations, to be streamed by ``write_release``:
    triplet rows are read one direction at a time and the pseudo systems drawn from the triplet ids the
    writer staged, read back a direction at a time, so nothing here holds the release."""
    step = progress or (lambda stage, pct: None)
    counts = selectors.current_level_counts(project)
    directions = release_selectors.triplet_directions(project)
    if not directions:
        raise ReleaseError(f"project {project.name} has no pseudo translations: run build_benchmark first")
    # The multilingual level mixes depend only on which levels each direction has (SPEC §7).
    levels = {d: {int(k): cell["total"] for k, cell in counts[d]["levels"].items()} for d in directions}
    plan = sampling.resolve_for_pool(plan, levels)
    step("counts read", 5)

    def systems(directions, load):  # one direction's ids in memory at a time
        return (
            sampling.iter_monolingual_by_direction(directions, load, plan),
            sampling.iter_multilingual_spooled(directions, load, plan),
        )

    return ReleaseContent(
        name=project.name,
        version=version,
        title=project.title or project.name,
        description=project.description,
        license=project.license,
        source_language=project.source_language.code,
        directions=directions,
        rows=lambda direction: release_selectors.iter_triplet_rows(project, direction),
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


def release_create(
    *,
    project: Project,
    version: str,
    out_dir: str | Path | None = None,
    formats: tuple[str, ...] = (),
    plan_overrides: dict | None = None,
    user=None,
    progress=None,
    on_direction=None,
) -> Release:
    """Write release ``version`` of ``project`` and record it, in this process.

    A new version (or one whose writing failed or was interrupted) takes the project's sampling plan and is
    staged direction after direction, exactly the steps the Celery chord spreads over workers
    (``release_begin``, ``release_direction_run`` per direction, ``release_finish``): run again, it resumes
    with the directions not staged yet or whose build changed. An existing version regenerates from its
    stored plan in one pass and must give the same content hash (same bytes), or it is refused: versions
    are immutable. ``on_direction(code, entry)`` is called as each direction is staged."""
    _validate_release_request(version, formats)
    existing = Release.objects.filter(project=project, version=version).first()
    if existing is not None and existing.status == Release.Status.READY:
        if plan_overrides:
            raise ReleaseError(
                f"version {version} exists; its sampling plan is fixed (release a new version to change it)"
            )
        return _export_again(existing, out_dir=out_dir, formats=formats, progress=progress)
    job = release_begin(
        project=project, version=version, out_dir=out_dir, formats=formats, plan_overrides=plan_overrides, user=user
    )
    todo = job.todo
    for i, code in enumerate(todo):
        entry = release_direction_run(job=job, direction=code)
        if on_direction:
            on_direction(code, entry)
        if progress:
            progress(f"triplets {code}", int(60 * (len(job.directions) - len(todo) + i + 1) / len(job.directions)))
    return release_finish(job=job, progress=progress)


def _validate_release_request(version: str, formats) -> None:
    if not VERSION_RE.match(version or ""):
        raise ReleaseError(f"version {version!r}: use letters, digits, '.', '_', '+', '-' (at most 40, e.g. 1.0.0)")
    unknown = set(formats) - set(release_files.EXTRA_FORMATS)
    if unknown:
        raise ReleaseError(
            f"formats: unknown format(s) {', '.join(sorted(unknown))}; choose from {', '.join(release_files.EXTRA_FORMATS)}"
        )


def _export_again(release: Release, *, out_dir, formats, progress) -> Release:
    """A released version written again (another directory, formats added) in one pass, from its stored
    plan; refused unless it gives the recorded content hash."""
    project = release.project
    plan = SamplingPlan.from_dict(release.manifest["sampling_plan"])
    out_dir = Path(out_dir) if out_dir else out_dir_get(project=project, version=release.version)
    release_files.check_out_dir(out_dir, name=project.name, version=release.version)
    try:
        content = release_content_make(project=project, version=release.version, plan=plan, progress=progress)
        manifest = release_files.write_release(
            content, out_dir, tuple(sorted(formats)), progress, expected_hash=release.content_hash
        )
    except sampling.SamplingError as exc:
        raise ReleaseError(f"project {project.name}: {exc}") from None
    with transaction.atomic():
        release.path = str(out_dir)
        # Extra formats may have been added: keep the recorded file list complete.
        release.manifest = {**release.manifest, "files": {**release.manifest.get("files", {}), **manifest["files"]}}
        release.save(update_fields=["path", "manifest"])
    return release


# ---- a release staged one direction at a time (a Celery chord, or in-process) ---------------------------


def out_dir_get(*, project: Project, version: str) -> Path:
    return Path(settings.RELEASES_DIR) / project.name / version


def staging_dir_get(*, out_dir: str | Path) -> Path:
    """Where a release's directions are staged on the file system (``RELEASE_STAGING_STORAGE=local``, the
    default): next to its output directory (under ``RELEASES_DIR`` by default), so that finishing is one
    rename on the same file system. Every process that stages writes there: with several machines it must
    be a shared file system, or the staging storage object storage (``staging_files_get``)."""
    out_dir = Path(out_dir)
    return out_dir.parent / f".{out_dir.name}.staging"


def staging_files_get(*, project_name: str, version: str, out_dir: str | Path) -> storage.StagedFiles:
    """The staged directions of a release, in the ``release_staging`` storage: the staging directory beside
    ``out_dir`` on the file system, ``PROJECT/VERSION/`` in object storage."""
    return storage.StagedFiles.for_release(
        project=project_name, version=version, local_dir=staging_dir_get(out_dir=out_dir)
    )


def _staged_source(staged: storage.StagedFiles):
    """What the release writer reads staged directions from: the directory itself on the file system (its
    reads as before), the storage otherwise."""
    return staged.root if staged.local else staged


@dataclass(frozen=True)
class ReleaseJob:
    """What every step of a staged release needs (the tasks' arguments): the recorded release, where it
    goes, the extra formats, the sampling plan, all directions in release order and those left to stage."""

    release_id: int
    out_dir: str
    formats: tuple[str, ...]
    plan: dict
    directions: tuple[str, ...]
    todo: tuple[str, ...] = ()
    # no output directory was asked for: the finishing process puts the release under its own RELEASES_DIR
    # (with staging in object storage it need not share the data directory of the process that began it)
    default_out: bool = False

    @property
    def staging(self) -> Path:
        """The staging directory on the file system (``RELEASE_STAGING_STORAGE=local``)."""
        return staging_dir_get(out_dir=self.out_dir)

    def to_dict(self) -> dict:
        return {
            "release_id": self.release_id,
            "out_dir": self.out_dir,
            "formats": list(self.formats),
            "plan": self.plan,
            "directions": list(self.directions),
            "todo": list(self.todo),
            "default_out": self.default_out,
        }

    @classmethod
    def from_dict(cls, data: dict) -> ReleaseJob:
        return cls(
            data["release_id"],
            data["out_dir"],
            tuple(data["formats"]),
            data["plan"],
            tuple(data["directions"]),
            tuple(data.get("todo", ())),
            bool(data.get("default_out", False)),
        )


def _job_staged(release: Release, job: ReleaseJob) -> storage.StagedFiles:
    return staging_files_get(project_name=release.project.name, version=release.version, out_dir=job.out_dir)


def _direction_stamp(project: Project, direction: str) -> dict:
    """What a direction's staged files were written from: the project's latest build and a fingerprint of
    the direction's merge states (each gold pair's pool fingerprint, count and time written) and pseudo
    translations. A staged direction whose stamp differs from the current one is written again."""
    build = selectors.latest_build(project)
    states = MergedSegment.objects.filter(segment__project=project, segment__direction__code=direction).order_by(
        "segment_id"
    )
    h = hashlib.sha256()
    for seg, fingerprint, count, built_at in states.values_list(
        "segment_id", "fingerprint", "pseudo_count", "built_at"
    ).iterator(chunk_size=5000):
        h.update(f"{seg}\t{fingerprint}\t{count}\t{built_at.isoformat()}\n".encode())
    rows = PseudoTranslation.objects.filter(segment__project=project, segment__direction__code=direction).aggregate(
        n=Count("id"), last=Max("id")
    )
    h.update(f"{rows['n']}\t{rows['last']}".encode())
    return {"build": build.pk if build else None, "merged": h.hexdigest()}


def release_begin(
    *,
    project: Project,
    version: str,
    out_dir: str | Path | None = None,
    formats: tuple[str, ...] = (),
    plan_overrides: dict | None = None,
    user=None,
    owner: str = "",
) -> ReleaseJob:
    """Record a (new, failed or interrupted) release as building and say which directions are left to stage:
    a direction staged before is kept when its files and spool are intact and its build stamp is still the
    current one; any other is written (again). ``Release.directions`` gets an entry per direction.
    ``owner``: the task that writes it (its Celery id); that task's retry takes its own live lease over."""
    _validate_release_request(version, formats)
    sampling_plan_make(project=project, overrides=plan_overrides)  # a bad plan is refused before anything is recorded
    default_out = not out_dir
    out_dir = Path(out_dir) if out_dir else out_dir_get(project=project, version=version)
    release_files.check_out_dir(out_dir, name=project.name, version=version)  # so is a place it cannot be written to
    staged = staging_files_get(project_name=project.name, version=version, out_dir=out_dir)
    if staged.local:
        try:
            staged.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ReleaseError(
                f"{out_dir}: cannot create the staging directory {staged.root} ({exc.strerror})"
            ) from None
    release = _take_release(project, version, user, owner=owner)
    directions = release_selectors.triplet_directions(project)
    if not directions:
        reason = f"project {project.name} has no pseudo translations: run build_benchmark first"
        _release_progress(release, status=Release.Status.FAILED, error=reason)
        if staged.local:
            with contextlib.suppress(OSError):
                staged.root.rmdir()  # made just now (nothing staged in it): leave no empty directory behind
        raise ReleaseError(reason)
    formats = tuple(sorted(formats))
    stamps = {code: _direction_stamp(project, code) for code in directions}
    with transaction.atomic():
        row = Release.objects.select_for_update().get(pk=release.pk)
        kept = {}
        for code, entry in (row.directions or {}).items():
            if code in stamps and entry.get("status") == "done" and entry.get("stamp") == stamps[code]:
                summary = release_files.staged_direction(_staged_source(staged), code)
                if summary and summary["digest"] == entry.get("digest") and tuple(summary["formats"]) == formats:
                    kept[code] = entry
        row.directions = {code: kept.get(code) or {"status": "pending"} for code in directions}
        row.status, row.error, row.stage = Release.Status.BUILDING, "", "staging directions"
        row.progress = int(60 * len(kept) / len(directions))
        row.job = {}  # no release worker's upload is taken until this attempt hands its directions to them
        row.save(update_fields=["directions", "status", "error", "stage", "progress", "job"])
    # a direction no longer in the build leaves nothing behind to be moved into the release
    for stale in set(staged.folders()) - {release_files.SPOOL_DIR, "systems"} - set(directions):
        staged.delete_tree(stale)
    # scratch folders a killed attempt left beside the release (this attempt holds its lease and has made
    # none yet; release workers' uploads for the old attempt are refused since ``job`` was emptied above)
    for folder in release_files.scratch_folders(out_dir.parent, out_dir.name):
        shutil.rmtree(folder, ignore_errors=True)
    todo = tuple(code for code in directions if code not in kept)
    return ReleaseJob(
        release.pk,
        str(out_dir),
        formats,
        _plan_data(project, plan_overrides),
        tuple(directions),
        todo,
        default_out,
    )


def release_direction_run(*, job: ReleaseJob, direction: str) -> dict:
    """Stage one direction of a release (what each task of a release's chord runs): its files, its share of
    the content hash and its triplet ids, then its entry in ``Release.directions`` (``done`` means staged).
    A failure is recorded on the direction and the release, with its reason, and raised."""
    release = Release.objects.select_related("project").get(pk=job.release_id)
    _record_direction(release, direction, {"status": "running", "error": ""}, total=len(job.directions))
    try:
        stamp = _direction_stamp(release.project, direction)
        rows = release_selectors.iter_triplet_rows(release.project, direction)
        staged = _job_staged(release, job)
        # written by the release writer into a folder of its own, then stored: renamed into the staging
        # directory on the file system, uploaded to object storage
        scratch = staged.scratch(f"{Path(job.out_dir).name}.{direction}")
        try:
            summary = release_files.write_staged_direction(rows, direction, scratch, job.formats, stamp)
            staged.direction_save(scratch, direction, release_files.staged_names(direction, job.formats))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        entry = {
            "status": "done",
            "triplets": summary["triplets"],
            "transplanted": summary["transplanted"],
            "digest": summary["digest"],
            "stamp": stamp,
            "error": "",
        }
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        _record_direction(
            release,
            direction,
            {"status": "failed", "error": reason},
            total=len(job.directions),
            failure=f"{direction}: {reason}",
        )
        raise
    _record_direction(release, direction, entry, total=len(job.directions))
    return entry


def release_finish(*, job: ReleaseJob, progress=None) -> Release:
    """Close a release whose directions are staged (the chord's last task): check that every one is done and
    still written from the current build, hash the spools in order, draw and store the pseudo systems, write
    card and manifest, and move the staging directory into place. With the staging in object storage the
    spools are read from the bucket and the staged files pulled into a folder beside the release, which
    becomes it; the staged directions are then deleted from the bucket."""
    release = Release.objects.select_related("project").get(pk=job.release_id)
    project = release.project
    row = release.directions or {}
    missing = [code for code in job.directions if row.get(code, {}).get("status") != "done"]
    changed = [
        code
        for code in job.directions
        if code not in missing and row[code].get("stamp") != _direction_stamp(project, code)
    ]
    if missing or changed:
        reason = (
            f"directions not staged: {', '.join(missing)}"
            if missing
            else f"the build changed since {', '.join(changed)} were staged: run the release again"
        )
        _release_progress(release, status=Release.Status.FAILED, error=release.error or reason if missing else reason)
        raise ReleaseError(f"{release}: {reason}")

    def step(stage: str, pct: int) -> None:
        _release_progress(release, stage=stage, progress=pct, lease_expires_at=_release_lease_end())
        if progress:
            progress(stage, pct)

    staged = _job_staged(release, job)
    out_dir = Path(job.out_dir)
    if job.default_out and not staged.local:  # under this process's RELEASES_DIR, wherever the release began
        out_dir = out_dir_get(project=project, version=release.version)
    store = _SystemStore(release)
    assembly = None
    try:
        plan = SamplingPlan.from_dict(job.plan)
        content = release_content_make(project=project, version=release.version, plan=plan, on_system=store.add)
        if staged.local:  # the staging directory becomes the release
            manifest = release_files.finish_staged_release(content, staged.root, out_dir, job.formats, step)
        else:  # the staged files pulled from object storage into a folder beside out_dir, which becomes it
            out_dir.parent.mkdir(parents=True, exist_ok=True)
            assembly = out_dir.parent / f".{out_dir.name}.finishing-{os.getpid()}"
            shutil.rmtree(assembly, ignore_errors=True)
            assembly.mkdir()
            manifest = release_files.finish_staged_release(content, assembly, out_dir, job.formats, step, store=staged)
        store.flush()
    except Exception as exc:
        store.discard()
        if assembly is not None:
            shutil.rmtree(assembly, ignore_errors=True)
        _release_progress(release, status=Release.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        if isinstance(exc, sampling.SamplingError):
            raise ReleaseError(f"project {project.name}: {exc}") from None
        raise
    with transaction.atomic():
        release.path = str(out_dir)
        release.content_hash = manifest["content_hash"]
        release.manifest = {
            k: manifest[k]
            for k in (
                "content_hash",
                "counts",
                "sampling_plan",
                "files",
                "triplets",
                "systems",
                "shortfalls",
                "excluded_candidates",
                "transplanted_candidates",
            )
        }
        release.status, release.stage, release.progress, release.error = Release.Status.READY, "ready", 100, ""
        release.save()
    # renamed into place, or what is left after writing into an existing directory or pulling from the bucket
    staged.delete_tree()
    if assembly is not None:
        shutil.rmtree(assembly, ignore_errors=True)
    storage.release_publish(release=release)  # into object storage when configured; nothing on the file system
    return release


def release_retry_record(*, job: ReleaseJob, direction: str, reason: str) -> None:
    """A direction whose staging hit a transient fault and is tried again: it says so, and the release is
    being built again (not failed) unless another direction failed for good."""
    with transaction.atomic():
        row = Release.objects.select_for_update().get(pk=job.release_id)
        row.directions = with_entry(row.directions, direction, {"status": "retrying", "error": reason})
        failed = first_failure(row.directions)
        row.status, row.error = (Release.Status.FAILED, failed) if failed else (Release.Status.BUILDING, "")
        row.save(update_fields=["directions", "status", "error"])


def _record_direction(release: Release, direction: str, entry: dict, *, total: int, failure: str = "") -> None:
    """Set one direction's entry (the release row is locked: directions on other workers record theirs too)."""
    with transaction.atomic():
        row = Release.objects.select_for_update().get(pk=release.pk)
        row.directions = with_entry(row.directions, direction, entry)
        done = sum(1 for e in row.directions.values() if e.get("status") == "done")
        row.progress, row.stage = int(60 * done / max(total, 1)), f"directions staged: {done}/{total}"
        row.lease_expires_at = _release_lease_end()  # a direction started or ended: the process is alive
        if failure:
            row.status, row.error = Release.Status.FAILED, failure
        row.save(update_fields=["directions", "progress", "stage", "status", "error", "lease_expires_at"])
    for attr in ("directions", "progress", "stage", "status", "error"):
        setattr(release, attr, getattr(row, attr))


class ReleaseRunning(Conflict):
    """A release of the project is being written by a live process: it is not started twice."""

    code = "release_running"

    def __init__(self, release: Release):
        super().__init__(
            f"release {release.version} of {release.project.name} is being written ({release.stage or 'starting'}, "
            f"{release.progress}%); it was not started again"
        )
        self.release = release


def _release_lease_end():
    return timezone.now() + timedelta(seconds=int(getattr(settings, "BUILD_LEASE_SECONDS", 3600)))


def release_check_not_running(*, project: Project) -> None:
    """Raise ``ReleaseRunning`` while a release of ``project`` is being written by a live process (the start
    page says so before handing a second one to the worker)."""
    live = Release.objects.select_related("project").filter(project=project, status=Release.Status.BUILDING).first()
    if live is not None and not live.interrupted:
        raise ReleaseRunning(live)


def _take_release(project: Project, version: str, user, *, owner: str = "") -> Release:
    """The release row of ``version``, recorded as being written by this process (its lease taken), one per
    project at a time: a live one (this version or another) raises ``ReleaseRunning``, unless it is this
    version held by ``owner`` itself (a retry of the same task, after a transient fault, takes its own lease
    over); an interrupted other version is closed as failed, an interrupted same version resumed. The
    project's row lock serialises concurrent starts; the constraint ``one_building_release_per_project``
    holds without it."""
    try:
        with transaction.atomic():
            Project.objects.select_for_update().filter(pk=project.pk).exists()
            live = (
                Release.objects.select_related("project")
                .filter(project=project, status=Release.Status.BUILDING)
                .first()
            )
            own = live is not None and bool(owner) and live.lease_owner == owner and live.version == version
            if live is not None and not live.interrupted and not own:
                raise ReleaseRunning(live)
            if live is not None and live.version != version:
                live.status, live.error = (
                    Release.Status.FAILED,
                    "interrupted: its process stopped before it was written",
                )
                live.save(update_fields=["status", "error"])
            release, _ = Release.objects.get_or_create(
                project=project,
                version=version,
                defaults={"created_by": user if getattr(user, "pk", None) else None},
            )
            if release.status == Release.Status.READY:
                raise ReleaseError(f"version {version} is released; write it again with release_create")
            release.status, release.lease_expires_at = Release.Status.BUILDING, _release_lease_end()
            release.lease_owner = owner
            release.save(update_fields=["status", "lease_expires_at", "lease_owner"])
            return release
    except IntegrityError:  # a concurrent start won (the constraint, where the lock did not serialise)
        live = Release.objects.select_related("project").filter(project=project, status=Release.Status.BUILDING).first()
        if live is None:
            raise
        raise ReleaseRunning(live) from None


def _release_progress(release: Release, **fields) -> None:
    for key, value in fields.items():
        setattr(release, key, value)
    release.save(update_fields=list(fields))


class _SystemStore:
    """Pseudo systems of a release written to the database as they are drawn, in batches (a release of
    200 directions has tens of thousands, each with thousands of triplet ids). Rows of an earlier,
    failed attempt are removed first; a failed attempt removes its own."""

    # Held before a flush: triplet ids (a multilingual system has 102 per direction), and systems (a
    # monolingual one has 102 ids, but each is also a model instance). With ids alone, a release of 9
    # directions never filled a batch of monolingual systems where one of 90 directions did (1,960 held at
    # once); these bounds took 10 MB off the peak at 90 directions (docs/release-memory.md).
    BATCH_IDS = 50_000
    BATCH_SYSTEMS = 250

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
        if self.pending_ids >= self.BATCH_IDS or len(self.pending) >= self.BATCH_SYSTEMS:
            self.flush()

    def flush(self) -> None:
        bulk.insert_objects(PseudoSystem, self.pending)
        self.pending, self.pending_ids = [], 0

    def discard(self) -> None:
        self.pending, self.pending_ids = [], 0
        PseudoSystem.objects.filter(release=self.release).delete()


def release_version_check(*, project: Project, version: str) -> None:
    """A new version must be a semantic version (#46): ``ReleaseError`` says why not. A version released
    before the rule keeps its name (written again as it was)."""
    problem = versions.version_problem(version)
    if problem and not Release.objects.filter(project=project, version=version).exists():
        raise ReleaseError(problem)


def release_request_check(*, project: Project, version: str, push_repo: str = "", formats=()) -> None:
    """Refuse a release request from the UI that cannot be carried out, before anything is queued."""
    release_version_check(project=project, version=version)
    _validate_release_request(version, formats)
    if push_repo and not HUB_REPO_RE.match(push_repo):
        raise ReleaseError(f"Hub repo {push_repo!r}: expected 'namespace/name'")


def push_prepare(*, release: Release, repo_id: str) -> None:
    """Check a push request from the UI and mark the release as queued for pushing."""
    if not HUB_REPO_RE.match(repo_id or ""):
        raise ReleaseError(f"Hub repo {repo_id!r}: expected 'namespace/name'")
    if release.status != Release.Status.READY:
        raise ReleaseError(f"{release} is not ready (status {release.status})")
    if release.push_status == "pushing":  # a double click: the first push is queued or running
        raise ReleaseError(f"{release} is already being pushed to {release.hub_repo}")
    _release_progress(release, hub_repo=repo_id, push_status="pushing", stage="push queued", progress=0)


def push_refusal_record(*, release: Release, reason: str) -> None:
    """A queued push that the worker refused before reaching the Hub (no ``HF_TOKEN`` in its environment,
    files missing or changed): recorded like a Hub failure, so the release does not stay ``pushing`` (which
    hides the push button) and the page shows why."""
    release.refresh_from_db(fields=["push_status"])
    if release.push_status == "pushing":
        _release_progress(release, push_status="failed", stage="push failed", error=token_remove(text=reason))


# ---- the Hugging Face Hub ------------------------------------------------------------------------------

HUB_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
CARD_FILES = ("README.md", "manifest.json")


class HubPushError(ReleaseError):
    """A push that the Hub or the network refused. Its text has the token cut out and it carries no cause
    (the original may quote the credentials, and tracebacks reach logs and the result backend);
    ``transient``: a network fault, a Hub 5xx or 429, worth retrying (``scoring.faults.is_transient``)."""

    code = "hub_push_refused"

    def __init__(self, message: str, transient: bool = False):  # one positional argument: rebuilt from a result backend
        super().__init__(message)
        self.transient = transient


def token_remove(*, text: str) -> str:
    """``text`` with the Hub token (``HF_TOKEN``) cut out: failure texts are stored on the release and shown,
    and a Hub, proxy or client error may quote the credentials it was sent."""
    import os

    token = os.environ.get("HF_TOKEN", "")
    return text.replace(token, "[redacted]") if token else text


def _hub_additions(api, repo_id: str, files: storage.ReleaseFiles, manifest: dict, names) -> list:
    """The Hub commit operations adding ``names`` of a release, one file at a time: each is checked against
    the manifest's sha256 on the very bytes sent (a local copy when the release is in object storage), and
    preuploaded while its copy exists; LFS files go to the Hub then (the client sends none it already holds
    and frees them), small "regular" files are kept in memory for the commit, which carries them inline."""
    from huggingface_hub import CommitOperationAdd

    additions = []
    for rel in names:
        with files.local_copy(rel) as path:
            expected = manifest["files"].get(rel, {}).get("sha256")  # manifest.json lists itself nowhere
            if expected is not None and release_files.sha256_file(path) != expected:
                raise ReleaseError(f"{files.describe(rel)}: sha256 differs from the manifest; export it again")
            addition = CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(path))
            api.preupload_lfs_files(repo_id, additions=[addition], repo_type="dataset")
            if not files.local and addition.path_or_fileobj != b"":  # not uploaded yet and its copy goes now
                addition.path_or_fileobj = path.read_bytes()
        additions.append(addition)
    return additions


def release_push(*, release: Release, repo_id: str, private: bool = True, progress=None) -> Release:
    """Push a written release to a Hub dataset repo and record the revision.

    The token comes from ``HF_TOKEN`` (never stored), the endpoint from ``HF_ENDPOINT`` when set. Resumable:
    a version already tagged on the repo is only recorded; otherwise the data files go in a first commit
    (files already on the Hub with the same content are skipped by the client), then the dataset card and
    manifest in a second one, so a repo never shows a card for data it does not hold; the commit is tagged
    with the version."""
    import os

    from huggingface_hub import HfApi

    if not HUB_REPO_RE.match(repo_id or ""):
        raise ReleaseError(f"Hub repo {repo_id!r}: expected 'namespace/name'")
    if release.status != Release.Status.READY:
        raise ReleaseError(f"{release} is not ready (status {release.status}); write it first")
    token = os.environ.get("HF_TOKEN")
    if not token:
        raise ReleaseError("HF_TOKEN is not set in the environment")
    # read through the storage: the bucket when the release was published there (a worker on another host
    # has no copy of the builder's directory), else the release's own directory
    files = storage.ReleaseFiles.for_release(release)
    if files is None or not files.exists("manifest.json"):
        raise ReleaseError(f"{release}: no files at {release.path}; export it again with the release command")
    manifest = json.loads(files.read_bytes("manifest.json"))
    problems = [
        f"{p}: missing" if not files.exists(p) else f"{p}: size differs from the manifest"
        for p, info in sorted(manifest["files"].items())
        if not files.exists(p) or ("bytes" in info and files.size(p) != info["bytes"])
    ]
    if problems:
        where = files.describe("manifest.json").rsplit("/", 1)[0]
        raise ReleaseError(f"{release}: files at {where} differ from the manifest: {'; '.join(problems[:5])}")
    step = progress or (lambda stage, pct: None)
    _release_progress(
        release, hub_repo=repo_id, push_status="pushing", stage="pushing: creating repo", progress=0, error=""
    )
    endpoint = os.environ.get("HF_ENDPOINT") or None
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        tag = next(
            (t for t in api.list_repo_refs(repo_id, repo_type="dataset").tags if t.name == release.version), None
        )
        if tag is not None:
            revision = tag.target_commit
        else:
            data_files = sorted(p for p in manifest["files"] if p not in CARD_FILES)
            _release_progress(release, stage="pushing: data files", progress=10)
            step("data files", 10)
            api.create_commit(
                repo_id,
                _hub_additions(api, repo_id, files, manifest, data_files),
                commit_message=f"{release.project.name} {release.version}: data files",
                repo_type="dataset",
            )
            _release_progress(release, stage="pushing: dataset card", progress=80)
            step("dataset card", 80)
            commit = api.create_commit(
                repo_id,
                _hub_additions(api, repo_id, files, manifest, CARD_FILES),
                commit_message=f"{release.project.name} {release.version}: dataset card and manifest",
                commit_description=f"content hash {release.content_hash}",
                repo_type="dataset",
            )
            revision = commit.oid
            api.create_tag(
                repo_id,
                tag=release.version,
                revision=revision,
                tag_message=f"content hash {release.content_hash}",
                repo_type="dataset",
            )
    except ReleaseError as exc:  # a file that differs from the manifest: refused, not a Hub fault
        _release_progress(release, push_status="failed", stage="push failed", error=str(exc))
        raise
    except Exception as exc:
        message = token_remove(text=f"push to {repo_id}: {type(exc).__name__}: {exc}")
        _release_progress(release, push_status="failed", stage="push failed", error=message)
        raise HubPushError(message, transient=is_transient(exc)) from None
    _release_progress(
        release,
        hub_revision=revision,
        push_status="pushed",
        pushed_at=timezone.now(),
        stage="pushed",
        progress=100,
        error="",
    )
    step("pushed", 100)
    return release


# ---- directions staged by release workers over HTTP (RELEASE_WORKERS=http; exports.release.api) ---------
# A release worker shares nothing with the platform but the broker and HTTP: it reads a direction's rows
# here, stages the direction on its own disk with the same writer, and uploads it; the platform checks the
# upload, moves it into the release's staging directory and records the direction done, as
# ``release_direction_run`` does on the shared file system. ``release_finish`` then closes the release.

STAGED_ERROR_MAX_CHARS = 2000


def release_job_record(*, job: ReleaseJob) -> None:
    """Record the staged build handed to release workers: where the platform stages it and its formats,
    what their uploads are checked against."""
    Release.objects.filter(pk=job.release_id).update(job={"out_dir": job.out_dir, "formats": list(job.formats)})


def _release_for_workers(release_id: int, direction: str) -> Release:
    release = Release.objects.select_related("project").filter(pk=release_id).first()
    if release is None:
        raise NotFound("no such release", "release")
    if release.status != Release.Status.BUILDING or not release.job:
        raise StagedConflict(
            "release", f"release {release.pk} is not being built by release workers (status {release.status})"
        )
    if direction not in (release.directions or {}):
        raise StagedRefused("direction", f"release {release.pk} stages no direction {direction!r}")
    return release


def direction_rows_read(*, release_id: int, direction: str, worker) -> tuple[dict, object]:
    """(header, rows) for a release worker staging ``direction``: the header says what it is staged from
    (release, version, formats, the build stamp), the rows are ``iter_triplet_rows``'s, streamed. The
    direction is recorded as running on that worker (one already staged from the current build is left
    done: a task delivered again only sends the same files)."""
    release = _release_for_workers(release_id, direction)
    project = release.project
    stamp = _direction_stamp(project, direction)
    entry = release.directions[direction]
    if not (entry.get("status") == "done" and entry.get("stamp") == stamp):
        _record_direction(
            release, direction, {"status": "running", "error": "", "worker": worker.name}, total=len(release.directions)
        )
    header = {
        "release": release.pk,
        "version": release.version,
        "project": project.name,
        "direction": direction,
        "formats": list(release.job["formats"]),
        "stamp": stamp,
    }
    return header, release_selectors.iter_triplet_rows(project, direction)


def direction_staged_receive(
    *, release_id: int, direction: str, declared_sha256: str, body, length: int, worker
) -> tuple[object, bool]:
    """Take a staged direction a release worker uploads (``body``: a stream of ``length`` bytes, the archive
    of ``staged_upload.archive_write``), check it and move it into the release's staging directory.

    Refuses (naming the field) a body that is not ``length`` bytes or past ``RELEASE_UPLOAD_MAX_BYTES``, whose
    sha256 is not the declared one, an archive that does not hold the direction's files or whose files do
    not match its summary (``staged_upload.archive_unpack``); a release not being built by release workers
    or without this direction; rows read from a build that has changed since (``stamp``). Idempotent by
    content: an archive already taken answers (its upload, False) and writes nothing. Returns (the
    ``StagedUpload`` recorded with the worker, whether the files were stored now)."""
    declared = (declared_sha256 or "").strip().lower()
    if len(declared) != 64 or any(c not in "0123456789abcdef" for c in declared):
        raise StagedRefused("sha256", "declare the archive's sha256 (64 hex digits) in the X-Staged-SHA256 header")
    release = _release_for_workers(release_id, direction)
    limit = settings.RELEASE_UPLOAD_MAX_BYTES
    if length > limit:
        raise StagedRefused("size", f"a staged direction may have at most {limit} bytes, this one declares {length}")
    formats = list(release.job["formats"])
    out_dir = Path(release.job["out_dir"])
    staged = staging_files_get(project_name=release.project.name, version=release.version, out_dir=out_dir)
    staging = _staged_source(staged)
    # on the file system beside the staging directory (same file system: storing is a rename)
    incoming = (
        out_dir.parent / f".{out_dir.name}.incoming"
        if staged.local
        else Path(tempfile.gettempdir()) / "xqmeval-release-incoming"
    )
    for attempt in range(3):
        incoming.mkdir(parents=True, exist_ok=True)
        try:
            work = Path(tempfile.mkdtemp(prefix=f"{direction}-", dir=incoming))
            break
        except FileNotFoundError:  # another upload removed the folder once it was empty: make it again
            if attempt == 2:
                raise
    try:
        archive = work / "staged.tar.gz"
        with open(archive, "wb") as out:
            sha256, received = body_copy(body, out, length=length)
        if received != length:  # the worker was cut off mid-upload: keep nothing of it
            raise StagedRefused("body", f"received {received} of the {length} bytes declared")
        if sha256 != declared:
            raise StagedRefused("sha256", f"the body's sha256 is {sha256}, the upload declares {declared}")
        existing = StagedUpload.objects.filter(release=release, direction=direction, sha256=declared).first()
        entry = release.directions.get(direction) or {}
        if (
            existing is not None
            and entry.get("status") == "done"
            and entry.get("digest") == existing.digest
            and release_files.staged_direction(staging, direction) is not None
        ):
            return existing, False
        summary = staged_upload.archive_unpack(
            archive,
            work / "files",
            direction=direction,
            formats=formats,
            max_unpacked=settings.RELEASE_UPLOAD_MAX_UNPACKED_BYTES,
        )
        if summary.get("stamp") != _direction_stamp(release.project, direction):
            raise StagedConflict(
                "stamp",
                f"{direction} was staged from rows of an earlier build; the build changed since: run the release again",
            )
        with transaction.atomic():
            row = Release.objects.select_for_update().get(pk=release.pk)
            if row.status != Release.Status.BUILDING:
                raise StagedConflict("release", f"release {row.pk} is no longer being built (status {row.status})")
            now = (row.directions or {}).get(direction) or {}
            stored = not (
                now.get("status") == "done"
                and now.get("digest") == summary["digest"]
                and now.get("stamp") == summary["stamp"]
                and release_files.staged_direction(staging, direction) is not None
            )
            if stored:  # nothing of an earlier attempt stays; the summary last
                staged.direction_save(work / "files", direction, staged_upload.archive_members(direction, formats))
                entry = {
                    "status": "done",
                    "triplets": summary["triplets"],
                    "transplanted": summary["transplanted"],
                    "digest": summary["digest"],
                    "stamp": summary["stamp"],
                    "error": "",
                    "worker": worker.name,
                }
                _record_direction(release, direction, entry, total=len(row.directions))
            upload, _ = StagedUpload.objects.get_or_create(
                release=row,
                direction=direction,
                sha256=declared,
                defaults={"worker": worker, "size": received, "digest": summary["digest"]},
            )
        return upload, stored
    finally:
        shutil.rmtree(work, ignore_errors=True)
        with contextlib.suppress(OSError):
            incoming.rmdir()  # when no other upload is under way


def direction_failure_record(*, release_id: int, direction: str, status: str, error: str, worker) -> None:
    """A release worker says its direction failed for good (the release fails, naming it, as on the shared
    file system) or is tried again after a transient fault. A direction already staged keeps its files."""
    if status not in ("failed", "retrying"):
        raise StagedRefused("status", f"status {status!r}: say 'failed' or 'retrying'")
    release = _release_for_workers(release_id, direction)
    if (release.directions[direction] or {}).get("status") == "done":
        raise StagedConflict("direction", f"{direction} is staged; a report of another attempt changes nothing")
    reason = f"{(error or '').strip()[:STAGED_ERROR_MAX_CHARS] or 'no reason given'} (worker {worker.name})"
    if status == "retrying":
        with transaction.atomic():
            row = Release.objects.select_for_update().get(pk=release.pk)
            row.directions = with_entry(row.directions, direction, {"status": "retrying", "error": reason})
            row.lease_expires_at = _release_lease_end()
            row.save(update_fields=["directions", "lease_expires_at"])
        return
    _record_direction(
        release,
        direction,
        {"status": "failed", "error": reason},
        total=len(release.directions),
        failure=f"{direction}: {reason}",
    )
