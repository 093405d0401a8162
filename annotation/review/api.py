"""REST API for review queues, decisions, skips and adjudication (same rules as the screens; rating's is
``annotation.rating.api``, mounted in the same ``review_api:`` namespace).

Thin over services/selectors. A refused request is answered by the one exception handler
(``core.errors``): ``{"detail", "field", "code"}`` with the error's status (400 invalid, 403 admins only or
recorded for another user (``client_user``), 409 conflict: closed round, full candidate, key of another user;
422 a key used before for another request), or exactly as a missing thing (404) for one not yours or absent.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.common.api import LANG, client_user_field, id_field, take_next, validated
from annotation.common.selectors import language_codes
from annotation.models import ReviewDecision
from annotation.review import domain as rules
from annotation.review import selectors, services
from core import access
from core.domain.params import MAX_POSITIVE_INT, id_param

# ---- serializers ------------------------------------------------------------------------------------


class PieceSerializer(serializers.Serializer):
    text = serializers.CharField()
    kind = serializers.ChoiceField(choices=[rules.PLAIN, rules.EDIT, rules.MARKER])


class CandidateSerializer(serializers.Serializer):
    """A candidate as the review screen shows it; highlights come from the stored span offsets."""

    id = serializers.IntegerField(source="candidate.id")
    direction = serializers.CharField()
    language = serializers.CharField(source="language.code")
    rtl = serializers.BooleanField(source="language.rtl")
    error_type = serializers.CharField(source="candidate.error_type")
    position = serializers.CharField(source="candidate.position")
    source = serializers.CharField()
    reference_pieces = PieceSerializer(many=True)
    candidate_pieces = PieceSerializer(many=True)
    span = serializers.SerializerMethodField()
    guideline = serializers.SerializerMethodField()
    warnings = serializers.ListField(child=serializers.DictField())

    def get_span(self, obj) -> list[int]:
        return [obj["candidate"].span_start, obj["candidate"].span_end]

    def get_guideline(self, obj) -> dict:
        g = obj["guideline"]
        return {"type": g.name, "summary": g.summary, "accept": list(g.accept), "reject": list(g.reject)}


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    remaining = serializers.IntegerField()
    round = serializers.IntegerField(required=False)


class AssignmentSerializer(serializers.Serializer):
    candidate = CandidateSerializer(allow_null=True)
    round = serializers.IntegerField(allow_null=True, help_text="round id to send back with the decision")
    resumed = serializers.BooleanField()


class DecisionInSerializer(serializers.Serializer):
    candidate = id_field()
    decision = serializers.ChoiceField(choices=ReviewDecision.Decision.choices)
    reason = serializers.CharField(required=False, allow_blank=True, max_length=60)
    comment = serializers.CharField(required=False, allow_blank=True, max_length=services.MAX_COMMENT)
    time_spent_ms = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=MAX_POSITIVE_INT)
    round = id_field(required=False, allow_null=True)
    idempotency_key = serializers.CharField(max_length=64)
    client_user = client_user_field()


class DecisionSerializer(serializers.ModelSerializer):
    round_number = serializers.IntegerField(source="round.number", allow_null=True, read_only=True)

    class Meta:
        model = ReviewDecision
        fields = [
            "id",
            "candidate",
            "round",
            "round_number",
            "decision",
            "reason",
            "comment",
            "source",
            "is_final",
            "time_spent_ms",
            "idempotency_key",
            "created_at",
            "updated_at",
        ]


class SkipInSerializer(serializers.Serializer):
    candidate = id_field()
    reason = serializers.ChoiceField(choices=sorted(rules.reason_codes(rules.SKIP_REASONS)))
    comment = serializers.CharField(required=False, allow_blank=True, max_length=services.MAX_COMMENT)
    round = id_field(required=False, allow_null=True)
    client_user = client_user_field()


class WithdrawalInSerializer(serializers.Serializer):
    candidate = id_field()
    round = id_field(required=False, allow_null=True)
    client_user = client_user_field()


class WithdrawalOutSerializer(serializers.Serializer):
    candidate = serializers.IntegerField()
    round = serializers.IntegerField()
    withdrawn = serializers.ChoiceField(
        choices=["decision", "skip"], allow_null=True, help_text="what was withdrawn; null: nothing of yours was stored"
    )
    held = serializers.BooleanField(help_text="the item is held for you again, to decide anew")


class SkipOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    candidate = serializers.IntegerField()
    reason = serializers.CharField()


class AdjudicationInSerializer(serializers.Serializer):
    candidate = id_field()
    decision = serializers.ChoiceField(choices=ReviewDecision.Decision.choices)
    comment = serializers.CharField(required=False, allow_blank=True, max_length=services.MAX_COMMENT)


# ---- views ------------------------------------------------------------------------------------------


def _reviewer_write(request, v: dict) -> dict:
    """What a reviewer's decision, skip and withdrawal each name: who, which candidate in which round, and the
    user the client recorded it for."""
    return {
        "user": request.user,
        "candidate_id": v["candidate"],
        "round_id": v.get("round"),
        "client_user": v.get("client_user"),
    }


class NextCandidateView(APIView):
    """Take (or resume) the next candidate to review; it is held for you until the lock expires."""

    @extend_schema(request=None, parameters=[LANG], responses=AssignmentSerializer)
    def post(self, request, project):
        got = take_next(request, project, services.candidate_take_next)
        if got is None:
            return Response({"candidate": None, "round": None, "resumed": False})
        data = {"candidate": selectors.candidate_view(got.candidate), "round": got.round.pk, "resumed": got.resumed}
        return Response(AssignmentSerializer(data).data)


class ProgressView(APIView):
    @extend_schema(parameters=[LANG], responses=ProgressSerializer(many=True))
    def get(self, request, project):
        project = access.work_project(request.user, project)
        codes = language_codes(request.user, request.query_params.get("lang"))
        return Response(
            [selectors.progress(request.user, project, rnd, codes) for rnd in selectors.open_rounds(project)]
        )


class CandidateView(APIView):
    @extend_schema(responses=CandidateSerializer)
    def get(self, request, pk):
        candidate = services.candidate_get_visible(user=request.user, candidate_id=pk)
        return Response(CandidateSerializer(selectors.candidate_view(candidate)).data)


class DecisionsView(ListAPIView):
    """Your decisions (admins: everyone's); POST stores one, idempotently by ``idempotency_key``."""

    serializer_class = DecisionSerializer

    def get_queryset(self):
        qs = selectors.decisions_of(self.request.user).order_by("-updated_at")
        if (candidate := self.request.query_params.get("candidate")) is not None:
            qs = qs.filter(candidate_id=cid) if (cid := id_param(candidate)) else qs.none()
        return qs

    @extend_schema(request=DecisionInSerializer, responses={201: DecisionSerializer, 200: DecisionSerializer})
    def post(self, request):
        v = validated(DecisionInSerializer, request)
        decision, created = services.decision_submit(
            **_reviewer_write(request, v),
            decision=v["decision"],
            idempotency_key=v["idempotency_key"],
            reason=v.get("reason", ""),
            comment=v.get("comment", ""),
            time_spent_ms=v.get("time_spent_ms"),
        )
        return Response(
            DecisionSerializer(decision).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class SkipsView(APIView):
    @extend_schema(request=SkipInSerializer, responses={201: SkipOutSerializer})
    def post(self, request):
        v = validated(SkipInSerializer, request)
        skip = services.candidate_skip(**_reviewer_write(request, v), reason=v["reason"], comment=v.get("comment", ""))
        return Response(
            {"id": skip.pk, "candidate": skip.candidate_id, "reason": skip.reason}, status=status.HTTP_201_CREATED
        )


class WithdrawalsView(APIView):
    """Withdraw your decision or skip of a candidate while its round is open (the rule that lets you change
    it); the item is held for you again. Withdrawing what is not stored answers 200 with ``withdrawn`` null."""

    @extend_schema(request=WithdrawalInSerializer, responses={200: WithdrawalOutSerializer})
    def post(self, request):
        v = validated(WithdrawalInSerializer, request)
        got = services.decision_withdraw(**_reviewer_write(request, v))
        return Response(
            {"candidate": got.candidate.pk, "round": got.round.pk, "withdrawn": got.withdrawn, "held": got.held}
        )


class AdjudicationsView(APIView):
    """Admins: record the final decision on a candidate."""

    @extend_schema(request=AdjudicationInSerializer, responses={201: DecisionSerializer})
    def post(self, request):
        v = validated(AdjudicationInSerializer, request)
        decision = services.candidate_adjudicate(
            admin=request.user, candidate_id=v["candidate"], decision=v["decision"], comment=v.get("comment", "")
        )
        return Response(DecisionSerializer(decision).data, status=status.HTTP_201_CREATED)
