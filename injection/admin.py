"""Django admin for runs, work items and candidates: filter by project, direction, status and flags;
start (resume), cancel and retry failed from the run list."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import transaction
from django.utils.html import format_html

from core.admin_lists import KeptByTriggersMixin, LargeTableAdmin, language_text, values_filter
from core.domain.edit_types import EDIT_TYPES
from injection import selectors, services, tasks
from injection.domain.checks import CHECKS
from injection.models import Candidate, FlagChange, InjectionItem, InjectionRun


def error_type_names() -> list[str]:
    """The registered edit types and those any run asked for (a few rows): not the candidates' values."""
    names = {name for _, name in EDIT_TYPES}
    for types in InjectionRun.objects.values_list("error_types", flat=True):
        names.update(t for t in types or [] if isinstance(t, str))
    return sorted(names)


def run_backends() -> list[str]:
    """A candidate's backend is its run's (rule, openai, vllm, batch, import, gold): read from the runs."""
    return sorted(set(InjectionRun.objects.values_list("backend", flat=True)))


ErrorTypeFilter = values_filter("error_type", error_type_names, "error type")
BackendFilter = values_filter("backend", run_backends)


class FlagFilter(admin.SimpleListFilter):
    title = "flag"
    parameter_name = "flag"

    def lookups(self, request, model_admin):
        return [("none", "no flag"), *[(name, name) for name in CHECKS]]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        if value == "none":
            return queryset.filter(flags=[])
        return selectors.with_flag(queryset, value)


@admin.register(InjectionRun)
class InjectionRunAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "project",
        "backend",
        "model",
        "kind",
        "status",
        "progress",
        "failed",
        "tokens",
        "cost_usd",
        "created_at",
    )
    list_filter = ("project", "status", "backend", "kind")
    search_fields = ("name", "model")
    readonly_fields = (
        "total",
        "done",
        "failed",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "error",
        "started_at",
        "finished_at",
        "created_by",
    )
    actions = ["start_or_resume", "cancel", "retry_failed"]

    @admin.display(description="done / total")
    def progress(self, run):
        return format_html('<a href="/injection/runs/{}/">{} / {}</a>', run.pk, run.done, run.total)

    @admin.display(description="tokens")
    def tokens(self, run):
        return run.prompt_tokens + run.completion_tokens

    @admin.action(description="Start or resume the selected runs (pending items)")
    def start_or_resume(self, request, queryset):
        with transaction.atomic():
            for run in queryset:
                services.run_resume(run=run)
                tasks.enqueue(run=run)
        messages.success(request, f"{queryset.count()} run(s) queued on 'llm'.")

    @admin.action(description="Cancel the selected runs")
    def cancel(self, request, queryset):
        count = sum(services.run_cancel(run=run) for run in queryset)
        messages.success(request, f"{count} run(s) cancelled.")

    @admin.action(description="Retry the failed items of the selected runs")
    def retry_failed(self, request, queryset):
        total = 0
        with transaction.atomic():
            for run in queryset:
                total += services.run_reset_failed(run=run)
                tasks.enqueue(run=run)
        messages.success(request, f"{total} failed item(s) queued again.")


@admin.register(InjectionItem)
class InjectionItemAdmin(LargeTableAdmin):
    list_display = (
        "id",
        "run",
        "segment",
        "kind",
        "error_type",
        "position",
        "status",
        "attempts",
        "retryable",
        "error",
    )
    list_filter = (
        "run__project",
        "segment__direction",
        "status",
        values_filter("kind", lambda: Candidate.Kind.choices),
        ErrorTypeFilter,
        values_filter("position", lambda: Candidate.Position.choices),
        "retryable",
    )
    list_select_related = ("run__project", "segment__direction")
    search_fields = ("error",)
    raw_id_fields = ("run", "segment", "candidate")
    actions = ["retry"]

    @admin.action(description="Retry the selected failed items")
    def retry(self, request, queryset):
        with transaction.atomic():
            for run in InjectionRun.objects.filter(pk__in=queryset.values("run")):
                services.run_reset_failed(run=run, item_ids=list(queryset.filter(run=run).values_list("pk", flat=True)))
                tasks.enqueue(run=run)
        messages.success(request, "Selected failed items queued again.")


@admin.register(Candidate)
class CandidateAdmin(LargeTableAdmin):
    list_display = (
        "id",
        "segment",
        "kind",
        "error_type",
        "position",
        "status",
        "span",
        "edit",
        "flag_list",
        "backend",
        "model",
    )
    list_filter = (
        "run__project",
        "segment__direction",
        "status",
        "kind",
        ErrorTypeFilter,
        "position",
        FlagFilter,
        BackendFilter,
    )
    list_select_related = ("segment__direction__target",)
    search_fields = ("text", "edit_text", "segment__external_id")
    raw_id_fields = ("run", "segment")
    readonly_fields = (
        "checks",
        "flags",
        "raw_output",
        "prompt_version",
        "sampling",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
    )

    @admin.display(description="edit text")
    def edit(self, candidate):
        return language_text(candidate.edit_text, candidate.segment.direction.target)

    @admin.display(description="span")
    def span(self, candidate):
        return f"[{candidate.span_start}, {candidate.span_end})"

    @admin.display(description="flags")
    def flag_list(self, candidate):
        return ", ".join(candidate.flags) or "—"


@admin.register(FlagChange)
class FlagChangeAdmin(KeptByTriggersMixin, admin.ModelAdmin):
    """The flag change log (written by triggers, pruned by recounts of the flag counts)."""

    list_display = ["id", "project_id"]
