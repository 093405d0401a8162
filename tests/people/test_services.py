"""Annotator accounts through the people services, on a real DB: invitations (look-alike and full-width
usernames) and language assignments, admins only and audited; the same username rules in Django admin's user
form and in ``core.services.create_user``."""

import re

import pytest

from annotation.models import AuditEvent
from annotation.people import services
from core.services import user_create

pytestmark = pytest.mark.django_db


def test_invite_and_assign(admin_user, annotator_de, db):
    user, uid, token = services.annotator_invite(admin=admin_user, username="neu_ja", languages=["ja"])
    assert not user.has_usable_password() and token
    assert list(user.profile.languages.values_list("code", flat=True)) == ["ja"]
    services.annotator_languages_set(admin=admin_user, user=user, codes=["ja", "zh"])
    assert sorted(user.profile.languages.values_list("code", flat=True)) == ["ja", "zh"]
    with pytest.raises(services.Forbidden):
        services.annotator_languages_set(admin=annotator_de, user=user, codes=["de"])
    with pytest.raises(services.Conflict):
        services.annotator_invite(admin=admin_user, username="neu_ja")
    assert AuditEvent.objects.filter(action="annotator.languages").exists()


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
        services.annotator_invite(admin=admin_user, username=typed, languages=["de"])
    assert not get_user_model().objects.filter(username=typed).exists()


def test_invite_normalises_usernames_nfkc_so_full_width_meets_the_existing_user(admin_user, annotator_de, db):
    user, _, _ = services.annotator_invite(
        admin=admin_user, username="ｍｕｌｌｅｒ", languages=["de"]
    )  # full-width letters
    assert user.username == "muller"
    with pytest.raises(services.Conflict, match="muller"):
        services.annotator_invite(admin=admin_user, username="ｍuller")
    one_script, _, _ = services.annotator_invite(
        admin=admin_user, username="иван", languages=["de"]
    )  # one script: allowed
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
