"""Admin for the benchmark models: pseudo translations (read-only, derived), builds, merge states,
releases and pseudo systems. Actions are thin over services; long work goes to tasks."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.validators import MaxValueValidator
from django.db.models import Func, IntegerField
from django.urls import reverse
from django.utils.html import format_html

from core.admin_lists import KeptByTriggersMixin, LargeTableAdmin, ReadOnlyMixin, language_text, values_filter
from core.models import Project
from exports.benchmark import services as benchmark_services
from exports.benchmark import tasks as benchmark_tasks
from exports.models import (
    BenchmarkBuild,
    BenchmarkChange,
    CandidatePlacement,
    MergedSegment,
    MetricScore,
    PartUpload,
    PseudoSystem,
    PseudoTranslation,
    Release,
    ScoreSummary,
    ScoringJob,
    StagedUpload,
    WorkerToken,
)
from exports.release import tasks as release_tasks
from exports.workers import services as worker_services


@admin.register(BenchmarkChange)
class BenchmarkChangeAdmin(KeptByTriggersMixin, admin.ModelAdmin):
    """The benchmark change log (written by triggers, pruned by builds)."""

    list_display = ["id", "project_id"]


def levels() -> range:
    """Every level a project may have: 0 to the largest ``max_errors`` a project accepts."""
    field = Project._meta.get_field("max_errors")
    return range(0, max(v.limit_value for v in field.validators if isinstance(v, MaxValueValidator)) + 1)


LevelFilter = values_filter("level", levels)


@admin.register(PseudoTranslation)
class PseudoTranslationAdmin(ReadOnlyMixin, LargeTableAdmin):
    list_display = ("id", "segment", "direction", "level", "mqm_penalty", "types", "flags", "marked")
    list_filter = ("segment__project", "segment__direction", LevelFilter)
    search_fields = ("marked_text", "segment__external_id", "key")
    list_select_related = ("segment__direction__target",)
    raw_id_fields = ("segment",)
    exclude = ("candidates",)
    readonly_fields = (
        "segment",
        "level",
        "key",
        "text",
        "marked_text",
        "error_types",
        "mqm_penalty",
        "spans",
        "flags",
        "constituents",
        "created_at",
    )

    @admin.display(ordering="segment__direction__code")
    def direction(self, obj):
        return obj.segment.direction.code

    @admin.display(description="marked text")
    def marked(self, obj):
        return language_text(obj.marked_text, obj.segment.direction.target)

    @admin.display(description="error types")
    def types(self, obj):
        return ", ".join(obj.error_types)

    @admin.display(description="candidates")
    def constituents(self, obj):
        return ", ".join(f"#{c.pk} {c.error_type}/{c.position}" for c in obj.candidates.all())


@admin.register(MergedSegment)
class MergedSegmentAdmin(ReadOnlyMixin, LargeTableAdmin):
    list_display = ("segment", "pseudo_count", "fingerprint", "built_at")
    list_select_related = ("segment__direction",)
    list_filter = ("segment__project", "segment__direction")
    raw_id_fields = ("segment",)


@admin.register(CandidatePlacement)
class CandidatePlacementAdmin(ReadOnlyMixin, LargeTableAdmin):
    """What the latest build did with the pool candidates it did not place as they stand (the candidates'
    own list shows what injection and review decided)."""

    list_display = ("candidate", "direction", "outcome", "reason", "drift", "span", "updated_at")
    list_filter = ("candidate__segment__project", "candidate__segment__direction", "outcome")
    list_select_related = ("candidate__segment__direction",)
    raw_id_fields = ("candidate",)

    @admin.display(ordering="candidate__segment__direction__code")
    def direction(self, obj):
        return obj.candidate.segment.direction.code

    @admin.display(description="span used")
    def span(self, obj):
        return "" if obj.span_start is None else f"[{obj.span_start}, {obj.span_end})"


@admin.register(BenchmarkBuild)
class BenchmarkBuildAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "project",
        "number",
        "status",
        "progress_bar",
        "rebuilt_segments",
        "pseudo_created",
        "excluded",
        "transplanted",
        "created_at",
        "finished_at",
    )
    list_filter = ("project", "status")
    readonly_fields = [f.name for f in BenchmarkBuild._meta.fields] + ["progress_bar"]
    actions = ["build_again"]

    @admin.display(description="progress")
    def progress_bar(self, obj):
        return format_html('<progress max="100" value="{}"></progress> {}%', obj.percent, obj.percent)

    @admin.action(description="Build these projects' benchmarks again (changed gold pairs)")
    def build_again(self, request, queryset):
        for project in {b.project for b in queryset.select_related("project")}:
            try:
                level, text = benchmark_tasks.build_outcome(
                    benchmark_tasks.start_build(project=project, user=request.user)
                )
            except benchmark_services.BuildRunning as running:  # one build per project at a time
                level, text = messages.INFO, str(running)
            self.message_user(request, f"{project.name}: {text}", level)


@admin.register(Release)
class ReleaseAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = (
        "__str__",
        "project",
        "status",
        "progress_bar",
        "stage",
        "short_hash",
        "push_status",
        "hub_repo",
        "hub_revision",
        "created_at",
    )
    list_filter = ("project", "status", "push_status")
    search_fields = ("version", "content_hash", "hub_repo")
    readonly_fields = [f.name for f in Release._meta.fields] + ["progress_bar", "page"]
    actions = ["resume_push"]

    @admin.display(description="progress")
    def progress_bar(self, obj):
        return format_html('<progress max="100" value="{}"></progress> {}%', obj.progress, obj.progress)

    @admin.display(description="content hash")
    def short_hash(self, obj):
        return obj.content_hash[:12]

    @admin.display(description="benchmark page")
    def page(self, obj):
        url = reverse("benchmarks:project", kwargs={"project": obj.project.name})
        return format_html('<a href="{}#releases">push or release from the benchmark page</a>', url)

    @admin.action(description="Push again to the recorded Hub repo (resumes an interrupted push)")
    def resume_push(self, request, queryset):
        for release in queryset:
            if not release.hub_repo:
                self.message_user(
                    request, f"{release}: no Hub repo recorded; push it from the benchmark page", messages.WARNING
                )
                continue
            try:
                release_tasks.start_push(release=release, repo_id=release.hub_repo)
            except Exception as exc:  # recorded on the release as well
                self.message_user(request, f"{release}: {exc}", messages.ERROR)
            else:
                level, text = release_tasks.push_outcome(release, release.hub_repo)
                self.message_user(request, f"{release.project.name}: {text}", level)


class JSONArrayLength(Func):
    """The length of a JSON array column, computed by the database (SQLite's json_array_length)."""

    function = "json_array_length"
    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        return super().as_sql(compiler, connection, function="jsonb_array_length", **extra)


@admin.register(PseudoSystem)
class PseudoSystemAdmin(ReadOnlyMixin, LargeTableAdmin):
    """The list reads each system's size from the database: a multilingual system holds thousands of
    triplet ids (every one loaded per row, and a query per row for its release, took 1.1 s at k = 3)."""

    list_display = ("name", "release", "kind", "direction", "level", "repetition", "seed", "human_score", "size")
    list_filter = ("project", "kind", "direction", LevelFilter, "release")
    list_select_related = ("release__project", "direction")
    search_fields = ("name",)
    exclude = ("triplet_ids",)
    readonly_fields = (
        "release",
        "project",
        "kind",
        "name",
        "direction",
        "level",
        "level_mix",
        "repetition",
        "seed",
        "human_score",
        "size",
    )

    def get_queryset(self, request):
        return super().get_queryset(request).defer("triplet_ids").annotate(triplet_count=JSONArrayLength("triplet_ids"))

    @admin.display(description="triplets", ordering="triplet_count")
    def size(self, obj):
        return obj.triplet_count


@admin.register(MetricScore)
class MetricScoreAdmin(ReadOnlyMixin, LargeTableAdmin):
    list_display = ("release", "metric", "direction", "triplet_id", "level", "score")
    list_filter = (
        "release__project",
        "release",
        values_filter(
            "metric", lambda: sorted(set(ScoringJob.objects.values_list("metric", flat=True)))
        ),  # one job per metric and direction
        "direction",
        LevelFilter,
    )
    list_select_related = ("release__project", "direction")
    search_fields = ("triplet_id",)
    readonly_fields = ("release", "metric", "direction", "triplet_id", "level", "score", "signature")


@admin.register(ScoreSummary)
class ScoreSummaryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Written with the scores by the ingest (``exports.scores.services.scores_summarize``)."""

    list_display = ("release", "metric", "direction", "level", "n", "mean")
    list_filter = ("release__project", "release", "direction")
    list_select_related = ("release__project", "direction")

    @admin.display(description="mean score")
    def mean(self, obj):
        return obj.total / obj.n if obj.n else None


@admin.register(ScoringJob)
class ScoringJobAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("release", "metric", "direction", "status", "updated_at")
    list_filter = ("release__project", "release", "status", "metric", "direction")
    readonly_fields = ("release", "metric", "direction", "status", "error", "output_path", "updated_at")


@admin.register(WorkerToken)
class WorkerTokenAdmin(admin.ModelAdmin):
    """Worker tokens: an admin creates one per worker (the secret is shown once, on the page that answers
    the form, and only its sha256 is kept) and revokes it; uploads keep their worker, so none is deleted."""

    list_display = [
        "name",
        "prefix",
        "created_at",
        "created_by",
        "last_used_at",
        "revoked_at",
        "uploads_count",
        "staged_count",
    ]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix"]
    fields = ["name", "prefix", "created_at", "created_by", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "created_at", "created_by", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    @admin.display(description="uploads")
    def uploads_count(self, obj: WorkerToken) -> int:
        return obj.uploads.count()

    @admin.display(description="staged directions")
    def staged_count(self, obj: WorkerToken) -> int:
        return obj.staged_uploads.count()

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # revoke instead: every upload stays recorded with its worker

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "name"] if obj is not None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            return  # a token's name and secret are fixed once created
        token, secret = worker_services.token_create(name=form.cleaned_data["name"], created_by=request.user)
        obj.pk, obj.prefix = token.pk, token.prefix
        obj._state.adding = False
        request._worker_secret = secret  # for response_add only: never stored, never in a cookie

    def response_add(self, request, obj, post_url_continue=None):
        from django.template.response import TemplateResponse

        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "token": obj,
            "secret": getattr(request, "_worker_secret", ""),
            "title": f"Worker token for {obj.name}",
        }
        return TemplateResponse(request, "admin/exports/workertoken/created.html", context)  # admin: no-store

    @admin.action(description="Revoke the selected worker tokens")
    def revoke(self, request, queryset):
        n = worker_services.tokens_revoke(tokens=queryset)
        self.message_user(request, f"{n} worker token(s) revoked", messages.SUCCESS)


@admin.register(PartUpload)
class PartUploadAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Every part a worker uploaded, with the worker that sent it: written by the worker endpoint only."""

    list_display = ("job", "worker", "sha256", "size", "created_at")
    list_filter = ("worker", "job__release__project", "job__metric")
    search_fields = ("sha256", "storage_name")
    readonly_fields = ("job", "worker", "sha256", "size", "storage_name", "created_at")


@admin.register(StagedUpload)
class StagedUploadAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Every release direction a release worker staged and uploaded, with the worker that sent it: written by
    the release workers' endpoint only (``exports.workers.api``)."""

    list_display = ("release", "direction", "worker", "sha256", "size", "created_at")
    list_filter = ("worker", "release__project")
    search_fields = ("sha256", "digest", "direction")
    readonly_fields = ("release", "direction", "worker", "sha256", "size", "digest", "created_at")
