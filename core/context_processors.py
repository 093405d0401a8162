"""Template context every page needs: whether to show the admins' menu entries (core.access decides)."""

from core import access


def navigation(request) -> dict:
    return {"nav_admin": access.is_admin(getattr(request, "user", None))}
