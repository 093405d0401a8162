"""Languages, directions, projects, gold segments and user roles; the status vocabulary of every job."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from core.domain.languages import CHAR, TOKEN


class Language(models.Model):
    UNIT_CHOICES = [(CHAR, "characters"), (TOKEN, "whitespace tokens")]

    code = models.CharField(max_length=16, unique=True)
    name = models.CharField(max_length=100)
    script = models.CharField(max_length=8, help_text="ISO 15924 script code, e.g. Latn, Hans, Laoo")
    unit = models.CharField(max_length=8, choices=UNIT_CHOICES, help_text="how span positions are counted")
    rtl = models.BooleanField(default=False, help_text="written right to left")

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return f"{self.code} ({self.name})"


class Direction(models.Model):
    """A translation direction, e.g. en-de."""

    source = models.ForeignKey(Language, on_delete=models.PROTECT, related_name="+")
    target = models.ForeignKey(Language, on_delete=models.PROTECT, related_name="directions_into")
    code = models.CharField(max_length=40, unique=True)

    class Meta:
        ordering = ["code"]
        constraints = [models.UniqueConstraint(fields=["source", "target"], name="direction_unique_pair")]

    def __str__(self) -> str:
        return self.code


class Project(models.Model):
    class PoolRule(models.TextChoices):
        UNANIMOUS = "unanimous", "every reviewer accepted (XQ-MEval)"
        ADJUDICATED = "adjudicated", "adjudicated decision where reviewers disagree"

    name = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    source_language = models.ForeignKey(Language, on_delete=models.PROTECT, related_name="+")
    directions = models.ManyToManyField(Direction, blank=True, related_name="projects")
    # A direction with data is retired rather than removed: hidden from imports, injection and builds, kept
    # in the releases already made. Always a subset of ``directions``.
    retired_directions = models.ManyToManyField(Direction, blank=True, related_name="+")
    error_types = models.JSONField(
        default=list, blank=True, help_text="MQM error types to inject; empty means all registered types"
    )
    reviewers_per_candidate = models.PositiveSmallIntegerField(default=2, validators=[MinValueValidator(1)])
    max_errors = models.PositiveSmallIntegerField(
        default=5,
        validators=[MinValueValidator(1), MaxValueValidator(10)],
        help_text="maximum k per pseudo translation",
    )
    pool_rule = models.CharField(max_length=20, choices=PoolRule.choices, default=PoolRule.UNANIMOUS)
    license = models.CharField(max_length=64, default="cc-by-sa-4.0")
    options = models.JSONField(default=dict, blank=True, help_text="further per-project options")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class GoldSegment(models.Model):
    """A gold pair (source, reference) of one direction in one project."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="segments", db_index=False
    )  # segment_unique_external_id
    direction = models.ForeignKey(Direction, on_delete=models.PROTECT, related_name="segments")
    external_id = models.CharField(max_length=200, help_text="id in the imported corpus, e.g. the FLORES+ line index")
    source = models.TextField()
    reference = models.TextField()
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "direction", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "direction", "external_id"], name="segment_unique_external_id")
        ]
        # (project, direction) lookups use segment_unique_external_id, which leads with both

    def __str__(self) -> str:
        return f"{self.direction.code}#{self.external_id}"


class Profile(models.Model):
    """A user's role and, for annotators, the target languages they may see and change."""

    class Role(models.TextChoices):
        ADMIN = "admin", "admin"
        ANNOTATOR = "annotator", "annotator"
        VIEWER = "viewer", "viewer"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)
    languages = models.ManyToManyField(Language, blank=True, related_name="annotators")

    def __str__(self) -> str:
        return f"{self.user.username} ({self.role})"

    @property
    def is_admin(self) -> bool:
        return self.role == self.Role.ADMIN or self.user.is_superuser


class JobStatus(models.TextChoices):
    """The one status vocabulary of long-running work: injection runs, benchmark builds and scoring jobs use
    it as is; a release's Hub push (``exports.Release.PushStatus``) uses its member names with the values
    it has always stored."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED = (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)


class Job(models.Model):
    """Abstract base of the job models: a ``JobStatus`` and the reason of the last failure. Each job keeps
    the progress counters that fit its work and reports them as ``percent``."""

    Status = JobStatus

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING, db_index=True)
    error = models.TextField(blank=True)

    class Meta:
        abstract = True

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def percent(self) -> int:
        raise NotImplementedError


class ReviewerAssignment(models.Model):
    """Who reviews which direction of which project. Once a project has any, they decide who works on its
    items; a project with none follows the annotators' languages (``Profile.languages``)."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )  # assignment_unique
    direction = models.ForeignKey(Direction, on_delete=models.PROTECT, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_assignments")

    class Meta:
        ordering = ["project", "direction", "user"]
        constraints = [models.UniqueConstraint(fields=["project", "direction", "user"], name="assignment_unique")]

    def __str__(self) -> str:
        return f"{self.user} reviews {self.project}/{self.direction}"


class CorpusImport(Job):
    """A corpus import from a Hugging Face Hub dataset, asked for on the corpus page and run as a task
    (``core.tasks.import_hub_corpus_task``), so that no request waits on the Hub (#36.4). One pending or
    running import per project and direction at a time; a running one whose lease lapsed lost its process
    (shown as interrupted, and it can be retried). The gold segments and the outcome are written in one
    transaction: an import is done with its counts, or it wrote nothing."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="corpus_imports", db_index=False)
    direction = models.ForeignKey(Direction, on_delete=models.PROTECT, related_name="+")
    # status and error (the failure's reason, one problem a line): from Job
    dataset = models.CharField(max_length=200, help_text="the Hub dataset id, namespace/name")
    config = models.CharField(max_length=200, blank=True)
    split = models.CharField(max_length=200, default="test")
    columns = models.JSONField(default=dict, help_text="the id, source and reference column names")
    check_language = models.BooleanField(default=True)
    created = models.PositiveIntegerField(default=0, help_text="gold segments written")
    unchanged = models.PositiveIntegerField(default=0, help_text="rows already imported with the same text")
    warnings = models.JSONField(default=list, blank=True)
    note = models.CharField(max_length=500, blank=True, help_text="why it is tried again, and when")
    attempts = models.PositiveSmallIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Set when the import is queued and when a process takes it (the task's id in lease_owner); a live
    # import whose lease has passed lost its process. A retry of the same task takes its own lease over.
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    LIVE = (JobStatus.PENDING, JobStatus.RUNNING)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "direction"],
                condition=models.Q(status__in=["pending", "running"]),
                name="one_live_corpus_import_per_direction",
            ),
        ]
        indexes = [models.Index(fields=["project", "-created_at"], name="corpus_import_project_recent")]

    def __str__(self) -> str:
        return f"{self.project.name}/{self.direction.code} import of {self.dataset} ({self.status})"

    @property
    def interrupted(self) -> bool:
        """Live by its status, but no process has renewed its lease in time: the process running it died."""
        return self.status in self.LIVE and (self.lease_expires_at is None or self.lease_expires_at <= timezone.now())

    @property
    def percent(self) -> int:
        return 100 if self.status == JobStatus.DONE else 0


class ChangeLogEntry(models.Model):
    """A row of a change log (``core.triggers_sql``, read through ``core.change_log``): one statement changed
    rows some figure of project ``project_id`` is computed from (None: of every project). Written by the
    log's PostgreSQL triggers only, insert-only. ``kind`` names the log."""

    kind = "change"

    project_id = models.BigIntegerField(null=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.kind} {self.pk} of project {self.project_id or 'any'}"
