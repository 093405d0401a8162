"""Forms shared by the site's project pages and the admin: creating a project, importing a corpus (a file
or a Hugging Face dataset) and an XQ-MEval release. Validation that needs the database is the services'
(``core.services.project_check``); the forms only shape the input."""

from __future__ import annotations

from django import forms

from core.domain.edit_types import MQM, PERTURBATION, types_of
from core.domain.languages import KNOWN_LANGUAGES
from core.services import MAX_ERRORS_LIMIT, MAX_REVIEWERS


def _type_choices(kind: str) -> list[tuple[str, str]]:
    return [(t.name, f"{t.name} ({t.severity}): {t.definition}") for t in types_of(kind)]


class ProjectCreateForm(forms.Form):
    title = forms.CharField(max_length=200, help_text="What people read, e.g. “FLORES+ devtest into 9 languages”.")
    name = forms.SlugField(
        max_length=100,
        label="Slug",
        help_text="Letters, digits, '-' and '_': the project's address, /projects/<slug>/.",
    )
    source_language = forms.ChoiceField(initial="en", help_text="The language of the gold sources (usually English).")
    directions = forms.CharField(
        help_text="Target directions, comma-separated, each from the source language: e.g. en-de, en-zh, en-ar."
    )
    error_types = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="MQM error types that injection runs inject (XQ-MEval's four). None ticked: all of them.",
    )
    perturbations = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="AskQE perturbations for perturbation runs. None ticked: all of them.",
    )
    reviewers_per_candidate = forms.IntegerField(
        min_value=1, max_value=MAX_REVIEWERS, initial=2, help_text="Independent reviewers who judge each candidate."
    )
    max_errors = forms.IntegerField(
        min_value=1,
        max_value=MAX_ERRORS_LIMIT,
        initial=5,
        label="Maximum errors per pseudo translation",
        help_text="The highest quality level k of the benchmark (XQ-MEval: 5).",
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["source_language"].choices = [
            (code, f"{code} ({info.name})") for code, info in sorted(KNOWN_LANGUAGES.items())
        ]
        self.fields["error_types"].choices = _type_choices(MQM)
        self.fields["perturbations"].choices = _type_choices(PERTURBATION)

    def clean_directions(self) -> list[str]:
        codes = [c.strip() for c in self.cleaned_data["directions"].replace(";", ",").split(",") if c.strip()]
        if not codes:
            raise forms.ValidationError("name at least one direction, e.g. en-de")
        return list(dict.fromkeys(codes))


def upload_size_problem(upload) -> str:
    """Why an uploaded file is past ``CORPUS_UPLOAD_MAX_BYTES`` (the size it declares, before a byte is
    read), or "": the file-size limit of every upload form (docs/security.md, "Input limits")."""
    from django.conf import settings

    limit = settings.CORPUS_UPLOAD_MAX_BYTES
    if upload is not None and upload.size > limit:
        return f"{upload.name}: {upload.size} bytes, more than the {limit} allowed"
    return ""


class SizedFileField(forms.FileField):
    """A file field that refuses a file past the upload limit (``upload_size_problem``)."""

    def clean(self, data, initial=None):
        upload = super().clean(data, initial)
        problem = upload_size_problem(upload)
        if problem:
            raise forms.ValidationError(problem)
        return upload


class CorpusUploadForm(forms.Form):
    """A corpus file (upload), or a Hugging Face dataset when ``allow_hf`` (the site's project page), into
    one of ``project``'s active directions: chosen, never typed, so a typo cannot make a direction."""

    direction = forms.ChoiceField(help_text="One of the project's directions; add another in the project's settings.")
    file = SizedFileField(
        required=False, help_text=".tsv, .csv, .jsonl or .parquet with columns id, source, reference."
    )
    id_column = forms.CharField(initial="id")
    source_column = forms.CharField(initial="source")
    reference_column = forms.CharField(initial="reference")
    other_language = forms.BooleanField(
        required=False,
        label="The references are in another language on purpose",
        help_text="Without this tick, a file whose references do not read as the direction's target language is refused.",
    )

    def __init__(self, *args, project, allow_hf: bool = False, **kwargs):
        from core.selectors import active_directions

        super().__init__(*args, **kwargs)
        codes = [d.code for d in active_directions(project)]
        self.fields["direction"].choices = [("", "choose a direction")] + [(code, code) for code in codes]
        if len(codes) == 1:
            self.fields["direction"].initial = codes[0]  # one choice only: nothing to guess
        self.allow_hf = allow_hf
        if allow_hf:
            self.fields["hf_dataset"] = forms.CharField(
                required=False,
                label="or a Hugging Face dataset",
                help_text="A Hub dataset id, namespace/name (instead of a file); local directories: the import_corpus command.",
            )
            self.fields["hf_config"] = forms.CharField(
                required=False, label="Dataset config", help_text="e.g. deu_Latn"
            )
            self.fields["hf_split"] = forms.CharField(required=False, initial="test", label="Dataset split")
        else:
            self.fields["file"].required = True

    def clean_hf_dataset(self):
        from core.corpus.domain import hub_id_problem

        value = (self.cleaned_data.get("hf_dataset") or "").strip()
        problem = hub_id_problem(value) if value else ""
        if problem:  # never a server path: local dataset directories are for the import_corpus command (#36.4)
            raise forms.ValidationError(problem)
        return value

    def clean(self):
        data = super().clean()
        if self.allow_hf and bool(data.get("file")) == bool(data.get("hf_dataset")):
            raise forms.ValidationError("give either a file or a Hugging Face dataset (one of them)")
        return data


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


class XQMEvalUploadForm(forms.Form):
    candidate_files = MultipleFileField(help_text="The en-{lang}-{ErrorType}.parquet files of the release.")
    decisions = SizedFileField(required=False, help_text="decisions.csv (optional).")
    strict = forms.BooleanField(required=False, help_text="Treat a candidate with several <v> regions as an error.")

    def clean_candidate_files(self):
        files = self.cleaned_data.get("candidate_files") or []
        problems = [upload_size_problem(upload) for upload in files]
        if any(problems):
            raise forms.ValidationError([p for p in problems if p])
        return files


class ProjectSettingsForm(forms.Form):
    """A project's settings on its settings page (its name, source language and pool rule stay as made)."""

    title = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    reviewers_per_candidate = forms.IntegerField(
        min_value=1, max_value=MAX_REVIEWERS, help_text="Independent reviewers who judge each candidate."
    )
    max_errors = forms.IntegerField(
        min_value=1,
        max_value=MAX_ERRORS_LIMIT,
        label="Maximum errors per pseudo translation",
        help_text="The highest quality level k of the benchmark.",
    )
    error_types = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="MQM error types that new injection runs inject. None ticked: all of them.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["error_types"].choices = _type_choices(MQM)


class DirectionAddForm(forms.Form):
    """The target language of a new direction, chosen from the known languages (the source is the project's)."""

    target = forms.ChoiceField(
        label="Target language", help_text="The new direction goes from the project's source language into it."
    )
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        present = {d.target.code for d in project.directions.select_related("target")} | {project.source_language.code}
        self.fields["target"].choices = [("", "choose a language")] + [
            (code, f"{code} ({info.name})") for code, info in sorted(KNOWN_LANGUAGES.items()) if code not in present
        ]


class AssignmentForm(forms.Form):
    """The reviewers of one direction of a project, ticked among the annotators."""

    reviewers = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, direction_code: str, annotators: list[str], **kwargs):
        super().__init__(*args, prefix=f"assign-{direction_code}", **kwargs)
        self.fields["reviewers"].label = f"Reviewers of {direction_code}"
        self.fields["reviewers"].choices = [(name, name) for name in annotators]
