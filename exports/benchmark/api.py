"""Read-only API of the benchmark: counts table and releases of a project (directions filtered by access)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import permissions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access
from exports.benchmark import selectors


class ProjectBenchmark(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        summary="Counts per direction and level (min/max per gold pair) and the releases of a project",
        responses=inline_serializer(
            "ProjectBenchmark",
            {
                "project": serializers.CharField(),
                "counts": serializers.DictField(
                    help_text="direction -> {gold_pairs, levels: {k: {total, min_per_pair, max_per_pair}}, total, …}"
                ),
                "releases": serializers.ListField(child=serializers.DictField()),
            },
        ),
    )
    def get(self, request, project: str):
        project_obj = access.visible_project(request.user, project)
        directions = selectors.visible_directions(request.user, project_obj)
        page = selectors.benchmark_summary(project_obj, directions)
        return Response(
            {
                "project": project_obj.name,
                "counts": page["counts"],
                "releases": [selectors.release_summary(r, directions) for r in page["releases"]],
            }
        )
