from django.urls import path

from exports.benchmark import api

app_name = "benchmarks_api"
urlpatterns = [
    path("<slug:project>/", api.ProjectBenchmark.as_view(), name="project"),
]
