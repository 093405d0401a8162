"""Write operations on the people who annotate: inviting an annotator (an account without a usable password and
a set-password link) and assigning their languages, which decide what they may see (``core.access``). Admins
only; every change is audited, with the review stage's errors and audit trail (``annotation.review.services``).
"""

from __future__ import annotations

import secrets

from django.db import transaction

from annotation.review.services import Conflict, Forbidden, Invalid, audit_record
from core import access
from core.models import Profile
from core.services import language_ensure, user_create, username_clean


def annotator_languages_set(*, admin, user, codes: list[str]) -> None:
    access.require_admin(admin, error=Forbidden)
    with transaction.atomic():
        profile, _ = Profile.objects.get_or_create(user=user)
        old = sorted(profile.languages.values_list("code", flat=True))
        try:
            languages = [language_ensure(code=c) for c in codes]
        except (KeyError, ValueError) as exc:
            raise Invalid(f"unknown language code: {exc}", "languages") from None
        if sorted({language.code for language in languages}) != old:  # the same languages again record nothing
            profile.languages.set(languages)
            audit_record(
                actor=admin,
                action="annotator.languages",
                obj=user,
                old={"languages": old},
                new={"languages": sorted(codes)},
            )


def annotator_invite(*, admin, username: str, email: str = "", languages: list[str] = ()):
    """Create an annotator without a usable password; returns (user, uidb64, token) for a set-password
    link the admin sends them (Django's password-reset token: single use, expires)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.tokens import default_token_generator
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    access.require_admin(admin, error=Forbidden)
    username = (username or "").strip()
    if not username:
        raise Invalid("username is required", "username")
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    try:  # Django's own rules (letters, digits and @/./+/-/_ only, at most 150), NFKC, no look-alike letters
        username = username_clean(username=username)
    except ValidationError as exc:
        raise Invalid(f"username: {' '.join(exc.messages)}", "username") from None
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise Invalid("email: enter a valid email address", "email") from None
    if get_user_model().objects.filter(username=username).exists():
        raise Conflict(f"username {username!r} is taken: that user already exists", "username")
    with transaction.atomic():
        try:
            user = user_create(
                username=username, password=secrets.token_urlsafe(24), languages=list(languages), email=email
            )
        except (KeyError, ValueError) as exc:
            raise Invalid(f"unknown language code: {exc}", "languages") from None
        user.set_unusable_password()
        user.save(update_fields=["password"])
        audit_record(
            actor=admin,
            action="annotator.invite",
            obj=user,
            old=None,
            new={"username": username, "languages": sorted(languages)},
        )
    return user, urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)
