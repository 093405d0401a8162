"""#37.10's small things: help texts reachable by screen readers (every aria-describedby names an id on
the page), the admin's plurals and a rating item's name."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import RatingItem, ReviewTally
from core.services import project_create
from exports.models import ScoreSummary

pytestmark = pytest.mark.django_db


def test_every_aria_describedby_names_an_id_on_the_page(client, admin_user, languages):
    project_create(name="flores", directions=["en-de"])
    client.force_login(admin_user)
    for url in (
        reverse("projects:new"),
        reverse("projects:settings", args=["flores"]),
        reverse("projects:corpus", args=["flores"]),
    ):
        page = client.get(url).content.decode()
        ids = set(re.findall(r'\bid="([^"]+)"', page))
        described = [i for value in re.findall(r'aria-describedby="([^"]+)"', page) for i in value.split()]
        assert described, url  # the forms have help texts
        assert [i for i in described if i not in ids] == [], url


def test_admin_plurals_and_a_rating_items_name(client, admin_user, project, languages):
    assert (ReviewTally._meta.verbose_name_plural, ScoreSummary._meta.verbose_name_plural) == (
        "review tallies",
        "score summaries",
    )
    client.force_login(admin_user)
    index = client.get(reverse("admin:index")).content.decode()
    assert (
        "Review tallies" in index and "Score summaries" in index and "tallys" not in index and "summarys" not in index
    )
    item = RatingItem.objects.create(
        project=project,
        direction=languages["en-de"],
        kind="system_output",
        external_id="17",
        source="s",
        text="t",
        system="sys-A",
    )
    assert str(item) == "system_output en-de #17 (sys-A)"
