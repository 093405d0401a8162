"""A release staged one direction at a time (a Celery chord, or in-process): where it is staged, the job a
worker carries, the lease that keeps one release of a project at a time, and each direction's record."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone

from core import storage
from core.domain.directions import first_failure, with_entry
from core.domain.errors import Conflict
from core.models import Project
from exports.benchmark import selectors
from exports.models import MergedSegment, PseudoTranslation, Release
from exports.release import selectors as release_selectors
from exports.release.domain import release_files
from exports.release.services.content import ReleaseError, _plan_data, _validate_release_request, sampling_plan_make


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


def staging_source_get(*, staged: storage.StagedFiles):
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


def direction_stamp_get(*, project: Project, direction_code: str) -> dict:
    """What a direction's staged files were written from: the project's latest build and a fingerprint of
    the direction's merge states (each gold pair's pool fingerprint, count and time written) and pseudo
    translations. A staged direction whose stamp differs from the current one is written again."""
    build = selectors.latest_build(project)
    states = MergedSegment.objects.filter(segment__project=project, segment__direction__code=direction_code).order_by(
        "segment_id"
    )
    h = hashlib.sha256()
    for seg, fingerprint, count, built_at in states.values_list(
        "segment_id", "fingerprint", "pseudo_count", "built_at"
    ).iterator(chunk_size=5000):
        h.update(f"{seg}\t{fingerprint}\t{count}\t{built_at.isoformat()}\n".encode())
    rows = PseudoTranslation.objects.filter(
        segment__project=project, segment__direction__code=direction_code
    ).aggregate(n=Count("id"), last=Max("id"))
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
    staged = _staging_make(project, version=version, out_dir=out_dir)
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
    stamps = {code: direction_stamp_get(project=project, direction_code=code) for code in directions}
    kept = _directions_kept(release, staged=staged, directions=directions, formats=formats, stamps=stamps)
    _leftovers_remove(staged, directions=directions, out_dir=out_dir)
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


def _staging_make(project: Project, *, version: str, out_dir: Path):
    """Where the release's directions are staged; a local staging directory is made now."""
    staged = staging_files_get(project_name=project.name, version=version, out_dir=out_dir)
    if staged.local:
        try:
            staged.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ReleaseError(
                f"{out_dir}: cannot create the staging directory {staged.root} ({exc.strerror})"
            ) from None
    return staged


def _directions_kept(release: Release, *, staged, directions, formats: tuple, stamps: dict) -> dict:
    """Record the release as building, a direction staged before kept (its entry) when its files are intact, in
    the same formats, and from the current build; every other is pending."""
    with transaction.atomic():
        row = Release.objects.select_for_update().get(pk=release.pk)
        kept = {}
        for code, entry in (row.directions or {}).items():
            if code in stamps and entry.get("status") == "done" and entry.get("stamp") == stamps[code]:
                summary = release_files.staged_direction(staging_source_get(staged=staged), code)
                if summary and summary["digest"] == entry.get("digest") and tuple(summary["formats"]) == formats:
                    kept[code] = entry
        row.directions = {code: kept.get(code) or {"status": "pending"} for code in directions}
        row.status, row.error, row.stage = Release.Status.BUILDING, "", "staging directions"
        row.progress = int(60 * len(kept) / len(directions))
        row.job = {}  # no release worker's upload is taken until this attempt hands its directions to them
        row.save(update_fields=["directions", "status", "error", "stage", "progress", "job"])
    return kept


def _leftovers_remove(staged, *, directions, out_dir: Path) -> None:
    """Remove what an earlier attempt left behind: folders of directions gone from the build, scratch folders."""
    # a direction no longer in the build leaves nothing behind to be moved into the release
    for stale in set(staged.folders()) - {release_files.SPOOL_DIR, "systems"} - set(directions):
        staged.delete_tree(stale)
    # scratch folders a killed attempt left beside the release (this attempt holds its lease and has made
    # none yet; release workers' uploads for the old attempt are refused since ``job`` was emptied above)
    for folder in release_files.scratch_folders(out_dir.parent, out_dir.name):
        shutil.rmtree(folder, ignore_errors=True)


