"""Django admin for review data. Decisions and ratings are read-only here: they change only through the
review services, which audit every change (the review admin pages are under /review/<project>/manage/).

Also the XQ-MEval upload on the project admin: the release brings candidates *and* review decisions, so
its importer is the review stage's (``annotation.review.xqmeval_import``); this module re-registers
``core.admin.ProjectAdmin`` with the upload view added (URL name ``admin:core_project_import_xqmeval``)."""

from django.contrib import admin, messages
from django.shortcuts import redirect, render
from django.urls import reverse

from annotation.models import (
    AuditEvent,
    CrowdWorker,
    ErrorSpan,
    LikertRating,
    RatingItem,
    ReviewChange,
    ReviewDecision,
    ReviewLock,
    ReviewRound,
    ReviewSkip,
    ReviewTally,
    ReviewTallyChange,
    SpanAnnotation,
    SpanAnnotatorAction,
    SpanItem,
    SpanTask,
    UsedIdempotencyKey,
)
from annotation.review import domain as rules
from annotation.review.xqmeval_import.services import xqmeval_import
from core.admin import ProjectAdmin as CoreProjectAdmin
from core.admin import report_errors
from core.admin_lists import KeptByTriggersMixin, LargeTableAdmin, ReadOnlyMixin, values_filter
from core.forms import XQMEvalUploadForm
from core.models import Project
from core.services import ImportRejected


class ReadOnly(ReadOnlyMixin, admin.ModelAdmin):
    pass


@admin.register(ReviewRound)
class ReviewRoundAdmin(admin.ModelAdmin):
    list_display = ["project", "number", "sample_size", "seed", "is_open", "created_at"]
    list_filter = ["project", "is_open"]
    readonly_fields = ["candidates"]


@admin.register(ReviewDecision)
class ReviewDecisionAdmin(ReadOnly, LargeTableAdmin):
    list_display = [
        "candidate",
        "reviewer",
        "round",
        "decision",
        "reason",
        "source",
        "is_final",
        "time_spent_ms",
        "updated_at",
    ]
    list_select_related = ["candidate__segment__direction", "reviewer", "round__project"]
    list_filter = [
        "candidate__segment__project",
        "candidate__segment__direction",
        "decision",
        "source",
        "is_final",
        "round__number",
    ]
    search_fields = ["reviewer__username", "candidate__segment__external_id"]
    raw_id_fields = ["candidate"]


@admin.register(ReviewSkip)
class ReviewSkipAdmin(ReadOnly, LargeTableAdmin):
    list_display = ["candidate", "reviewer", "round", "reason", "created_at"]
    list_filter = [
        "candidate__segment__project",
        "candidate__segment__direction",
        values_filter("reason", lambda: sorted(rules.reason_codes(rules.SKIP_REASONS))),
    ]
    list_select_related = ["candidate__segment__direction", "reviewer", "round__project"]


@admin.register(ReviewLock)
class ReviewLockAdmin(LargeTableAdmin):
    list_display = ["candidate", "reviewer", "round", "expires_at"]
    list_select_related = ["candidate__segment__direction", "reviewer", "round__project"]
    list_filter = ["candidate__segment__project", "candidate__segment__direction"]
    raw_id_fields = ["candidate"]


@admin.register(RatingItem)
class RatingItemAdmin(LargeTableAdmin):
    list_display = ["id", "project", "direction", "kind", "system", "external_id"]
    list_select_related = ["project", "direction"]
    list_filter = ["project", "kind", "direction"]
    raw_id_fields = ["candidate", "pseudo_translation"]


@admin.register(LikertRating)
class LikertRatingAdmin(ReadOnly, LargeTableAdmin):
    list_display = ["item", "rater", "informativeness", "clarity", "plausibility", "faithfulness", "updated_at"]
    list_filter = ["item__project", "item__direction", "item__kind"]
    list_select_related = ["item", "rater"]


@admin.register(SpanTask)
class SpanTaskAdmin(admin.ModelAdmin):
    # made on the span tasks page (its checks and audit); here only opened or closed
    list_display = ["name", "project", "protocol", "annotators_per_item", "is_crowd", "is_open", "created_at"]
    list_filter = ["project", "protocol", "is_open"]
    list_editable = ["is_open"]
    readonly_fields = ["crowd_token", "completion_code", "seed", "created_by"]

    def has_add_permission(self, request):
        return False


