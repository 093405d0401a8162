"""What the annotation rooms' APIs share: an id in a request body, the ``lang`` query parameter."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from core.domain.params import MAX_ID


def id_field(**kwargs) -> serializers.IntegerField:
    """An id in a request body: a 400 for values no row can have (never a database overflow)."""
    return serializers.IntegerField(min_value=1, max_value=MAX_ID, **kwargs)


LANG = OpenApiParameter("lang", str, description="one of your target languages (default: all of them)")
