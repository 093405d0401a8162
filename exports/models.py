"""Pseudo translations, pseudo systems, releases, and metric scores of releases."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from core.models import ChangeLogEntry, Direction, GoldSegment, Job, JobStatus, Project
from injection.models import Candidate


class PseudoTranslation(models.Model):
    """A reference with k accepted, non-conflicting candidates spliced in (k = 0 is the reference)."""

    segment = models.ForeignKey(
        GoldSegment, on_delete=models.CASCADE, related_name="pseudo_translations", db_index=False
    )  # (segment, level), pseudo_unique_combination
    level = models.PositiveSmallIntegerField(help_text="k, the number of major errors")
    key = models.CharField(max_length=400, help_text="sorted constituent candidate ids, e.g. '12-40-77'")
    text = models.TextField()
    marked_text = models.TextField(help_text="edits marked <v>…</v>")
    candidates = models.ManyToManyField(Candidate, blank=True, related_name="pseudo_translations")
    error_types = models.JSONField(default=list)
    mqm_penalty = models.PositiveSmallIntegerField(help_text="5 per major error")
    spans = models.JSONField(
        default=list, help_text="per edit: type, ref [start, end), own [start, end), flags when any"
    )
    flags = models.JSONField(
        default=list,
        blank=True,
        help_text="'transplanted' when an edit comes from a candidate whose text outside its span drifts from the reference",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["segment_id", "level", "key"]
        constraints = [models.UniqueConstraint(fields=["segment", "key"], name="pseudo_unique_combination")]
        indexes = [models.Index(fields=["segment", "level"])]

    def __str__(self) -> str:
        return f"pseudo translation k={self.level} of gold pair {self.segment_id} ({self.key or 'reference'})"


class Release(models.Model):
    """An immutable, versioned benchmark release."""

    class Status(models.TextChoices):
        BUILDING = "building"
        READY = "ready"
        FAILED = "failed"

    class PushStatus(models.TextChoices):
        """The Hub push, in the job vocabulary's member names (core.models.JobStatus), with the values stored
        since pushes began."""

        NONE = "", "not pushed"
        RUNNING = "pushing", "pushing"
        DONE = "pushed", "pushed"
        FAILED = "failed", "failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="releases")
    version = models.CharField(max_length=40)
    content_hash = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.BUILDING)
    path = models.CharField(max_length=500, blank=True)
    manifest = models.JSONField(default=dict, blank=True, help_text="files with their hashes, counts, sampling plan")
    hub_repo = models.CharField(max_length=200, blank=True)
    hub_revision = models.CharField(max_length=80, blank=True)
    # Progress of the build and of the Hub push, shown in the admin and on /benchmarks/.
    stage = models.CharField(max_length=40, blank=True, help_text="what the build or push is doing now")
    progress = models.PositiveSmallIntegerField(default=0, help_text="percent of the current build or push")
    error = models.TextField(blank=True, help_text="why the last build or push failed")
    directions = models.JSONField(
        default=dict,
        blank=True,
        help_text="per direction: status (pending, running, done, failed), triplets, the build stamp its files were written from, digest of its staged spool; a resumed release skips the done ones whose stamp and files still match",
    )
    push_status = models.CharField(max_length=10, blank=True, choices=PushStatus.choices, default=PushStatus.NONE)
    pushed_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Renewed while the release is written (start, each direction); as for builds, a building release whose
    # lease has passed lost its process: shown as interrupted, and the next start of it resumes it.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # The Celery task that holds the lease: a retry of that task (same id) takes its own live lease over,
    # where any other start is refused until the lease passes.
    lease_owner = models.CharField(max_length=200, blank=True)
    # Set when release workers with no shared file system stage its directions (RELEASE_WORKERS=http):
    # where the platform stages them and the formats, what an uploaded direction is checked against.
    job = models.JSONField(
        default=dict,
        blank=True,
        help_text="the staged build handed to release workers: its output directory and formats",
    )

    class Meta:
        ordering = ["project", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["project", "version"], name="release_unique_version"),
            # one release of a project written at a time (exports.release.services.release_begin)
            models.UniqueConstraint(
                fields=["project"], condition=models.Q(status="building"), name="one_building_release_per_project"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project.name}@{self.version}"

    @property
    def interrupted(self) -> bool:
        """Being built by its status, but no process has renewed its lease in time: that process died."""
        return self.status == self.Status.BUILDING and (
            self.lease_expires_at is None or self.lease_expires_at <= timezone.now()
        )

    @property
    def push_error(self) -> str:
        """``error`` when it is the Hub push's (a written release whose push failed), shown beside the push."""
        return self.error if self.status == self.Status.READY and self.push_status == self.PushStatus.FAILED else ""

    @property
    def build_error(self) -> str:
        """``error`` when it is the writing's (a release not written), shown beside its status."""
        return "" if self.status == self.Status.READY else self.error