def release_direction_run(*, job: ReleaseJob, direction_code: str) -> dict:
    """Stage one direction of a release (what each task of a release's chord runs): its files, its share of
    the content hash and its triplet ids, then its entry in ``Release.directions`` (``done`` means staged).
    A failure is recorded on the direction and the release, with its reason, and raised."""
    release = Release.objects.select_related("project").get(pk=job.release_id)
    direction_record(
        release=release,
        direction_code=direction_code,
        entry={"status": "running", "error": ""},
        total=len(job.directions),
    )
    try:
        stamp = direction_stamp_get(project=release.project, direction_code=direction_code)
        rows = release_selectors.iter_triplet_rows(release.project, direction_code)
        staged = _job_staged(release, job)
        # written by the release writer into a folder of its own, then stored: renamed into the staging
        # directory on the file system, uploaded to object storage
        scratch = staged.scratch(f"{Path(job.out_dir).name}.{direction_code}")
        try:
            summary = release_files.write_staged_direction(rows, direction_code, scratch, job.formats, stamp)
            staged.direction_save(scratch, direction_code, release_files.staged_names(direction_code, job.formats))
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
        direction_record(
            release=release,
            direction_code=direction_code,
            entry={"status": "failed", "error": reason},
            total=len(job.directions),
            failure=f"{direction_code}: {reason}",
        )
        raise
    direction_record(release=release, direction_code=direction_code, entry=entry, total=len(job.directions))
    return entry


def release_retry_record(*, job: ReleaseJob, direction_code: str, reason: str) -> None:
    """A direction whose staging hit a transient fault and is tried again: it says so, and the release is
    being built again (not failed) unless another direction failed for good."""
    with transaction.atomic():
        row = Release.objects.select_for_update().get(pk=job.release_id)
        row.directions = with_entry(row.directions, direction_code, {"status": "retrying", "error": reason})
        failed = first_failure(row.directions)
        row.status, row.error = (Release.Status.FAILED, failed) if failed else (Release.Status.BUILDING, "")
        row.save(update_fields=["directions", "status", "error"])


def direction_retrying_record(*, release_id: int, direction_code: str, reason: str) -> None:
    """A release worker tries its direction again after a transient fault: the direction says so and the lease
    is extended (the worker is alive); the release's status is left as it is."""
    with transaction.atomic():
        row = Release.objects.select_for_update().get(pk=release_id)
        row.directions = with_entry(row.directions, direction_code, {"status": "retrying", "error": reason})
        row.lease_expires_at = release_lease_end_get()
        row.save(update_fields=["directions", "lease_expires_at"])


def direction_record(*, release: Release, direction_code: str, entry: dict, total: int, failure: str = "") -> None:
    """Set one direction's entry (the release row is locked: directions on other workers record theirs too)."""
    with transaction.atomic():
        row = Release.objects.select_for_update().get(pk=release.pk)
        row.directions = with_entry(row.directions, direction_code, entry)
        done = sum(1 for e in row.directions.values() if e.get("status") == "done")
        row.progress, row.stage = int(60 * done / max(total, 1)), f"directions staged: {done}/{total}"
        row.lease_expires_at = release_lease_end_get()  # a direction started or ended: the process is alive
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


def release_lease_end_get():
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
            release.status, release.lease_expires_at = Release.Status.BUILDING, release_lease_end_get()
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


def release_job_record(*, job: ReleaseJob) -> None:
    """Record the staged build handed to release workers: where the platform stages it and its formats,
    what their uploads are checked against (``exports.workers.services``)."""
    Release.objects.filter(pk=job.release_id).update(job={"out_dir": job.out_dir, "formats": list(job.formats)})
