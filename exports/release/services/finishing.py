"""A release finished: the staged directions assembled into the release files and recorded, and the whole
release written in this process (``release_create``), a released version written again as it was."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from django.db import transaction

from core import storage
from core.models import Project
from exports.models import Release
from exports.release.domain import release_files, sampling
from exports.release.domain.sampling import SamplingPlan
from exports.release.services.content import ReleaseError, _SystemStore, _validate_release_request, release_content_make
from exports.release.services.staging import (
    ReleaseJob,
    _job_staged,
    _release_progress,
    direction_stamp_get,
    out_dir_get,
    release_begin,
    release_direction_run,
    release_lease_end_get,
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
        entry = release_direction_run(job=job, direction_code=code)
        if on_direction:
            on_direction(code, entry)
        if progress:
            progress(f"triplets {code}", int(60 * (len(job.directions) - len(todo) + i + 1) / len(job.directions)))
    return release_finish(job=job, progress=progress)


def _export_again(release: Release, *, out_dir, formats, progress) -> Release:
    """A released version written again (another directory, formats added) in one pass, from its stored
    plan; refused unless it gives the recorded content hash."""
    project = release.project
    plan = SamplingPlan.from_dict(release.manifest["sampling_plan"])
    out_dir = Path(out_dir) if out_dir else out_dir_get(project=project, version=release.version)
    release_files.check_out_dir(out_dir, name=project.name, version=release.version)
    try:
        content = release_content_make(project=project, version=release.version, plan=plan, progress=progress)
        if "span_annotations" not in release.manifest:  # released before people annotated: not part of it
            content.span_annotations = []
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


def release_finish(*, job: ReleaseJob, progress=None) -> Release:
    """Close a release whose directions are staged (the chord's last task): check that every one is done and
    still written from the current build, hash the spools in order, draw and store the pseudo systems, write
    card and manifest, and move the staging directory into place. With the staging in object storage the
    spools are read from the bucket and the staged files pulled into a folder beside the release, which
    becomes it; the staged directions are then deleted from the bucket."""
    release = Release.objects.select_related("project").get(pk=job.release_id)
    project = release.project
    _check_staged(release, job)

    def step(stage: str, pct: int) -> None:
        _release_progress(release, stage=stage, progress=pct, lease_expires_at=release_lease_end_get())
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
    _release_ready(release, out_dir=out_dir, manifest=manifest)
    # renamed into place, or what is left after writing into an existing directory or pulling from the bucket
    staged.delete_tree()
    if assembly is not None:
        shutil.rmtree(assembly, ignore_errors=True)
    storage.release_publish(release=release)  # into object storage when configured; nothing on the file system
    return release


def _check_staged(release: Release, job: ReleaseJob) -> None:
    """Every direction of the job staged, and from the current build; else the release fails, saying which."""
    row = release.directions or {}
    missing = [code for code in job.directions if row.get(code, {}).get("status") != "done"]
    changed = [
        code
        for code in job.directions
        if code not in missing
        and row[code].get("stamp") != direction_stamp_get(project=release.project, direction_code=code)
    ]
    if missing or changed:
        reason = (
            f"directions not staged: {', '.join(missing)}"
            if missing
            else f"the build changed since {', '.join(changed)} were staged: run the release again"
        )
        _release_progress(release, status=Release.Status.FAILED, error=release.error or reason if missing else reason)
        raise ReleaseError(f"{release}: {reason}")


def _release_ready(release: Release, *, out_dir: Path, manifest: dict) -> None:
    """Record where the finished release is and what its manifest says; it is ready."""
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
