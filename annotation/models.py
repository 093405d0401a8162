"""Review decisions, review rounds and locks, Likert ratings, and the audit trail."""

from __future__ import annotations

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from annotation.review import domain as review_rules
from core.models import ChangeLogEntry, Direction, Project
from injection.models import Candidate


class ReviewRound(models.Model):
    """Round 1 reviews every candidate; a later round re-reviews a random sample, blind to round 1."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="review_rounds")
    number = models.PositiveSmallIntegerField(default=1)
    sample_size = models.PositiveIntegerField(null=True, blank=True, help_text="empty: every candidate")
    seed = models.BigIntegerField(default=0)
    candidates = models.ManyToManyField(Candidate, blank=True, related_name="sampled_in_rounds")
    is_open = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "number"]
        constraints = [models.UniqueConstraint(fields=["project", "number"], name="round_unique_number")]

    def __str__(self) -> str:
        return f"{self.project.name} round {self.number}"


class ReviewDecision(models.Model):
    """One accept/reject of one candidate by one reviewer in one round.

    Imported decisions (e.g. the released XQ-MEval screening) have no reviewer and ``source=imported``;
    an adjudication is a decision with ``source=adjudication`` by an admin."""

    class Decision(models.TextChoices):
        ACCEPT = "accept"
        REJECT = "reject"

    class Source(models.TextChoices):
        ANNOTATOR = "annotator"
        IMPORTED = "imported"
        ADJUDICATION = "adjudication"

    candidate = models.ForeignKey(
        Candidate, on_delete=models.CASCADE, related_name="decisions", db_index=False
    )  # (candidate, round)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="review_decisions",
        db_index=False,
    )  # (reviewer, round), (reviewer, created_at)
    round = models.ForeignKey(ReviewRound, null=True, blank=True, on_delete=models.CASCADE, related_name="decisions")
    decision = models.CharField(max_length=8, choices=Decision.choices)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.ANNOTATOR)
    is_final = models.BooleanField(
        default=False, help_text="decides the candidate's status by itself (imported, adjudicated)"
    )
    reason = models.CharField(max_length=60, blank=True, help_text="reason category for a rejection")
    comment = models.TextField(blank=True)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=64, null=True, blank=True, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["candidate_id", "round_id", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["candidate", "reviewer", "round"],
                condition=models.Q(reviewer__isnull=False),
                name="decision_once_per_reviewer_round",
            ),
            models.UniqueConstraint(
                fields=["candidate", "source"],
                condition=models.Q(source="imported"),
                name="decision_one_import_per_candidate",
            ),
        ]
        indexes = [
            models.Index(fields=["reviewer", "created_at"]),
            models.Index(fields=["candidate", "round"]),
            # a reviewer's "done" and a round's distinct reviewers read only that reviewer's decisions
            models.Index(fields=["reviewer", "round"]),
            # the queue's "no final decision yet": without it PostgreSQL reads every decision to find the
            # few final ones (103 ms per get-next at 1.6 M decisions; 1 ms with it)
            models.Index(fields=["candidate"], condition=models.Q(is_final=True), name="decision_final_by_candidate"),
        ]

    def __str__(self) -> str:
        return f"{self.decision} of candidate {self.candidate_id} ({self.source}, reviewer {self.reviewer_id or '–'})"

    @property
    def reason_label(self) -> str:
        """The rejection reason in the words the reviewer picked it by (the code is what is stored)."""
        return review_rules.reason_label(self.reason)


class ReviewLock(models.Model):
    """A candidate held by a reviewer while they work on it; expires so abandoned items come back."""

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="locks")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    round = models.ForeignKey(ReviewRound, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    expires_at = models.DateTimeField(db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["candidate", "reviewer", "round"], name="lock_unique")]

    def __str__(self) -> str:
        return f"candidate {self.candidate_id} held by reviewer {self.reviewer_id} until {self.expires_at}"


class ReviewSkip(models.Model):
    """A reviewer set a candidate aside, with a reason; it leaves their queue (not the others')."""

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="skips")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_skips")
    round = models.ForeignKey(ReviewRound, null=True, blank=True, on_delete=models.CASCADE, related_name="skips")
    reason = models.CharField(max_length=60)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["candidate", "reviewer", "round"], name="skip_once_per_reviewer_round")
        ]

    def __str__(self) -> str:
        return f"candidate {self.candidate_id} skipped by reviewer {self.reviewer_id}: {self.reason}"


