"""The annotator accounts' pages: the annotators page (invite an annotator, see who reviews what) and the
invitation link's set-password page. Thin: reads through selectors, writes through services. Their URL names
stay in the ``review:`` namespace (``annotation.review.urls`` mounts ``annotation.people.urls``); their
templates are ``review/annotators.html`` and ``review/invite.html``.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.contrib.auth.tokens import default_token_generator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode
from django.views.decorators.http import require_http_methods

from annotation.people import selectors, services
from annotation.people.forms import InviteForm
from core import access
from core.domain.errors import AppError


@login_required
@require_http_methods(["GET", "POST"])
def annotators(request):
    """Invite annotators and see who reviews what, per project (each project's settings change it)."""
    access.require_admin(request.user)
    form = InviteForm(request.POST if request.method == "POST" else None)
    invite_link = None
    if request.method == "POST":
        if request.POST.get("action") != "invite":
            messages.error(request, f"action: unknown action {request.POST.get('action', '')!r}")
            return redirect("review:annotators")
        if form.is_valid():
            try:
                user, uid, token = services.annotator_invite(
                    admin=request.user,
                    username=form.cleaned_data["username"],
                    email=form.cleaned_data["email"],
                    reviews=form.cleaned_data["reviews"],
                )
            except AppError as exc:  # a direction retired or a name taken meanwhile
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            else:
                invite_link = request.build_absolute_uri(reverse("review:invite", args=[uid, token]))
                messages.success(
                    request, f"Annotator {user.username} created. Send them the link below to set a password."
                )
                form = InviteForm()
    return render(
        request,
        "review/annotators.html",
        {"form": form, "rows": selectors.reviewers_by_project(), "invite_link": invite_link},
    )


@require_http_methods(["GET", "POST"])
def invite(request, uidb64, token):
    """Set the first password from an invitation link (the only page reachable without login)."""
    User = get_user_model()
    try:
        user = User.objects.get(pk=force_str(urlsafe_base64_decode(uidb64)))
    except (User.DoesNotExist, ValueError, TypeError, OverflowError):
        user = None
    if user is None or not default_token_generator.check_token(user, token):
        return render(
            request,
            "review/error.html",
            {"message": "This invitation link is invalid or was already used."},
            status=400,
        )
    form = SetPasswordForm(user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.annotator_password_set(user=user, password=form.cleaned_data["new_password1"])
        messages.success(request, "Password set. Log in to start reviewing.")
        return redirect("login")
    return render(request, "review/invite.html", {"form": form, "invited": user})
