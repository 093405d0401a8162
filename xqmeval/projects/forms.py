"""Forms of the project pages that read from several stages (the site's layer may import them all)."""

from __future__ import annotations

from django import forms

from core.forms import SizedFileField
from core.services import MAX_ERRORS_LIMIT
from exports import rating_items, span_items

UPLOAD = "system-outputs"
SOURCES = [
    (rating_items.ACCEPTED_CANDIDATES, "Accepted candidates"),
    (rating_items.PSEUDO_TRANSLATIONS, "Pseudo translations of a level"),
    (UPLOAD, "An uploaded file of system outputs"),
]
MAX_SAMPLE = 1_000_000


class _ItemsForm(forms.Form):
    """A form of new items, into one of ``project``'s active directions or every one."""

    def __init__(self, *args, project, **kwargs):
        from core.selectors import active_directions

        super().__init__(*args, **kwargs)
        codes = [d.code for d in active_directions(project)]
        self.fields["direction"].choices = [("", "every direction")] + [(code, code) for code in codes]


class RatingItemsForm(_ItemsForm):
    """Where new Likert items come from; the rows' own rules are the services' (the commands use the same)."""

    source = forms.ChoiceField(choices=SOURCES, widget=forms.RadioSelect, initial=rating_items.ACCEPTED_CANDIDATES)
    direction = forms.ChoiceField(
        required=False, help_text="All directions when left empty; a file of system outputs needs one."
    )
    level = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_ERRORS_LIMIT,
        help_text="Pseudo translations with this many errors; every level when left empty.",
    )
    limit = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_SAMPLE, label="Sample size", help_text="A seeded random sample."
    )
    seed = forms.IntegerField(required=False, initial=0, min_value=0, max_value=2**31 - 1)
    file = SizedFileField(
        required=False,
        label="System outputs",
        help_text=".tsv, .csv, .jsonl or .parquet with columns source and text; optional reference, system, id.",
    )
    system = forms.CharField(required=False, max_length=200, help_text="For rows without a system column.")

    def clean(self):
        data = super().clean()
        if data.get("source") == UPLOAD:
            if not data.get("file"):
                self.add_error("file", "choose the file of system outputs")
            if not data.get("direction"):
                self.add_error("direction", "a file of system outputs goes into one direction: choose it")
        elif data.get("file"):
            self.add_error("file", "a file is read only for the source 'An uploaded file of system outputs'")
        return data


SPAN_SOURCES = [
    (span_items.ACCEPTED_CANDIDATES, "Accepted candidates (one injected error each)"),
    (span_items.PSEUDO_TRANSLATIONS, "Pseudo translations (k injected errors)"),
    (UPLOAD, "An uploaded file of system outputs or texts"),
]


class SpanItemsForm(_ItemsForm):
    """Where a span task's new items come from; the rows' own rules are the services' (the command uses them)."""

    source = forms.ChoiceField(choices=SPAN_SOURCES, widget=forms.RadioSelect, initial=span_items.ACCEPTED_CANDIDATES)
    attention = forms.BooleanField(
        required=False,
        label="As attention items",
        help_text="Accepted candidates only: their injected error is the known answer.",
    )
    direction = forms.ChoiceField(required=False, help_text="All directions when left empty; a file needs one.")
    level = forms.IntegerField(required=False, min_value=0, max_value=MAX_ERRORS_LIMIT)
    limit = forms.IntegerField(required=False, min_value=1, max_value=span_items.MAX_ITEMS, label="Sample size")
    seed = forms.IntegerField(required=False, initial=0, min_value=0, max_value=2**31 - 1)
    release = forms.CharField(
        required=False, max_length=40, help_text="ESA-AI: the release whose metric spans pre-fill the items."
    )
    metric = forms.CharField(required=False, max_length=80, help_text="ESA-AI: the metric (default: the task's).")
    file = SizedFileField(
        required=False,
        label="File",
        help_text=".tsv, .csv, .jsonl or .parquet with columns source and text; optional reference, system, id.",
    )
    system = forms.CharField(required=False, max_length=200, help_text="For rows without a system column.")
