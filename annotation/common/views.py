"""What the annotation rooms' pages share."""

from __future__ import annotations


def lang_param(request) -> str | None:
    """The one language a page was asked for (``?lang=`` or the posted form's), None: all of the user's."""
    return request.GET.get("lang") or request.POST.get("lang") or None
