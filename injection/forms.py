"""The start-a-run form of the admin UI."""
from __future__ import annotations

import uuid

from django import forms

from core.models import Direction, Project
from injection.backends.base import BACKENDS
from core.domain.edit_types import EDIT_TYPES, KINDS


def _type_choices() -> list[tuple[str, str]]:
    """Each type name once, labelled with the kinds it belongs to (Omission is both an MQM type and a
    perturbation)."""
    kinds: dict[str, list[str]] = {}
    for kind, name in EDIT_TYPES:
        kinds.setdefault(name, []).append(kind)
    return [(name, f"{name} ({', '.join(kinds[name])})") for name in sorted(kinds)]


class StartRunForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.all())
    directions = forms.ModelMultipleChoiceField(queryset=Direction.objects.all(), required=False, to_field_name="code",
                                                widget=forms.CheckboxSelectMultiple,
                                                help_text="None ticked: all of the project's directions.")
    kind = forms.ChoiceField(choices=[(k, k) for k in KINDS], widget=forms.RadioSelect, initial=KINDS[0],
                             help_text="mqm: single major errors (XQ-MEval); perturbation: AskQE's minor and critical edits.")
    error_types = forms.MultipleChoiceField(choices=_type_choices(), required=False,
                                            widget=forms.CheckboxSelectMultiple,
                                            help_text="None ticked: the project's types of the kind (all types when the project names none).")
    backend = forms.ChoiceField(choices=[], help_text="rule: offline and deterministic; openai / batch / vllm: an LLM.")
    model = forms.CharField(required=False, max_length=200, help_text="e.g. gpt-4o; empty: LLM_MODEL")
    base_url = forms.CharField(required=False, max_length=500, help_text="OpenAI-compatible endpoint, e.g. a vLLM server; never a key")
    concurrency = forms.IntegerField(min_value=1, max_value=512, initial=8)
    rpm = forms.FloatField(required=False, min_value=1, help_text="requests-per-minute budget")
    seed = forms.IntegerField(initial=42, min_value=-(2**63), max_value=2**63 - 1)
    temperature = forms.FloatField(initial=0.5, min_value=0, max_value=2)
    name = forms.SlugField(required=False, max_length=200)
    # one key per rendered form: sent twice (a double click, a resubmitted page), it plans one run
    submission = forms.CharField(required=False, widget=forms.HiddenInput)
    engine_options = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="vllm backend only: arguments of vllm.LLM, one NAME=VALUE per line (e.g. gpu_memory_utilization=0.5)",
    )

    def __init__(self, *args, project: Project | None = None, **kwargs):
        from injection import backends  # noqa: F401  (fills the registry)

        super().__init__(*args, **kwargs)
        if project is not None:  # started from a project's page: its directions only
            self.fields["project"].initial = project.pk
            self.fields["directions"].queryset = project.directions.all()
        self.fields["backend"].choices = [(name, name) for name in sorted(BACKENDS)]
        self.fields["backend"].initial = "rule"
        self.fields["submission"].initial = uuid.uuid4().hex

    def clean_submission(self) -> str:
        return self.cleaned_data["submission"][:64]  # a hidden field has no place to show an error: never one

    def clean_engine_options(self) -> dict:
        from injection.backends.vllm_engine import parse_engine_options

        try:
            return parse_engine_options(self.cleaned_data["engine_options"].splitlines())
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
