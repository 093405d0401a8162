"""Admin for languages, directions, projects, gold segments and roles, with the corpus import as an upload.

The XQ-MEval upload (candidates and decisions) belongs to the review stage: ``annotation.admin`` extends
``ProjectAdmin`` with it."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse

from core.admin_lists import LargeTableAdmin, ReadOnlyMixin, language_text
from core.corpus.domain import Columns, CorpusError
from core.corpus.services import corpus_source_import
from core.forms import CorpusUploadForm
from core.models import CorpusImport, Direction, GoldSegment, Language, Profile, Project, ReviewerAssignment
from core.services import ImportRejected, project_check, project_create, username_clean


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
        messages.add_message(
            request, level, f"… and {len(errors) - SHOWN_ERRORS} more problem(s) ({len(errors)} in all)."
        )
    if closing:
        messages.add_message(request, level, closing)


class ProjectAdminForm(forms.ModelForm):
    """The admin's project form; a new project is validated and created by ``core.services.project_create``,
    like the site's form and the commands."""

    class Meta:
        model = Project
        fields = "__all__"  # noqa: DJ007  (the admin edits every field, as ModelAdmin does by default)

    def clean(self):
        data = super().clean()
        if self.instance.pk is None and not self.errors:
            options = data.get("options") or {}
            problems = project_check(
                name=data.get("name", ""),
                source_language=data["source_language"].code,
                directions=[d.code for d in data.get("directions", [])],
                error_types=list(data.get("error_types") or []),
                perturbations=list(options.get("perturbations", [])) if isinstance(options, dict) else [],
                reviewers_per_candidate=data.get("reviewers_per_candidate"),
                max_errors=data.get("max_errors"),
            )
            for problem in problems:
                field_name, _, message = problem.partition(": ")
                self.add_error(
                    field_name if field_name in self.fields else None,
                    problem if field_name not in self.fields else message,
                )
        return data


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "title",
        "source_language",
        "reviewers_per_candidate",
        "max_errors",
        "pool_rule",
        "owner",
        "created_at",
    ]
    list_filter = ["source_language", "pool_rule", "directions"]
    search_fields = ["name", "title"]
    filter_horizontal = ["directions"]
    form = ProjectAdminForm
    change_form_template = "admin/core/project/change_form.html"

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        data = form.cleaned_data
        options = dict(data.get("options") or {})
        project = project_create(
            name=data["name"],
            title=data.get("title", ""),
            source_language=data["source_language"].code,
            directions=[d.code for d in data.get("directions", [])],
            error_types=list(data.get("error_types") or []),
            perturbations=list(options.pop("perturbations", [])),
            reviewers_per_candidate=data["reviewers_per_candidate"],
            max_errors=data["max_errors"],
            description=data.get("description", ""),
            owner=data.get("owner") or request.user,
            pool_rule=data["pool_rule"],
            license=data["license"],
            options=options,
        )
        obj.pk = project.pk
        obj._state.adding = False
        obj._state.db = project._state.db
        form.instance = obj

    def view_path(self, route: str, view, name: str):
        """A page of this admin's own: ``view`` at ``route``, behind the admin site's login."""
        return path(route, self.admin_site.admin_view(view), name=name)

    def get_urls(self):
        return [
            self.view_path("<int:pk>/import-corpus/", self.import_corpus_view, "core_project_import_corpus"),
            *super().get_urls(),
        ]

    def import_corpus_view(self, request, pk):
        project = get_object_or_404(Project, pk=pk)
        if not self.has_change_permission(request, project):
            return redirect("admin:index")
        form = CorpusUploadForm(request.POST or None, request.FILES or None, project=project)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            columns = Columns(
                form.cleaned_data["id_column"],
                form.cleaned_data["source_column"],
                form.cleaned_data["reference_column"],
            )
            try:
                _, result = corpus_source_import(
                    project=project,
                    direction_code=form.cleaned_data["direction"],
                    columns=columns,
                    upload_name=upload.name,
                    data=upload.read(),
                    known_direction=True,
                    check_language=not form.cleaned_data["other_language"],
                )
            except (CorpusError, ImportRejected) as exc:
                report_errors(request, exc.errors, f"{upload.name}: nothing imported.")
            else:
                report_errors(request, result.warnings, "", level=messages.WARNING)
                messages.success(
                    request, f"{upload.name}: {result.created} gold segments imported, {result.unchanged} unchanged."
                )
                return redirect(reverse("admin:core_project_change", args=[project.pk]))
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "project": project,
            "title": f"Import a corpus into {project.name}",
        }
        return render(request, "admin/core/upload.html", context)


@admin.register(GoldSegment)
class GoldSegmentAdmin(LargeTableAdmin):
    list_display = ["external_id", "project", "direction", "short_source", "short_reference"]
    list_filter = ["project", "direction"]
    search_fields = ["external_id", "source", "reference"]
    list_select_related = ["project", "direction__source", "direction__target"]

    @admin.display(description="source")
    def short_source(self, obj):
        return language_text(obj.source, obj.direction.source, 80)

    @admin.display(description="reference")
    def short_reference(self, obj):
        return language_text(obj.reference, obj.direction.target, 80)


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


class _CleanUsername:
    """Django admin creates and renames users too: the same username rules as the invite form."""

    def clean_username(self):
        username = self.cleaned_data["username"]
        if not (self.instance.pk and username == self.instance.username):  # an existing name is not re-judged
            self.cleaned_data["username"] = username = username_clean(username=username, besides=self.instance.pk)
        parent = getattr(super(), "clean_username", None)  # the creation form's case-insensitive duplicate check
        return parent() if parent else username


class UserAddForm(_CleanUsername, AdminUserCreationForm):
    pass


class UserEditForm(_CleanUsername, UserChangeForm):
    pass


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    add_form = UserAddForm
    form = UserEditForm
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


@admin.register(ReviewerAssignment)
class ReviewerAssignmentAdmin(admin.ModelAdmin):
    """Who reviews which direction of which project (the site's project settings set them)."""

    list_display = ["project", "direction", "user"]
    list_filter = ["project", "direction"]
    search_fields = ["user__username"]
    list_select_related = ["project", "direction", "user"]


@admin.register(CorpusImport)
class CorpusImportAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Hub imports the corpus page queued (their task writes them): looked at, never edited by hand."""

    list_display = ("id", "project", "direction", "dataset", "config", "split", "status", "created", "created_at")
    list_filter = ("status", "project", "direction")
    search_fields = ("dataset",)
    readonly_fields = [f.name for f in CorpusImport._meta.fields]
