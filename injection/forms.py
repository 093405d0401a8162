"""The start-a-run form of the admin UI."""

from __future__ import annotations

import uuid

from django import forms

from core.domain.edit_types import EDIT_TYPES, KINDS
from core.models import Direction, Project
from injection.backends.base import BACKENDS


def _type_choices() -> list[tuple[str, str]]:
    """Each type name once, labelled with the kinds it belongs to (Omission is both an MQM type and a
    perturbation)."""
    kinds: dict[str, list[str]] = {}
    for kind, name in EDIT_TYPES:
        kinds.setdefault(name, []).append(kind)
    return [(name, f"{name} ({', '.join(kinds[name])})") for name in sorted(kinds)]


# Which fields each backend reads (the rest are hidden by static/js/injection-form.js and ignored here).
BACKEND_FIELDS: dict[str, tuple[str, ...]] = {
    "rule": ("seed",),
    "openai": ("endpoint", "base_url", "model", "concurrency", "rpm", "seed", "temperature"),
    "batch": ("endpoint", "base_url", "model", "seed", "temperature"),
    "vllm": ("model", "seed", "temperature", "engine_options"),
}
# the command's flag names in injection.services.RunRejected, and the form's field for each
FLAG_FIELDS = {
    "kind": "kind",
    "backend": "backend",
    "types": "error_types",
    "directions": "directions",
    "endpoint": "endpoint",
    "base-url": "base_url",
    "model": "model",
    "concurrency": "concurrency",
    "rpm": "rpm",
    "seed": "seed",
    "temperature": "temperature",
    "engine-option": "engine_options",
    "name": "name",
}


class ProjectChoiceField(forms.ModelChoiceField):
    """Projects by their title, as every page names them (the slug stays the value sent)."""

    def label_from_instance(self, obj: Project) -> str:
        return obj.title or obj.name


