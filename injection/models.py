"""Candidates (one injected error or perturbation each) and the runs that produce them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core.models import ChangeLogEntry, GoldSegment, Job, Project


class InjectionRun(Job):
    """One run of a backend over (project, directions, kinds, types, positions), or one import.

    Every candidate belongs to a run; (run, gold segment, kind, type, position) is unique, which is what
    makes a retried or resumed run exactly-once."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="injection_runs")
    name = models.CharField(max_length=200)
    backend = models.CharField(max_length=40, help_text="rule, openai, batch, vllm, or import")
    model = models.CharField(max_length=200, blank=True)
    base_url = models.CharField(max_length=500, blank=True, help_text="endpoint; never a key")
    kind = models.CharField(max_length=20, blank=True)
    directions = models.JSONField(default=list, blank=True)
    error_types = models.JSONField(default=list, blank=True)
    positions = models.JSONField(default=list, blank=True)
    parameters = models.JSONField(default=dict, blank=True, help_text="temperature, seed, concurrency, rpm, …")
    # status and error: from core.models.Job
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    # The worker executing the run holds a lease it renews while it works: a task redelivered by the broker
    # while that worker still runs finds the lease live and does not send every request a second time.
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="run_unique_name")]

    def __str__(self) -> str:
        return f"{self.project.name}/{self.name}"

    @property
    def percent(self) -> int:
        return (
            int(100 * (self.done + self.failed) / self.total)
            if self.total
            else (100 if self.status == self.Status.DONE else 0)
        )


class Candidate(models.Model):
    """A copy of the reference with exactly one injected error or perturbation."""

    class Kind(models.TextChoices):
        MQM = "mqm", "MQM error"
        PERTURBATION = "perturbation", "perturbation"

    class Position(models.TextChoices):
        HEAD = "head"
        END = "end"
        NONE = "none"

    class Severity(models.TextChoices):
        MINOR = "minor"
        MAJOR = "major"
        CRITICAL = "critical"

    class Status(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        REJECTED = "rejected"
        EXCLUDED = "excluded"

    # db_index=False where a composite index or unique constraint leads with the column: each index is written
    # on every insert (COPY imports, merges), so a redundant one costs writes and reads nothing
    run = models.ForeignKey(
        InjectionRun, on_delete=models.CASCADE, related_name="candidates", db_index=False
    )  # candidate_exactly_once
    segment = models.ForeignKey(GoldSegment, on_delete=models.CASCADE, related_name="candidates")
    external_id = models.CharField(max_length=100, blank=True, help_text="id in an imported file (XQ-MEval count_id)")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.MQM)
    error_type = models.CharField(max_length=40)
    position = models.CharField(max_length=8, choices=Position.choices, default=Position.NONE)
    severity = models.CharField(max_length=10, choices=Severity.choices, default=Severity.MAJOR)
    text = models.TextField(help_text="the whole candidate sentence, without markup")
    # The edit in reference units: reference[span_start:span_end] replaced by `edit_text`.
    span_start = models.PositiveIntegerField()
    span_end = models.PositiveIntegerField()
    edit_text = models.TextField(blank=True, help_text="the candidate's units inside the span (empty for a deletion)")
    # Provenance
    backend = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=60, blank=True)
    sampling = models.JSONField(default=dict, blank=True, help_text="temperature, seed, …")
    raw_output = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    # Automatic checks: {"name": {"passed": bool, "detail": str}}; failed names also in `flags` for filtering.
    checks = models.JSONField(default=dict, blank=True)
    flags = models.JSONField(default=list, blank=True)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING, db_index=False
    )  # (status, error_type)
    status_reason = models.TextField(blank=True, help_text="why excluded or how the status was decided")
    is_gold = models.BooleanField(default=False, help_text="a planted quality-control item; never enters the pool")
    gold_answer = models.CharField(max_length=10, blank=True, help_text="accept or reject, for gold items")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["segment_id", "kind", "error_type", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "segment", "kind", "error_type", "position"], name="candidate_exactly_once"
            ),
            models.CheckConstraint(
                condition=models.Q(span_end__gte=models.F("span_start")), name="candidate_span_ordered"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "error_type"]),
            # the flagged candidates only (most pass every check): flag counts and flag filters read these
            models.Index(fields=["run"], condition=~models.Q(flags=[]), name="candidate_flagged"),
            # the planted gold items only (a few per cent): the annotator-quality page's gold overview
            models.Index(fields=["segment"], condition=models.Q(is_gold=True), name="candidate_gold"),
            # the perturbations only: with candidate_gold, what the review counters' accepted count holds
            # beyond the benchmark's pool (annotation.review.selectors.pool_counts)
            models.Index(fields=["segment"], condition=~models.Q(kind="mqm"), name="candidate_not_mqm"),
        ]

    def __str__(self) -> str:
        return f"{self.segment} {self.error_type}/{self.position}"

    @property
    def has_warnings(self) -> bool:
        return bool(self.flags)


class InjectionItem(models.Model):
    """One unit of work of a run: (segment, kind, type, position). Its status makes runs resumable."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        FAILED = "failed"

    run = models.ForeignKey(
        InjectionRun, on_delete=models.CASCADE, related_name="items", db_index=False
    )  # (run, status), item_unique_work
    segment = models.ForeignKey(GoldSegment, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20)
    error_type = models.CharField(max_length=40)
    position = models.CharField(max_length=8)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    retryable = models.BooleanField(default=False, help_text="the last failure was transient (429, 5xx, timeout)")
    raw_output = models.TextField(blank=True, help_text="the answer of a failed attempt, for diagnosis")
    prompt_version = models.CharField(max_length=60, blank=True)
    # Tokens and cost of every attempt of this item (failed ones cost too); run totals sum these.
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    candidate = models.OneToOneField(Candidate, null=True, blank=True, on_delete=models.SET_NULL, related_name="item")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "segment", "kind", "error_type", "position"], name="item_unique_work"
            )
        ]
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.segment_id} {self.error_type}/{self.position}: {self.status}"


class FlagChange(ChangeLogEntry):
    """A statement changed what the candidates' flag counts are computed from: written by PostgreSQL
    triggers (``injection.changes_sql``), insert-only, read as a token by ``selectors.flag_counts``.
    ``project_id`` None: every project."""

    kind = "flag change"

    class Meta:
        indexes = [models.Index(fields=["project_id", "id"], name="flag_change_by_project")]