@admin.register(SpanItem)
class SpanItemAdmin(ReadOnly, LargeTableAdmin):
    list_display = ["id", "task", "direction", "kind", "system", "external_id", "is_attention", "position"]
    list_select_related = ["task", "direction"]
    list_filter = ["task", "kind", "direction", "is_attention"]


@admin.register(SpanAnnotation)
class SpanAnnotationAdmin(ReadOnly, LargeTableAdmin):
    list_display = ["item", "annotator", "score", "attention_passed", "excluded", "submitted_at"]
    list_select_related = ["item", "annotator"]
    list_filter = ["item__task", "excluded"]


@admin.register(SpanAnnotatorAction)
class SpanAnnotatorActionAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["at", "task", "annotator", "action", "reason", "by"]
    list_filter = ["task", "action"]


@admin.register(ErrorSpan)
class ErrorSpanAdmin(ReadOnly, LargeTableAdmin):
    # written by the span screen's submissions only (annotation.spans.services)
    list_display = ["annotation", "side", "start", "end", "severity", "category", "origin"]
    list_select_related = ["annotation"]
    list_filter = ["annotation__item__task", "side", "severity", "origin"]


@admin.register(CrowdWorker)
class CrowdWorkerAdmin(ReadOnly, admin.ModelAdmin):
    # the three Prolific ids a crowd link stores, and nothing else about the worker
    list_display = ["task", "user", "prolific_pid", "study_id", "session_id", "completed_at", "created_at"]
    list_filter = ["task"]


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnly, LargeTableAdmin):
    list_display = ["at", "actor", "action", "object_type", "object_id", "old", "new"]
    list_filter = [values_filter("action", lambda: AuditEvent.ACTIONS)]  # the action names the object's type too
    list_select_related = ["actor"]
    search_fields = ["object_id", "actor__username"]


class Counters(KeptByTriggersMixin, admin.ModelAdmin):
    """Kept by the database's triggers (``manage.py recount_review_progress`` rebuilds the counters)."""


@admin.register(ReviewTally)
class ReviewTallyAdmin(Counters):
    list_display = ["project", "direction", "round_number", "status", "reviews", "candidates"]
    list_filter = ["project", "round_number", "status"]


@admin.register(ReviewTallyChange)
class ReviewTallyChangeAdmin(Counters):
    list_display = ["project_id", "direction_id", "round_number", "status", "reviews", "delta"]
    list_filter = ["round_number", "status"]


@admin.register(ReviewChange)
class ReviewChangeAdmin(Counters):
    """The review change log (written by triggers, pruned by the agreement refresh)."""

    list_display = ["id", "project_id"]


@admin.register(UsedIdempotencyKey)
class UsedIdempotencyKeyAdmin(ReadOnly, LargeTableAdmin):
    list_display = ["created_at", "kind", "key", "user", "object_id"]
    list_filter = ["kind"]
    list_select_related = ["user"]
    search_fields = ["key", "user__username"]


class ProjectAdmin(CoreProjectAdmin):
    def get_urls(self):
        return [
            self.view_path("import-xqmeval/", self.import_xqmeval_view, "core_project_import_xqmeval"),
            *super().get_urls(),
        ]

    def import_xqmeval_view(self, request):
        form = XQMEvalUploadForm(request.POST or None, request.FILES or None)
        project_name = request.POST.get("project_name", "")
        if request.method == "POST" and form.is_valid():
            if not project_name:
                messages.error(request, "project_name: required")
            else:
                files = [(f.name, f.read()) for f in form.cleaned_data["candidate_files"]]
                decisions = form.cleaned_data.get("decisions")
                try:
                    result = xqmeval_import(
                        project_name=project_name,
                        files=files,
                        decisions=(decisions.name, decisions.read()) if decisions else None,
                        strict=form.cleaned_data["strict"],
                        owner=request.user,
                    )
                except ImportRejected as exc:
                    report_errors(request, exc.errors, "Nothing imported.")
                else:
                    messages.success(
                        request,
                        f"{result.project}: {result.segments_created} gold segments, {result.candidates_created} candidates "
                        f"({result.candidates_unchanged} unchanged), {result.decisions_created} decisions imported.",
                    )
                    return redirect(reverse("admin:core_project_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "project_name": project_name,
            "title": "Import XQ-MEval candidates",
            "xqmeval": True,
        }
        return render(request, "admin/core/upload.html", context)


admin.site.unregister(Project)
admin.site.register(Project, ProjectAdmin)
