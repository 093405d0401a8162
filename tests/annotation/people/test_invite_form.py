"""The annotators page (#37 item 2, 7): an invitation keeps what was typed and lists every problem at once,
each once, on its field; reviewers are assigned per project and direction, and the page edits no global
languages (they no longer decide what an annotator reviews in a project that assigns reviewers); the
invitation link sets the first password, once."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation.models import AuditEvent
from core.models import ReviewerAssignment

pytestmark = pytest.mark.django_db


def _field_errors(page: str, name: str) -> list[str]:
    """The error paragraphs shown under the field ``name`` (its .field block)."""
    block = re.search(rf'<div class="field has-error">(?:(?!<div class="field).)*?name="{name}".*?</div>', page, re.S)
    return re.findall(r'<p class="error" role="alert">([^<]*)</p>', block.group()) if block else []


def test_an_invitation_with_several_problems_lists_them_all_and_keeps_what_was_typed(
    admin_client, project, annotator_de
):
    body = {"action": "invite", "username": "anna_de", "email": "anna@", "reviews": ["demo/en-de", "demo/en-fr"]}
    response = admin_client.post(reverse("review:annotators"), body)
    assert response.status_code == 200
    page = response.content.decode()
    assert _field_errors(page, "username") == ["anna_de is taken: that user already exists."]
    assert _field_errors(page, "email") == ["Enter a valid email address."]
    assert len(_field_errors(page, "reviews")) == 1 and "en-fr" in _field_errors(page, "reviews")[0]
    # what was typed stays
    assert 'name="username" value="anna_de"' in page and 'name="email" value="anna@"' in page
    assert re.search(r'<option value="demo/en-de" selected>', page)
    # each problem is said once: no second copy as a message above the form
    assert page.count("is taken") == 1 and page.count("Enter a valid email address.") == 1
    assert get_user_model().objects.count() == 2  # nothing written


def test_a_valid_invitation_assigns_the_chosen_directions(admin_client, project):
    body = {"action": "invite", "username": "neu_ar", "email": "", "reviews": ["demo/en-ar"]}
    response = admin_client.post(reverse("review:annotators"), body)
    assert response.status_code == 200 and response.context["invite_link"]
    user = get_user_model().objects.get(username="neu_ar")
    assert list(ReviewerAssignment.objects.filter(user=user).values_list("project__name", "direction__code")) == [
        ("demo", "en-ar")
    ]
    assert not user.profile.languages.exists()
    page = response.content.decode()
    assert 'name="username" value="neu_ar"' not in page  # a new, empty form for the next one


def test_the_page_shows_assignments_per_project_and_edits_no_global_languages(admin_client, project, annotator_de):
    ReviewerAssignment.objects.create(
        project=project, direction=project.directions.get(code="en-de"), user=annotator_de
    )
    page = admin_client.get(reverse("review:annotators")).content.decode()
    row = re.search(r"<tr><th scope=\"row\"><bdi>anna_de</bdi></th>.*?</tr>", page, re.S).group()
    assert f'<a href="{reverse("projects:settings", args=["demo"])}#reviewers">demo</a>: en-de' in row
    assert 'name="languages"' not in page and "assign" not in re.findall(r'name="action" value="(\w+)"', page)
    # the old action is refused, naming the field, and changes nothing
    response = admin_client.post(
        reverse("review:annotators"), {"action": "assign", "user": annotator_de.pk, "languages": "zh"}, follow=True
    )
    assert "action: unknown action 'assign'" in [str(m) for m in response.context["messages"]]
    assert list(annotator_de.profile.languages.values_list("code", flat=True)) == ["de"]


def test_invite_link_sets_password_once(admin_client):
    r = admin_client.post(reverse("review:annotators"), {"action": "invite", "username": "new_de"})
    link = r.context["invite_link"]
    path = link.split("testserver", 1)[1]
    client = Client()
    assert client.get(path).status_code == 200
    r = client.post(path, {"new_password1": "a-Strong-pass-987", "new_password2": "a-Strong-pass-987"})
    assert r.status_code == 302
    assert client.login(username="new_de", password="a-Strong-pass-987")
    assert AuditEvent.objects.filter(action="annotator.password_set", actor__username="new_de").count() == 1
    assert Client().get(path).status_code == 400  # used
