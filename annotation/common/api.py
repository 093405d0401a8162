"""What the annotation rooms' APIs share: an id in a request body, the ``lang`` query parameter."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from core import access
from core.domain.params import MAX_ID


def id_field(**kwargs) -> serializers.IntegerField:
    """An id in a request body: a 400 for values no row can have (never a database overflow)."""
    return serializers.IntegerField(min_value=1, max_value=MAX_ID, **kwargs)


def client_user_field() -> serializers.IntegerField:
    """The user a client recorded a submission for: refused (403) unless it is the one sending it
    (``annotation.common.submissions.check_owner``)."""
    return serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="the user id the client recorded this for (the review screen sends it); refused with 403 if it is not you",
    )


def validated(serializer: type[serializers.Serializer], request) -> dict:
    """The request's body as ``serializer`` reads it; a 400 naming each bad field otherwise."""
    data = serializer(data=request.data)
    data.is_valid(raise_exception=True)
    return data.validated_data


def take_next(request, project: str, take):
    """A POST to a project's ``next/``: ``take`` (a room's service) for the user, in the project by name (one
    they work on) and the target language asked for (``lang``, default: all of theirs)."""
    project = access.work_project(request.user, project)
    return take(user=request.user, project=project, language=request.query_params.get("lang"))


LANG = OpenApiParameter("lang", str, description="one of your target languages (default: all of them)")
