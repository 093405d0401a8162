"""Small HTTP helpers shared by the views."""
from __future__ import annotations

from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme


def redirect_next(request, *fallback_args, **fallback_kwargs):
    """Redirect to the form's ``next`` (a page of this site only, e.g. the project page the action was
    started from), else to ``redirect(*fallback_args, **fallback_kwargs)``."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect(*fallback_args, **fallback_kwargs)
