"""Django admin names every row in English (#37 item 10: "Review tallys", "RatingItem object (1)")."""

import re

import pytest
from django.contrib import admin
from django.db import models


def english_plural(noun: str) -> str:
    """The regular English plural of a noun phrase's last word (an independent reference, not Django's "+s")."""
    if re.search(r"[^aeiou]y$", noun):
        return noun[:-1] + "ies"
    if re.search(r"(s|x|z|ch|sh)$", noun):
        return noun + "es"
    return noun + "s"


REGISTERED = sorted(admin.site._registry, key=lambda m: m._meta.label)


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m._meta.label)
def test_every_admin_model_has_an_english_plural(model):
    meta = model._meta
    assert str(meta.verbose_name_plural) == english_plural(str(meta.verbose_name))


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m._meta.label)
def test_every_admin_model_names_its_rows(model):
    """A row's name in lists, titles and breadcrumbs says what it is, not "<Model> object (1)"."""
    assert model.__str__ is not models.Model.__str__, f"{model._meta.label} has no __str__"


def test_english_plural_reference():
    assert [english_plural(n) for n in ("review tally", "score summary", "box", "key", "day", "rating item")] == [
        "review tallies",
        "score summaries",
        "boxes",
        "keys",
        "days",
        "rating items",
    ]