class MergedSegment(models.Model):
    """Which pool a gold pair's pseudo translations were built from: rebuilding skips unchanged pairs."""

    segment = models.OneToOneField(GoldSegment, on_delete=models.CASCADE, related_name="merge_state")
    fingerprint = models.CharField(max_length=64, help_text="sha256 of the reference, max_errors and the placed pool")
    pseudo_count = models.PositiveIntegerField(default=0)
    built_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"gold pair {self.segment_id}: {self.pseudo_count} pseudo translations"


class CandidatePlacement(models.Model):
    """What the latest build did with a pool candidate that it did not place as it stands: excluded (no span
    of the reference takes its edit), or transplanted (its edit placed at ``span_start``–``span_end`` of the
    reference, in reference units, although its text outside the span drifts from the reference).

    The benchmark stage's own record, written only by the build (``exports.benchmark.services``); the
    candidate row keeps what injection and review decided. A pool candidate without a row was placed as it
    stands (its pseudo translations link it). Each build rewrites the rows of the directions it merges."""

    class Outcome(models.TextChoices):
        EXCLUDED = "excluded"
        TRANSPLANTED = "transplanted"

    candidate = models.OneToOneField(Candidate, on_delete=models.CASCADE, primary_key=True, related_name="placement")
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    reason = models.TextField(blank=True, help_text="why the merge cannot place it (excluded)")
    drift = models.TextField(
        blank=True, help_text="how its text outside the span differs from the reference (transplanted)"
    )
    span_start = models.PositiveIntegerField(
        null=True, blank=True, help_text="where its edit was placed (transplanted)"
    )
    span_end = models.PositiveIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"candidate {self.candidate_id}: {self.outcome}"


