"""Admin for languages, directions, projects, gold segments and roles, with the corpus import as an upload.

The XQ-MEval upload (candidates and decisions) belongs to the review stage: ``annotation.admin`` extends
``ProjectAdmin`` with it."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse

from core.corpus.domain import Columns, CorpusError, read_corpus
from core.domain.languages import UnknownDirection, parse_direction
from core.models import Direction, GoldSegment, Language, Profile, Project
from core.services import ImportRejected, import_corpus_rows


@admin.register(Language)
class LanguageAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "script", "unit", "rtl"]
    list_filter = ["unit", "rtl", "script"]
    search_fields = ["code", "name"]


@admin.register(Direction)
class DirectionAdmin(admin.ModelAdmin):
    list_display = ["code", "source", "target"]
    list_filter = ["source", "target"]


SHOWN_ERRORS = 20  # an upload with thousands of bad rows: the first ones, then how many more


def report_errors(request, errors: list[str], closing: str, *, level=messages.ERROR) -> None:
    """One message per problem for the first SHOWN_ERRORS, then one line with the count of the rest."""
    for line in errors[:SHOWN_ERRORS]:
        messages.add_message(request, level, line)
    if len(errors) > SHOWN_ERRORS:
        messages.add_message(request, level, f"… and {len(errors) - SHOWN_ERRORS} more problem(s) ({len(errors)} in all).")
    if closing:
        messages.add_message(request, level, closing)


class CorpusUploadForm(forms.Form):
    file = forms.FileField(help_text=".tsv, .csv, .jsonl or .parquet with columns id, source, reference")
    direction = forms.CharField(help_text="e.g. en-de")
    id_column = forms.CharField(initial="id")
    source_column = forms.CharField(initial="source")
    reference_column = forms.CharField(initial="reference")

    def clean_direction(self):
        value = self.cleaned_data["direction"].strip()
        try:
            parse_direction(value)
        except UnknownDirection as exc:
            raise forms.ValidationError(str(exc)) from None
        return value


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "title", "source_language", "reviewers_per_candidate", "max_errors", "pool_rule", "owner", "created_at"]
    list_filter = ["source_language", "pool_rule", "directions"]
    search_fields = ["name", "title"]
    filter_horizontal = ["directions"]
    change_form_template = "admin/core/project/change_form.html"

    def get_urls(self):
        extra = [
            path("<int:pk>/import-corpus/", self.admin_site.admin_view(self.import_corpus_view), name="core_project_import_corpus"),
        ]
        return extra + super().get_urls()

    def import_corpus_view(self, request, pk):
        project = get_object_or_404(Project, pk=pk)
        if not self.has_change_permission(request, project):
            return redirect("admin:index")
        form = CorpusUploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            columns = Columns(form.cleaned_data["id_column"], form.cleaned_data["source_column"], form.cleaned_data["reference_column"])
            try:
                rows = read_corpus(upload.read(), upload.name, columns)
                result = import_corpus_rows(project, form.cleaned_data["direction"], rows, upload.name)
            except (CorpusError, ImportRejected) as exc:
                report_errors(request, exc.errors, f"{upload.name}: nothing imported.")
            else:
                report_errors(request, result.warnings, "", level=messages.WARNING)
                messages.success(request, f"{upload.name}: {result.created} gold segments imported, {result.unchanged} unchanged.")
                return redirect(reverse("admin:core_project_change", args=[project.pk]))
        context = {**self.admin_site.each_context(request), "form": form, "project": project, "title": f"Import a corpus into {project.name}"}
        return render(request, "admin/core/upload.html", context)


@admin.register(GoldSegment)
class GoldSegmentAdmin(admin.ModelAdmin):
    list_display = ["external_id", "project", "direction", "short_source", "short_reference"]
    list_filter = ["project", "direction"]
    search_fields = ["external_id", "source", "reference"]
    list_select_related = ["project", "direction"]

    @admin.display(description="source")
    def short_source(self, obj):
        return obj.source[:80]

    @admin.display(description="reference")
    def short_reference(self, obj):
        return obj.reference[:80]


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "role", "language_codes"]
    list_filter = ["role", "languages"]
    search_fields = ["user__username"]
    filter_horizontal = ["languages"]

    @admin.display(description="languages")
    def language_codes(self, obj):
        return ", ".join(obj.languages.values_list("code", flat=True))


class ProfileInline(admin.StackedInline):
    model = Profile
    can_delete = False
    filter_horizontal = ["languages"]


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    inlines = [ProfileInline]
    list_display = ["username", "email", "is_staff", "role", "languages"]
    list_filter = ["is_staff", "profile__role", "profile__languages"]

    @admin.display(description="role")
    def role(self, obj):
        return getattr(getattr(obj, "profile", None), "role", "")

    @admin.display(description="languages")
    def languages(self, obj):
        profile = getattr(obj, "profile", None)
        return ", ".join(profile.languages.values_list("code", flat=True)) if profile else ""
