"""REST API for rating: the next item to rate, an item, your ratings (same rules as the rating screen).
Mounted by ``annotation.review.api_urls`` in the ``review_api:`` namespace (``/api/review/``).

Thin over services/selectors; a refused request is answered by ``core.errors``'s exception handler (400
invalid, 403 recorded for another user, 409 conflict, 422 a key used before for another request, 404 an item
not yours or absent).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.common.api import LANG, client_user_field, id_field, take_next, validated
from annotation.models import LikertRating
from annotation.rating import domain as rules
from annotation.rating import selectors, services
from core.domain.params import MAX_POSITIVE_INT

# ---- serializers ------------------------------------------------------------------------------------


class RatingItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    direction = serializers.CharField(source="direction.code")
    rtl = serializers.BooleanField(source="direction.target.rtl")
    source = serializers.CharField()
    reference = serializers.CharField()
    text = serializers.CharField()
    system = serializers.CharField()


class NextRatingItemSerializer(serializers.Serializer):
    item = RatingItemSerializer(allow_null=True, help_text="null when nothing is left to rate")


class RatingInSerializer(serializers.Serializer):
    item = id_field()
    informativeness = serializers.IntegerField(required=False, allow_null=True)
    clarity = serializers.IntegerField(required=False, allow_null=True)
    plausibility = serializers.IntegerField(required=False, allow_null=True)
    faithfulness = serializers.IntegerField(required=False, allow_null=True)
    time_spent_ms = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=MAX_POSITIVE_INT)
    idempotency_key = serializers.CharField(max_length=64)
    client_user = client_user_field()


class RatingSerializer(serializers.ModelSerializer):
    class Meta:
        model = LikertRating
        fields = ["id", "item", *rules.DIMENSION_NAMES, "time_spent_ms", "idempotency_key", "created_at", "updated_at"]


# ---- views ------------------------------------------------------------------------------------------


class NextRatingItemView(APIView):
    @extend_schema(request=None, parameters=[LANG], responses=NextRatingItemSerializer)
    def post(self, request, project):
        item = take_next(request, project, services.rating_item_take_next)
        return Response({"item": RatingItemSerializer(item).data if item else None})


class RatingItemView(APIView):
    @extend_schema(responses=RatingItemSerializer)
    def get(self, request, pk):
        item = services.rating_item_get_visible(user=request.user, item_id=pk)
        return Response(RatingItemSerializer(item).data)


class RatingsView(ListAPIView):
    """Your Likert ratings (admins: everyone's); POST stores one; all four dimensions are required."""

    serializer_class = RatingSerializer

    def get_queryset(self):
        return selectors.ratings_of(self.request.user).order_by("-updated_at")

    @extend_schema(request=RatingInSerializer, responses={201: RatingSerializer, 200: RatingSerializer})
    def post(self, request):
        v = validated(RatingInSerializer, request)
        rating, created = services.rating_submit(
            user=request.user,
            item_id=v["item"],
            scores={n: v.get(n) for n in rules.DIMENSION_NAMES},
            idempotency_key=v["idempotency_key"],
            time_spent_ms=v.get("time_spent_ms"),
            client_user=v.get("client_user"),
        )
        return Response(
            RatingSerializer(rating).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )
