"""Forms of the annotator accounts' page (the annotators page an admin fills in)."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from core.models import Project
from core.selectors import active_directions
from core.services import username_clean

REVIEW_SEPARATOR = "/"  # a choice's value: "<project>/<direction>"


def review_choices() -> list[tuple[str, str]]:
    """Every active direction of every project, as "project / direction" choices."""
    return [
        (f"{project.name}{REVIEW_SEPARATOR}{direction.code}", f"{project.title or project.name} / {direction.code}")
        for project in Project.objects.order_by("name")
        for direction in active_directions(project).order_by("code")
    ]


class InviteForm(forms.Form):
    """A new annotator: every problem is shown at once, on its field, and what was typed stays."""

    username = forms.CharField(max_length=150, help_text="Letters, digits and @ . + - _ only.")
    email = forms.EmailField(required=False)
    reviews = forms.MultipleChoiceField(
        required=False,
        label="Reviews",
        help_text="The directions this annotator reviews, per project (more in each project's settings).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reviews"].choices = review_choices()
        self.fields["reviews"].widget.attrs["size"] = min(10, max(3, len(self.fields["reviews"].choices)))

    def clean_username(self) -> str:
        try:  # Django's rules, NFKC, no look-alike letters: the same as every other path that creates a user
            username = username_clean(username=self.cleaned_data["username"].strip())
        except ValidationError as exc:  # a name taken too, compared without case
            raise ValidationError(exc.messages) from None
        return username

    def clean_reviews(self) -> list[tuple[str, str]]:
        return [tuple(value.split(REVIEW_SEPARATOR, 1)) for value in self.cleaned_data["reviews"]]
