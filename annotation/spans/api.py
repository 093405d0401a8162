"""REST API of span annotation: the next item of a task, one of your annotations, submitting its spans and
score, and a task's aggregate counts. Thin over services/selectors; a refused request is answered by
``core.errors``'s handler (400 invalid, 403 recorded for another user, 409 conflict, 422 a key used before
for another body, 404 an item not yours or absent)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.common.api import validated
from annotation.models import SpanTask
from annotation.spans import domain as rules
from annotation.spans import selectors, services
from core import access
from core.domain.params import MAX_POSITIVE_INT


class SpanSerializer(serializers.Serializer):
    side = serializers.ChoiceField(choices=rules.SIDES, default=rules.TARGET)
    start = serializers.IntegerField(min_value=0, max_value=MAX_POSITIVE_INT)
    end = serializers.IntegerField(min_value=1, max_value=MAX_POSITIVE_INT)
    severity = serializers.CharField(max_length=10)
    category = serializers.CharField(max_length=80, required=False, allow_blank=True, default="")
    ai_index = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=rules.MAX_SPANS_PER_ITEM
    )


class SpansField(serializers.ListField):
    """The spans, refused as a whole past ``MAX_SPANS_PER_ITEM`` before any is parsed (a flood costs nothing)."""

    def to_internal_value(self, data):
        if isinstance(data, list) and len(data) > rules.MAX_SPANS_PER_ITEM:
            raise serializers.ValidationError(
                f"{len(data)} spans on one item; at most {rules.MAX_SPANS_PER_ITEM} are accepted"
            )
        return super().to_internal_value(data)


class SubmitSerializer(serializers.Serializer):
    spans = SpansField(child=SpanSerializer(), allow_empty=True)
    score = serializers.FloatField(required=False, allow_null=True, help_text="ESA: 0–100; MQM: none (computed)")
    active_ms = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=MAX_POSITIVE_INT)
    idempotency_key = serializers.CharField(max_length=64)
    client_user = serializers.IntegerField(required=False, allow_null=True)


class ErrorSpanOutSerializer(serializers.Serializer):
    side = serializers.CharField()
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    severity = serializers.CharField()
    category = serializers.CharField()
    origin = serializers.CharField()
    ai_index = serializers.IntegerField(allow_null=True)


class AnnotationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    item = serializers.IntegerField(source="item_id")
    task = serializers.CharField(source="item.task.name")
    protocol = serializers.CharField(source="item.task.protocol")
    direction = serializers.CharField(source="item.direction.code")
    source = serializers.CharField(source="item.source")
    translation = serializers.CharField(source="item.translation")
    ai_spans = serializers.JSONField(source="item.ai_spans")
    score = serializers.FloatField(allow_null=True)
    ai_fates = serializers.JSONField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    spans = ErrorSpanOutSerializer(many=True, source="spans.all")


class SummarySerializer(serializers.Serializer):
    protocol = serializers.CharField()
    items = serializers.IntegerField()
    annotations = serializers.IntegerField(help_text="submitted, excluded annotators' left out")
    directions = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="per direction code: items, attention (items), annotations",
    )


class NextSerializer(serializers.Serializer):
    annotation = AnnotationSerializer(allow_null=True, help_text="null when nothing is left")


def _work_task(user, pk) -> SpanTask:
    task = SpanTask.objects.select_related("project").filter(pk=pk).first()
    if task is None:
        raise access.not_found()
    return selectors.work_task(user, task.project.name, task.name)


class NextView(APIView):
    @extend_schema(request=None, responses=NextSerializer)
    def post(self, request, task):
        task = _work_task(request.user, task)
        annotation = services.span_annotation_take_next(user=request.user, task=task)
        return Response({"annotation": AnnotationSerializer(annotation).data if annotation else None})


class AnnotationView(APIView):
    @extend_schema(responses=AnnotationSerializer)
    def get(self, request, pk):
        annotation = services.span_annotation_get_own(user=request.user, annotation_id=pk)
        return Response(AnnotationSerializer(annotation).data)


class SubmitView(APIView):
    """Store your spans (and ESA score) of one of your items; again with a new key changes them."""

    @extend_schema(request=SubmitSerializer, responses={201: AnnotationSerializer, 200: AnnotationSerializer})
    def post(self, request, pk):
        v = validated(SubmitSerializer, request)
        annotation, first = services.span_annotation_submit(
            user=request.user,
            annotation_id=pk,
            spans=[dict(s) for s in v["spans"]],
            score=v.get("score"),
            active_ms=v.get("active_ms"),
            idempotency_key=v["idempotency_key"],
            client_user=v.get("client_user"),
        )
        annotation = services.span_annotation_get_own(user=request.user, annotation_id=annotation.pk)
        return Response(
            AnnotationSerializer(annotation).data, status=status.HTTP_201_CREATED if first else status.HTTP_200_OK
        )


class SummaryView(APIView):
    """A task's aggregate counts (items, annotations, per direction): anyone who sees the project."""

    @extend_schema(responses=SummarySerializer)
    def get(self, request, task):
        found = SpanTask.objects.select_related("project").filter(pk=task).first()
        if found is None:
            raise access.not_found()
        found = selectors.seen_task(request.user, found.project.name, found.name)
        return Response(selectors.task_summary(found))
