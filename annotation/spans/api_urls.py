"""The span-annotation API, mounted at /api/spans/ (namespace ``spans_api:``)."""

from django.urls import path

from annotation.spans import api

app_name = "spans_api"

urlpatterns = [
    path("tasks/<int:task>/next/", api.NextView.as_view(), name="next"),
    path("tasks/<int:task>/summary/", api.SummaryView.as_view(), name="summary"),
    path("annotations/<int:pk>/", api.AnnotationView.as_view(), name="annotation"),
    path("annotations/<int:pk>/submit/", api.SubmitView.as_view(), name="submit"),
]