class RatingItem(models.Model):
    """Anything rated on the Likert dimensions: a pseudo translation, a candidate, or a system output."""

    class Kind(models.TextChoices):
        PSEUDO_TRANSLATION = "pseudo_translation"
        CANDIDATE = "candidate"
        SYSTEM_OUTPUT = "system_output"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="rating_items")
    direction = models.ForeignKey(Direction, on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    external_id = models.CharField(max_length=200, blank=True)
    source = models.TextField()
    reference = models.TextField(blank=True)
    text = models.TextField(help_text="the output being rated")
    system = models.CharField(max_length=200, blank=True)
    candidate = models.ForeignKey(Candidate, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    pseudo_translation = models.ForeignKey(
        "exports.PseudoTranslation", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        # the admin names items by this: "system_output en-de #17 (sys-A)", not "RatingItem object (1)"
        system = f" ({self.system})" if self.system else ""
        return f"{self.kind} {self.direction.code} #{self.external_id or self.pk}{system}"


def _likert_field(help_text: str) -> models.PositiveSmallIntegerField:
    return models.PositiveSmallIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(5)], help_text=help_text
    )


class LikertRating(models.Model):
    """The four OmniScore dimensions, each 1–5 (SPEC §4)."""

    DIMENSIONS = ("informativeness", "clarity", "plausibility", "faithfulness")

    item = models.ForeignKey(
        RatingItem, on_delete=models.CASCADE, related_name="ratings", db_index=False
    )  # rating_once_per_rater
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="likert_ratings")
    informativeness = _likert_field("coverage, correctness, usefulness")
    clarity = _likert_field("fluency, structure, concision")
    plausibility = _likert_field("coherent, sensible")
    faithfulness = _likert_field("no unsupported, omitted or distorted content relative to the source")
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=64, null=True, blank=True, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "rater"], name="rating_once_per_rater"),
            *[
                models.CheckConstraint(condition=models.Q(**{f"{d}__gte": 1, f"{d}__lte": 5}), name=f"rating_{d}_1_5")
                for d in ("informativeness", "clarity", "plausibility", "faithfulness")
            ],
        ]

    def __str__(self) -> str:
        return f"rating of item {self.item_id} by rater {self.rater_id}"


class UsedIdempotencyKey(models.Model):
    """Every idempotency key a decision or rating was stored with, and the stored row as it was then.

    A key answers with what it did the first time, forever: a late duplicate of an old submission (accept
    with K1, reject with K2, accept resent with K1) must not undo the newer change. The decision or
    rating row itself only keeps its latest key."""

    class Kind(models.TextChoices):
        DECISION = "decision"
        RATING = "rating"
        SPANS = "spans"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    key = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    object_id = models.PositiveBigIntegerField()
    response = models.JSONField(encoder=DjangoJSONEncoder, help_text="the row's fields as stored by this submission")
    # sha256 of what the submission asked for (``annotation.common.submissions.request_hash``); empty for keys stored before it existed
    request_hash = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "key"], name="idempotency_key_once_per_kind")]

    def __str__(self) -> str:
        return f"{self.kind} key {self.key}"


class AuditEvent(models.Model):
    """Who changed what, when, from which value to which."""

    # Every action written (``annotation.common.audit.audit_record`` refuses another): the admin's filter lists
    # these instead of reading the distinct values of a table that grows by one row per decision.
    ACTIONS = (
        "adjudication.change",
        "adjudication.create",
        "annotator.invite",
        "annotator.languages",
        "annotator.password_set",
        "candidate.status",
        "decision.change",
        "decision.create",
        "decision.withdraw",
        "plant_gold",
        "project.pool_rule",
        "rating.change",
        "rating.create",
        "review.skip",
        "review.unskip",
        "round.close",
        "round.open",
        "span_annotation.change",
        "span_annotation.create",
        "span_annotator.exclude",
        "span_annotator.reinstate",
        "span_annotator.retrain",
        "span_items.create",
        "span_task.create",
    )

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=60)
    object_type = models.CharField(max_length=60)
    object_id = models.CharField(max_length=60)
    old = models.JSONField(null=True, blank=True)
    new = models.JSONField(null=True, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.action} on {self.object_type} {self.object_id}"


