"""Read-only queries shared by views, admin and API."""
from __future__ import annotations

from core import access


def visible_projects(user):
    return access.visible_projects(user)
