from django.urls import path

from exports.benchmark import views

app_name = "benchmarks"
urlpatterns = [
    path("", views.index, name="index"),
    path("<slug:project>/", views.project_page, name="project"),
    path("<slug:project>/status.json", views.status, name="status"),
    path("<slug:project>/counts.svg", views.counts_plot, name="counts_plot"),
    path("<slug:project>/build", views.build, name="build"),
    path("<slug:project>/release", views.release, name="release"),
    path("<slug:project>/releases/<str:version>/push", views.push, name="push"),
]