class ReviewTally(models.Model):
    """How many candidates of one direction stand at each (status, reviews taken) in one round: the review
    progress figures read these few rows instead of counting millions of candidates.

    Kept exact by PostgreSQL triggers on the candidates, decisions and round samples (migration 0005),
    so every writer (the ORM, COPY imports, raw SQL) is counted in its own transaction. The triggers only
    append to ``ReviewTallyChange`` (no row is updated, so concurrent reviewers never wait on each other);
    ``annotation.review.tally.fold`` moves those changes into these rows. Round 1 counts every candidate
    of the project; a later round its sample. ``reviews``: annotator decisions of the candidate in that
    round. ``manage.py recount_review_progress`` rebuilds the rows from the candidates."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    direction = models.ForeignKey(Direction, on_delete=models.CASCADE, related_name="+")
    round_number = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10, choices=Candidate.Status.choices)
    reviews = models.PositiveIntegerField()
    candidates = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "review tallies"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "direction", "round_number", "status", "reviews"], name="tally_unique_key"
            ),
        ]

    def __str__(self) -> str:
        return (
            f"project {self.project_id} direction {self.direction_id} round {self.round_number}: "
            f"{self.candidates} {self.status} with {self.reviews} reviews"
        )


class ReviewTallyChange(models.Model):
    """A change to ``ReviewTally`` written by a trigger, not yet folded in (insert-only: no contention)."""

    project_id = models.BigIntegerField()
    direction_id = models.BigIntegerField()
    round_number = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10)
    reviews = models.IntegerField()
    delta = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["project_id"])]

    def __str__(self) -> str:
        return f"tally change by {self.delta} ({self.status}, {self.reviews} reviews, round {self.round_number})"


class ReviewChange(ChangeLogEntry):
    """A statement changed rows that the review figures and the agreement report are computed from: written
    by PostgreSQL triggers (``annotation.review.changes_sql``), insert-only, read as a token by the pages
    (``annotation.review.changes``). ``project_id`` None: the change may touch every project (a renamed
    user or language)."""

    kind = "review change"

    class Meta:
        indexes = [models.Index(fields=["project_id", "id"], name="review_change_by_project")]


# ---- error-span annotation (ESA and MQM): annotation.spans ------------------------------------------------


class SpanTask(models.Model):
    """A span-annotation campaign of one project: ESA (spans minor/major, then a 0–100 score) or MQM (spans
    with a category and a severity, scored by the MQM weights). Its items are ``SpanItem``; each annotator's
    work on one item is a ``SpanAnnotation``."""

    class Protocol(models.TextChoices):
        ESA = "esa", "ESA (error spans, then a 0–100 score)"
        MQM = "mqm", "MQM (error spans with category and severity)"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="span_tasks")
    name = models.SlugField(max_length=100)
    title = models.CharField(max_length=200, blank=True)
    protocol = models.CharField(max_length=8, choices=Protocol.choices, default=Protocol.ESA)
    # MQM: a critical error weighs 25 where the project says so, 10 otherwise (minor 1, major 5; −25 floor)
    critical_weight = models.PositiveSmallIntegerField(
        default=25, validators=[MinValueValidator(5), MaxValueValidator(25)]
    )
    annotators_per_item = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(20)]
    )
    # ESA-AI: the metric whose stored spans pre-fill the items (empty: none); copied onto each item when made
    ai_metric = models.CharField(max_length=80, blank=True)
    # known-answer quality control: an annotator whose pass rate falls below this is listed as failing
    pass_threshold = models.FloatField(default=0.5, validators=[MinValueValidator(0), MaxValueValidator(1)])
    seed = models.BigIntegerField(default=0, help_text="places the items (and the attention items) in the queue")
    # crowd campaign: a link taking Prolific's ids makes a one-campaign annotator; the code ends the study
    is_crowd = models.BooleanField(default=False)
    crowd_token = models.CharField(max_length=64, blank=True, help_text="the secret in the crowd link")
    completion_code = models.CharField(max_length=64, blank=True)
    crowd_items = models.PositiveIntegerField(default=20, help_text="items one crowd worker annotates")
    is_open = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="spantask_unique_name")]

    def __str__(self) -> str:
        return f"{self.project.name}/{self.name} ({self.protocol})"


class SpanItem(models.Model):
    """One source and translation to annotate in one task. ``translation`` is the text spans point into
    (character offsets, ``[start, end)``; source-side spans, omissions, point into ``source``)."""

    class Kind(models.TextChoices):
        SYSTEM_OUTPUT = "system_output"  # imported system outputs (the rows import_rating_items reads)
        CANDIDATE = "candidate"  # an accepted candidate: one injected error, its span known
        PSEUDO_TRANSLATION = "pseudo_translation"  # a release's pseudo translation: k injected errors
        FILE = "file"  # rows of a file (source, translation, optional id, system, reference)

    task = models.ForeignKey(SpanTask, on_delete=models.CASCADE, related_name="items", db_index=False)
    direction = models.ForeignKey(Direction, on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    external_id = models.CharField(max_length=200, blank=True)
    system = models.CharField(max_length=200, blank=True)
    source = models.TextField()
    reference = models.TextField(blank=True)
    translation = models.TextField()
    candidate = models.ForeignKey(Candidate, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    pseudo_translation = models.ForeignKey(
        "exports.PseudoTranslation", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # the injected errors' character spans in ``translation`` ([[start, end], …]; candidates and pseudo
    # translations): what an attention item is checked against, and the human-against-injected agreement
    injected_spans = models.JSONField(default=list, blank=True)
    # an attention item (known answer): failed by an annotation that overlaps none of ``injected_spans``
    is_attention = models.BooleanField(default=False)
    # ESA-AI: the metric's spans copied when the item was made ([{"start", "end", "severity"}], target side)
    ai_spans = models.JSONField(default=list, blank=True)
    ai_metric = models.CharField(max_length=80, blank=True)
    position = models.PositiveIntegerField(help_text="place in the task's queue (random, attention items spread)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "direction", "kind", "system", "external_id"], name="spanitem_unique_id"
            ),
        ]
        indexes = [models.Index(fields=["task", "position"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.external_id or self.pk} of task {self.task_id}"


class SpanAnnotation(models.Model):
    """One annotator's work on one item: made when the item is handed out (the assignment, so a reload
    resumes it), complete once ``submitted_at`` is set. ESA: ``score`` is the annotator's 0–100; MQM: the
    MQM score of the spans (≤ 0, floored at −25). Its spans are ``ErrorSpan`` rows."""

    item = models.ForeignKey(SpanItem, on_delete=models.CASCADE, related_name="annotations", db_index=False)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="span_annotations")
    score = models.FloatField(null=True, blank=True)
    active_ms = models.PositiveIntegerField(null=True, blank=True, help_text="time the page was visible")
    # per ``item.ai_spans`` index: "kept", "edited" or "deleted" (what became of each pre-filled span)
    ai_fates = models.JSONField(default=list, blank=True)
    # attention items only: did the annotation overlap the injected span (None: not an attention item / open)
    attention_passed = models.BooleanField(null=True, blank=True)
    # the annotator was excluded from the task: kept for the record, left out of every figure and count
    excluded = models.BooleanField(default=False)
    idempotency_key = models.CharField(max_length=64, null=True, blank=True, unique=True)
    assigned_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="spanannotation_once_per_annotator"),
            models.CheckConstraint(
                condition=models.Q(score__isnull=True) | models.Q(score__gte=-25, score__lte=100),
                name="spanannotation_score_range",
            ),
        ]
        indexes = [models.Index(fields=["annotator", "submitted_at"])]

    def __str__(self) -> str:
        return f"span annotation of item {self.item_id} by {self.annotator_id}"


class ErrorSpan(models.Model):
    """One marked error: ``[start, end)`` characters of the item's source or translation. An omission is a
    span on the source. ``origin`` metric: pre-filled by ESA-AI (``ai_index`` into ``item.ai_spans``), kept
    or edited by the annotator (a deleted one has no row; ``SpanAnnotation.ai_fates`` records it)."""

    class Side(models.TextChoices):
        SOURCE = "source"
        TARGET = "target"

    class Severity(models.TextChoices):
        MINOR = "minor"
        MAJOR = "major"
        CRITICAL = "critical"

    class Origin(models.TextChoices):
        HUMAN = "human"
        METRIC = "metric"

    annotation = models.ForeignKey(SpanAnnotation, on_delete=models.CASCADE, related_name="spans")
    side = models.CharField(max_length=6, choices=Side.choices, default=Side.TARGET)
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    severity = models.CharField(max_length=8, choices=Severity.choices)
    category = models.CharField(max_length=80, blank=True, help_text="MQM: e.g. accuracy/mistranslation")
    origin = models.CharField(max_length=6, choices=Origin.choices, default=Origin.HUMAN)
    ai_index = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["annotation_id", "side", "start", "end"]
        constraints = [
            models.CheckConstraint(condition=models.Q(end__gt=models.F("start")), name="errorspan_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.severity} {self.side}[{self.start}:{self.end}] of annotation {self.annotation_id}"


class SpanAnnotatorAction(models.Model):
    """An admin's decision about one annotator of one task after the quality checks: retrain (the screen
    shows the guidelines again; the pass rate restarts) or exclude (their annotations leave every figure
    and their items reopen for others), or reinstate."""

    class Action(models.TextChoices):
        RETRAIN = "retrain"
        EXCLUDE = "exclude"
        REINSTATE = "reinstate"

    task = models.ForeignKey(SpanTask, on_delete=models.CASCADE, related_name="annotator_actions")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=10, choices=Action.choices)
    reason = models.CharField(max_length=500, blank=True)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task_id", "annotator_id", "at"]

    def __str__(self) -> str:
        return f"{self.action} annotator {self.annotator_id} in task {self.task_id}"


class CrowdWorker(models.Model):
    """A one-campaign annotator made from a Prolific link: the three ids Prolific sends and nothing else
    about the worker (the user account has no name, e-mail or password)."""

    task = models.ForeignKey(SpanTask, on_delete=models.CASCADE, related_name="crowd_workers")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="crowd_worker")
    prolific_pid = models.CharField(max_length=64)
    study_id = models.CharField(max_length=64)
    session_id = models.CharField(max_length=64)
    completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "prolific_pid"], name="crowdworker_once_per_task")]

    def __str__(self) -> str:
        return f"crowd worker {self.pk} of task {self.task_id}"
