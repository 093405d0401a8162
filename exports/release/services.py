"""Write operations of the release stage: sampling pseudo systems, writing release files, Hub pushes.

Thin over the pure ``exports.release.domain`` (``sampling``, SPEC §7; ``release_files``, layout and bytes);
this module only reads and writes the database. Starting a release or a push on the worker is
``exports.release.tasks.start_release`` / ``start_push``, which call ``check_release_request`` /
``prepare_push`` here first.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import bulk
from core.models import Direction, Project
from exports.benchmark import selectors
from exports.models import PseudoSystem, Release
from exports.release.domain import release_files, sampling
from exports.release.domain.release_files import ReleaseContent
from exports.release.domain.sampling import SamplingPlan

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


def check_release_request(*, project: Project, version: str, push_repo: str = "") -> None:
    """Refuse a release request from the UI that cannot be carried out, before anything is queued."""
    if not VERSION_RE.match(version or ""):
        raise ReleaseError(f"version {version!r}: use letters, digits, '.', '_', '+', '-' (at most 40, e.g. 1.0.0)")
    if push_repo and not HUB_REPO_RE.match(push_repo):
        raise ReleaseError(f"Hub repo {push_repo!r}: expected 'namespace/name'")


def prepare_push(*, release: Release, repo_id: str) -> None:
    """Check a push request from the UI and mark the release as queued for pushing."""
    if not HUB_REPO_RE.match(repo_id or ""):
        raise ReleaseError(f"Hub repo {repo_id!r}: expected 'namespace/name'")
    if release.status != Release.Status.READY:
        raise ReleaseError(f"{release} is not ready (status {release.status})")
    _release_progress(release, hub_repo=repo_id, push_status="pushing", stage="push queued", progress=0)


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
