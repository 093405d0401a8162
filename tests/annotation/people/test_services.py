"""Annotator accounts through the people services, on a real DB: invitations (look-alike and full-width
usernames) and language assignments, admins only and audited; the same username rules in Django admin's user
form and in ``core.services.user_create``."""

import re

import pytest

from annotation.models import AuditEvent
from annotation.people import services
from core.services import user_create

pytestmark = pytest.mark.django_db


def test_invite_assigns_per_project_not_global_languages(admin_user, annotator_de, project):
    user, uid, token = services.annotator_invite(admin=admin_user, username="neu_ja", reviews=[("demo", "en-ja")])
    assert not user.has_usable_password() and token
    assert not user.profile.languages.exists()  # no global language: the assignment decides
    assert list(user.review_assignments.values_list("project__name", "direction__code")) == [("demo", "en-ja")]
    with pytest.raises(services.Forbidden):
        services.annotator_invite(admin=annotator_de, username="neu_zh")
    with pytest.raises(services.Conflict):
        services.annotator_invite(admin=admin_user, username="neu_ja")
    with pytest.raises(services.Invalid, match="reviews: demo/en-fr"):
        services.annotator_invite(admin=admin_user, username="neu_fr", reviews=[("demo", "en-fr")])
    event = AuditEvent.objects.get(action="annotator.invite")
    assert event.new == {"username": "neu_ja", "reviews": ["demo/en-ja"]}


@pytest.mark.parametrize(
    ("typed", "problem"),
    [
        ("аdmin", "mixes Latin and Cyrillic letters that look alike (а)"),  # a Cyrillic а
        ("pаypal_ok", "mixes Latin and Cyrillic letters that look alike (а)"),
    ],
)
def test_invite_refuses_look_alike_usernames_and_writes_nothing(admin_user, db, typed, problem):
    from django.contrib.auth import get_user_model

    with pytest.raises(services.Invalid, match=r"username: " + re.escape(problem)):
        services.annotator_invite(admin=admin_user, username=typed)
    assert not get_user_model().objects.filter(username=typed).exists()


def test_invite_normalises_usernames_nfkc_so_full_width_meets_the_existing_user(admin_user, annotator_de, db):
    user, _, _ = services.annotator_invite(admin=admin_user, username="ｍｕｌｌｅｒ")  # full-width letters
    assert user.username == "muller"
    with pytest.raises(services.Conflict, match="muller"):
        services.annotator_invite(admin=admin_user, username="ｍuller")
    one_script, _, _ = services.annotator_invite(admin=admin_user, username="иван")  # one script: allowed
    assert one_script.username == "иван"


def test_admin_user_form_refuses_look_alike_usernames(admin_client):
    from django.contrib.auth import get_user_model

    response = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "аdmin",
            "password1": "a-Strong-pass-987",
            "password2": "a-Strong-pass-987",
            "usable_password": "true",
        },
    )
    assert response.status_code == 200
    assert "mixes Latin and Cyrillic letters that look alike" in response.content.decode()
    assert not get_user_model().objects.filter(username="аdmin").exists()


def test_create_user_refuses_a_bidi_control_in_a_new_name(db):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        user_create(username="ben\u202e_de", password="ben-pass-123", languages=["de"])


def test_user_names_are_compared_without_case_on_every_path(admin_user, admin_client, db):
    """#48.5: ``ANNA`` could be created beside ``anna``."""
    from django.contrib.auth import get_user_model
    from django.core.exceptions import ValidationError

    from core.services import user_create

    User = get_user_model()
    anna, _, _ = services.annotator_invite(admin=admin_user, username="anna")
    with pytest.raises(services.Conflict, match=r"ANNA is taken: user anna already exists"):
        services.annotator_invite(admin=admin_user, username="ANNA")
    with pytest.raises(ValidationError, match="user anna already exists"):
        user_create(username="Anna", password="pw-123456-x")  # commands, the demo
    response = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "aNNa",
            "password1": "a-Strong-pass-987",
            "password2": "a-Strong-pass-987",
            "usable_password": "true",
        },
    )
    assert response.status_code == 200 and "already exists" in response.content.decode()
    bob = user_create(username="bob", password="pw-123456-x")
    response = admin_client.post(
        f"/admin/auth/user/{bob.pk}/change/",
        {"username": "ANNA", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"},
    )
    assert response.status_code == 200 and "user anna already exists" in response.content.decode()
    assert sorted(User.objects.filter(username__iexact="anna").values_list("username", flat=True)) == ["anna"]
    user_create(username="anna", password="pw-new-123456")  # the same name updates its user, as before
    assert User.objects.filter(username__iexact="anna").count() == 1