class BenchmarkBuild(Job):
    """One merge of a project's pool into pseudo translations (progress, outcome, counts)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="benchmark_builds")
    # The project's own count, what pages and messages say ("Build 1" for a project's first build, #46);
    # the id stays the key of URLs and tasks. Given by build_create under the project's lock.
    number = models.PositiveIntegerField(default=0, help_text="the build's number within its project (1, 2, …)")
    # status and error: from core.models.Job
    total_segments = models.PositiveIntegerField(default=0)
    done_segments = models.PositiveIntegerField(default=0)
    rebuilt_segments = models.PositiveIntegerField(default=0)
    pseudo_created = models.PositiveIntegerField(default=0)
    excluded = models.PositiveIntegerField(default=0, help_text="candidates excluded as unplaceable")
    transplanted = models.PositiveIntegerField(
        default=0, help_text="candidates placed by transplanting their edit (drift outside the span)"
    )
    counts = models.JSONField(
        default=dict, blank=True, help_text="per direction and level: total, min and max per gold pair"
    )
    directions = models.JSONField(
        default=dict,
        blank=True,
        help_text="per direction: status (pending, running, done, failed), gold pairs, rebuilt, pseudo translations written, excluded, transplanted; a resumed build skips the done ones",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Renewed while the build works (start, each direction); a live build whose lease has passed lost its
    # process (a killed worker or server) and is shown as interrupted; starting a build resumes it.
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    LIVE = (JobStatus.PENDING, JobStatus.RUNNING)
    acknowledged = models.JSONField(
        default=list,
        blank=True,
        help_text="what the admin confirmed building with: the directions that were undecided or empty, one line each",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # one build per project at a time, on every database (exports.benchmark.services.build_create)
            models.UniqueConstraint(
                fields=["project"],
                condition=models.Q(status__in=["pending", "running"]),
                name="one_live_build_per_project",
            ),
            models.UniqueConstraint(
                fields=["project", "number"], condition=models.Q(number__gt=0), name="build_number_per_project"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project.name} build {self.number} ({self.status})"

    @property
    def interrupted(self) -> bool:
        """Live by its status, but no process has renewed its lease in time (or ever took one, as builds recorded
        before leases): the process running it died."""
        return self.status in self.LIVE and (self.lease_expires_at is None or self.lease_expires_at <= timezone.now())

    @property
    def percent(self) -> int:
        return (
            int(100 * self.done_segments / self.total_segments)
            if self.total_segments
            else (100 if self.status == "done" else 0)
        )


class PseudoSystem(models.Model):
    """A set of triplets standing for one system of predetermined quality (SPEC §7)."""

    class Kind(models.TextChoices):
        MONOLINGUAL = "monolingual"
        MULTILINGUAL = "multilingual"

    release = models.ForeignKey(Release, null=True, blank=True, on_delete=models.CASCADE, related_name="pseudo_systems")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="pseudo_systems")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=200)
    direction = models.ForeignKey(Direction, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    level = models.PositiveSmallIntegerField(null=True, blank=True)
    level_mix = models.JSONField(default=dict, blank=True, help_text="level -> number of triplets per direction")
    repetition = models.PositiveIntegerField(default=0)
    seed = models.BigIntegerField()
    human_score = models.FloatField(help_text="predetermined: mean of −5·k over its triplets")
    triplet_ids = models.JSONField(default=list)

    def __str__(self) -> str:
        return self.name


class MetricScore(models.Model):
    """A metric's score of one triplet of a release, ingested from a scoring worker's files."""

    release = models.ForeignKey(
        Release, on_delete=models.CASCADE, related_name="metric_scores", db_index=False
    )  # score_unique_triplet
    metric = models.CharField(max_length=80)
    direction = models.ForeignKey(Direction, on_delete=models.PROTECT, related_name="+")
    triplet_id = models.CharField(max_length=200)
    level = models.PositiveSmallIntegerField(null=True, blank=True)
    score = models.FloatField()
    signature = models.JSONField(default=dict, blank=True)
    # The error spans the metric marked, [[start, end], …] character offsets in the pseudo translation;
    # null for metrics that mark none (and for part files written before spans were kept).
    spans = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["release", "metric", "direction", "triplet_id"], name="score_unique_triplet"
            )
        ]
        # (release, metric, direction) lookups use score_unique_triplet, which leads with the three

    def __str__(self) -> str:
        return f"{self.metric} of {self.triplet_id}: {self.score}"


class ScoreSummary(models.Model):
    """Per release, metric, direction and level: how many scores there are and their sum. Written with the
    scores, in their transaction (``exports.scores.services.scores_summarize``, called by the ingest), so
    the pages read these few rows instead of a grouped pass over the scores (hundreds of millions at
    FLORES size).
    A re-ingest replaces them: new ids, so the newest id and the count also key what is computed from
    the scores (the meta-evaluation's cache)."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="score_summaries")
    metric = models.CharField(max_length=80)
    direction = models.ForeignKey(Direction, on_delete=models.PROTECT, related_name="+")
    level = models.PositiveSmallIntegerField(null=True, blank=True)
    n = models.PositiveIntegerField()
    total = models.FloatField(help_text="the sum of the scores (their mean is total / n)")

    class Meta:
        verbose_name_plural = "score summaries"
        constraints = [
            models.UniqueConstraint(fields=["release", "metric", "direction", "level"], name="score_summary_unique")
        ]

    def __str__(self) -> str:
        return f"{self.metric}, direction {self.direction_id}, level {self.level}: {self.n} scores"


class ScoringJob(Job):
    """One (release, metric, direction) task on the gpu queue."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="scoring_jobs")
    metric = models.CharField(max_length=80)
    direction = models.ForeignKey(Direction, on_delete=models.PROTECT, related_name="+")
    # status and error: from core.models.Job; live progress is in the result backend (exports.scores.selectors)
    output_path = models.CharField(max_length=500, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["release", "metric", "direction"], name="scoring_job_unique")]

    @property
    def percent(self) -> int:
        return 100 if self.status == self.Status.DONE else 0

    def __str__(self) -> str:
        return f"{self.metric} on release {self.release_id}, direction {self.direction_id}: {self.status}"


class BenchmarkChange(ChangeLogEntry):
    """A statement changed what the benchmark's counts per direction and level are computed from: written
    by PostgreSQL triggers (``exports.benchmark.changes_sql``), insert-only, read as a token by the pages
    (``exports.benchmark.selectors.current_level_counts``). ``project_id`` None: every project."""

    kind = "benchmark change"

    class Meta:
        indexes = [models.Index(fields=["project_id", "id"], name="benchmark_change_by_project")]


class WorkerToken(models.Model):
    """A worker's credential for the worker endpoints only (``exports.workers.api``; with the job token its
    task carries, ``exports.workers.grants``): created and revoked by an admin, shown once, stored as its
    sha256 (a random 256-bit secret needs no slow hash)."""

    name = models.CharField(max_length=100, help_text="which worker: a machine, a cluster job, a cloud box")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=16, editable=False, help_text="the token's first characters, to tell it apart")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class PartUpload(models.Model):
    """A part file a worker uploaded for a scoring job: content-addressed (its sha256), stored through the
    ``worker_parts`` storage, and recorded with the worker that sent it."""

    job = models.ForeignKey(ScoringJob, on_delete=models.CASCADE, related_name="uploads")
    worker = models.ForeignKey(WorkerToken, on_delete=models.PROTECT, related_name="uploads")
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    storage_name = models.CharField(max_length=500)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "sha256"], name="part_upload_unique_content")]

    def __str__(self) -> str:
        return f"part {self.sha256[:12]}… of scoring job {self.job_id} from worker {self.worker_id}"


class StagedUpload(models.Model):
    """A release direction a release worker staged on its own disk and uploaded (``exports.workers.api``):
    content-addressed (the archive's sha256), recorded with the worker that sent it."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="staged_uploads")
    direction = models.CharField(max_length=40)
    worker = models.ForeignKey(WorkerToken, on_delete=models.PROTECT, related_name="staged_uploads")
    sha256 = models.CharField(max_length=64, help_text="of the uploaded archive")
    size = models.BigIntegerField()
    digest = models.CharField(max_length=64, help_text="sha256 of the direction's share of the content hash")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["release", "direction", "sha256"], name="staged_upload_unique_content")
        ]

    def __str__(self) -> str:
        return f"{self.direction} of release {self.release_id} ({self.sha256[:12]}…) from worker {self.worker_id}"
