"""What a release holds: its sampling plan, its content (triplets, pseudo systems, candidate lists) and the
checks of a release request; the pseudo systems are written in batches (``_SystemStore``)."""

from __future__ import annotations

import re

from core import bulk
from core.domain.errors import Invalid
from core.models import Direction, Project
from exports.benchmark import selectors
from exports.models import PseudoSystem, Release
from exports.release import selectors as release_selectors
from exports.release.domain import release_files, sampling, versions
from exports.release.domain.release_files import ReleaseContent
from exports.release.domain.sampling import SamplingPlan

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
        span_annotations=release_selectors.span_annotation_rows(project),
    )


def _validate_release_request(version: str, formats) -> None:
    if not VERSION_RE.match(version or ""):
        raise ReleaseError(f"version {version!r}: use letters, digits, '.', '_', '+', '-' (at most 40, e.g. 1.0.0)")
    unknown = set(formats) - set(release_files.EXTRA_FORMATS)
    if unknown:
        raise ReleaseError(
            f"formats: unknown format(s) {', '.join(sorted(unknown))}; choose from {', '.join(release_files.EXTRA_FORMATS)}"
        )


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
        if draw.direction_code:
            direction = self.directions.get(draw.direction_code)
            if direction is None:
                direction = self.directions[draw.direction_code] = Direction.objects.filter(
                    code=draw.direction_code
                ).first()
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


HUB_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
