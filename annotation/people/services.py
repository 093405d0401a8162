"""Write operations on the people who annotate: inviting an annotator (an account without a usable password and
a set-password link), assigned to review directions of projects (``core.ReviewerAssignment``, which decides
what they may see: ``core.access``; a project's settings page changes them later). Admins only; every change
is audited (``annotation.common.audit``); refusals are ``core.domain.errors``.
"""

from __future__ import annotations

import secrets

from django.db import transaction

from annotation.common.audit import audit_record
from core import access
from core.domain.errors import Conflict, Forbidden, Invalid
from core.models import Project
from core.selectors import active_directions
from core.services import assignments_add, user_create, username_clean


def annotator_invite(*, admin, username: str, email: str = "", reviews: list[tuple[str, str]] = ()):
    """Create an annotator without a usable password, assigned to review ``reviews`` ((project, direction)
    pairs); returns (user, uidb64, token) for a set-password link the admin sends them (Django's
    password-reset token: single use, expires). The site's form checks every field first
    (``annotation.people.forms.InviteForm``); here each is checked again, for other callers."""
    from django.contrib.auth.tokens import default_token_generator
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    access.require_admin(admin, error=Forbidden)
    username = (username or "").strip()
    if not username:
        raise Invalid("username is required", "username")
    try:  # Django's own rules (letters, digits and @/./+/-/_ only, at most 150), NFKC, no look-alike letters
        username = username_clean(username=username)
    except ValidationError as exc:
        if exc.code == "taken":  # an existing name, compared without case
            raise Conflict(f"username {' '.join(exc.messages)}", "username") from None
        raise Invalid(f"username: {' '.join(exc.messages)}", "username") from None
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise Invalid("email: enter a valid email address", "email") from None
    assignments = []
    for project_name, code in reviews:
        project = Project.objects.filter(name=project_name).first()
        direction = active_directions(project).filter(code=code).first() if project else None
        if direction is None:
            raise Invalid(f"reviews: {project_name}/{code} is not an active direction of a project", "reviews")
        assignments.append((project, direction))
    with transaction.atomic():
        user = user_create(username=username, password=secrets.token_urlsafe(24), email=email)
        user.set_unusable_password()
        user.save(update_fields=["password"])
        assignments_add(user=user, directions=assignments)
        reviewed = sorted(f"{p.name}/{d.code}" for p, d in assignments)
        audit_record(
            actor=admin, action="annotator.invite", obj=user, old=None, new={"username": username, "reviews": reviewed}
        )
    return user, urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)


def annotator_password_set(*, user, password: str) -> None:
    """The first password an invited annotator sets through their link (the form checked it against the
    password validators), recorded in the audit trail."""
    with transaction.atomic():
        user.set_password(password)
        user.save(update_fields=["password"])
        audit_record(actor=user, action="annotator.password_set", obj=user)
