"""#46.5: the project page's Likert line named its rows by the report's keys ("Likert rwg(j): all all
0.793"); it says what each number is an agreement of, in words."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.agreement.refresh import refresh_project

pytestmark = pytest.mark.django_db


def test_scope_labels():
    from annotation.agreement.domain.report import scope_label

    assert scope_label("all", "all") == "every rated item"
    assert scope_label("pseudo_translation", "all") == "pseudo translation items"
    assert scope_label("pseudo_translation", "de") == "pseudo translation items in de"


def test_the_project_page_says_what_each_rwg_is_of(client, world):
    refresh_project(world.project.pk)  # the report the page shows, computed as the worker does
    client.force_login(world.users["admin"])
    page = client.get(reverse("projects:detail", args=[world.project.name])).content.decode()
    line = re.search(r'<p id="likert-rwg">(.*?)</p>', page, re.S)
    assert line is not None, "no Likert line on the project page"
    text = line.group(1)
    assert text.startswith("Likert ratings, mean rwg(j) over the four dimensions: every rated item 0.")
    assert "all all" not in text and " in de " in text