class StartRunForm(forms.Form):
    project = ProjectChoiceField(queryset=Project.objects.all(), label="Project")
    directions = forms.ModelMultipleChoiceField(
        queryset=Direction.objects.all(),
        required=False,
        to_field_name="code",
        widget=forms.CheckboxSelectMultiple,
        label="Directions",
        error_messages={"invalid_choice": "Directions: %(value)s is not a direction of this project"},
        help_text="None ticked: all of the project's directions.",
    )
    kind = forms.ChoiceField(
        choices=[(k, k) for k in KINDS],
        widget=forms.RadioSelect,
        initial=KINDS[0],
        label="Kind",
        help_text="mqm: single major errors (XQ-MEval); perturbation: AskQE's minor and critical edits.",
    )
    error_types = forms.MultipleChoiceField(
        choices=_type_choices(),
        required=False,
        label="Error types",
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: the project's types of the kind (all types when the project names none).",
    )
    backend = forms.ChoiceField(
        choices=[], label="Backend", help_text="rule: offline and deterministic; openai / batch / vllm: an LLM."
    )
    endpoint = forms.ChoiceField(
        choices=[],
        required=False,
        label="Endpoint",
        help_text="The LLM endpoints the operator configured; each sends its own key.",
    )
    base_url = forms.URLField(
        required=False,
        max_length=500,
        assume_scheme="https",
        label="Other endpoint URL",
        help_text="An OpenAI-compatible server not in the list (e.g. a vLLM server); sent no server key.",
    )
    model = forms.CharField(
        required=False,
        max_length=200,
        label="Model",
        help_text="e.g. gpt-4o; empty: the endpoint's first model (or LLM_MODEL)",
    )
    concurrency = forms.IntegerField(min_value=1, max_value=512, initial=8, required=False, label="Concurrency")
    rpm = forms.FloatField(
        required=False, min_value=1, label="Requests per minute", help_text="requests-per-minute budget"
    )
    seed = forms.IntegerField(initial=42, min_value=-(2**63), max_value=2**63 - 1, required=False, label="Seed")
    temperature = forms.FloatField(initial=0.5, min_value=0, max_value=2, required=False, label="Temperature")
    name = forms.SlugField(required=False, max_length=200, label="Run name")
    # one key per rendered form: sent twice (a double click, a resubmitted page), it plans one run
    submission = forms.CharField(required=False, widget=forms.HiddenInput)
    engine_options = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="vLLM engine options",
        help_text="arguments of vllm.LLM, one NAME=VALUE per line (e.g. gpu_memory_utilization=0.5)",
    )

    def __init__(self, *args, project: Project | None = None, **kwargs):
        from django.conf import settings

        from injection import backends  # noqa: F401  (fills the registry)

        super().__init__(*args, **kwargs)
        if project is not None:  # started from a project's page: its directions only
            self.fields["project"].initial = project.pk
        chosen = project or self._posted_project()
        if chosen is not None:  # directions of the chosen project only (shown and accepted)
            self.fields["directions"].queryset = chosen.directions.all()
        self.endpoints = {e.name: e for e in settings.LLM_ENDPOINTS}
        self.fields["endpoint"].choices = [(e.name, f"{e.name} ({e.where})") for e in settings.LLM_ENDPOINTS]
        if not settings.LLM_ALLOW_CUSTOM_URL:  # the operator has not allowed typed URLs
            del self.fields["base_url"]
        self.fields["backend"].choices = [(name, name) for name in sorted(BACKENDS)]
        self.fields["backend"].initial = "rule"
        self.fields["submission"].initial = uuid.uuid4().hex

    def _posted_project(self) -> Project | None:
        from core.domain.params import id_param

        if not self.is_bound:
            return None
        pk = id_param(self.data.get(self.add_prefix("project")))
        return Project.objects.filter(pk=pk).first() if pk else None

    def rows(self) -> list[tuple[forms.BoundField, str]]:
        """Each field with the backends that read it (empty: all), for the template's data-backends."""
        return [
            (
                field,
                " ".join(b for b, names in BACKEND_FIELDS.items() if field.name in names)
                if any(field.name in names for names in BACKEND_FIELDS.values())
                else "",
            )
            for field in self
        ]

    def clean_submission(self) -> str:
        return self.cleaned_data["submission"][:64]  # a hidden field has no place to show an error: never one

    def clean_engine_options(self) -> dict:
        from injection.backends.vllm_engine import parse_engine_options

        try:
            return parse_engine_options(self.cleaned_data["engine_options"].splitlines())
        except ValueError as exc:
            raise forms.ValidationError(f"{self.fields['engine_options'].label}: {exc}") from None

    def clean(self):
        from llm_client.endpoints import Endpoint, MissingKey, unreachable

        data = super().clean()
        backend = data.get("backend")
        if backend not in BACKEND_FIELDS:
            return data
        for name in set().union(*BACKEND_FIELDS.values()) - set(BACKEND_FIELDS[backend]):
            if name in self.fields:  # another backend's field: ignored, whatever was typed
                data[name] = (
                    {} if name == "engine_options" else "" if name in ("endpoint", "base_url", "model") else None
                )
                self.errors.pop(name, None)
        if data.get("seed") is None and "seed" not in self.errors:
            data["seed"] = 42
        data["concurrency"] = data.get("concurrency") or 8
        if data.get("temperature") is None:
            data["temperature"] = 0.5
        if "endpoint" not in BACKEND_FIELDS[backend] or self.errors:
            return data
        # a remote backend: the endpoint must be usable before a run is created (#37.6)
        typed = data.get("base_url") or ""
        if typed:
            endpoint = Endpoint(name="", base_url=typed)  # a typed URL never gets a server key (#36.1)
            field = "base_url"
        else:
            endpoint = self.endpoints.get(data.get("endpoint") or "")
            field = "endpoint"
            if endpoint is None:
                self.add_error(field, f"{self.fields[field].label}: choose one of the configured endpoints")
                return data
            try:
                endpoint.api_key()
            except MissingKey as exc:
                self.add_error(field, f"{self.fields[field].label}: {exc}; ask the operator to set it")
                return data
        problem = unreachable(endpoint)
        if problem:
            self.add_error(field, f"{self.fields[field].label}: {problem}")
        return data

    def add_rejection(self, problems: list[tuple[str, str]]) -> None:
        """The service's refusal (``RunRejected.problems``) under the fields it names, worded with their labels."""
        for flag, text in problems:
            name = FLAG_FIELDS.get(flag)
            if name in self.fields:
                self.add_error(name, f"{self.fields[name].label}: {text}")
            else:
                self.add_error(None, f"{flag.replace('-', ' ').capitalize()}: {text}" if flag else text)
