from django.contrib.auth.decorators import login_required
from django.urls import path, re_path
from django.views.generic import RedirectView

from exports.benchmark import views as benchmark_views
from exports.release import views as release_views
from xqmeval.projects import views

app_name = "projects"
urlpatterns = [
    path(
        "", login_required(RedirectView.as_view(pattern_name="home")), name="index"
    ),  # the project list is the home page
    path("new/", views.project_new, name="new"),
    path("<slug:slug>/", views.project_page, name="detail"),
    path("<slug:slug>/stages/<str:key>/", views.stage_fragment, name="stage"),
    path("<slug:slug>/metaeval-headline/", views.metaeval_fragment, name="metaeval_headline"),
    path("<slug:slug>/settings/", views.project_settings, name="settings"),
    path("<slug:slug>/settings/reviewers/", views.assignments, name="assignments"),
    path("<slug:slug>/settings/directions/add/", views.direction_add_view, name="direction_add"),
    path("<slug:slug>/settings/directions/<str:code>/<str:action>/", views.direction_action, name="direction_action"),
    path("<slug:slug>/rating-items/", views.rating_items_view, name="rating_items"),
    path("<slug:slug>/span-tasks/<slug:task>/items/", views.span_items_view, name="span_items"),
    path("<slug:slug>/corpus/", views.corpus_import, name="corpus"),
    path("<slug:slug>/corpus/hub-imports/", views.hub_imports_fragment, name="hub_imports"),
    path("<slug:slug>/corpus/hub-imports/<int:pk>/retry/", views.hub_import_retry, name="hub_import_retry"),
    path("<slug:slug>/xqmeval/", views.xqmeval_import, name="xqmeval"),
]

# /benchmarks/ (mounted by xqmeval.urls): the benchmark page, a project page over several stages, with the build's
# and the releases' own views beside it
benchmarks = (
    [
        path("", views.benchmarks_index, name="index"),
        path("<slug:project>/", views.benchmark_page, name="project"),
        path("<slug:project>/status.json", benchmark_views.status, name="status"),
        path("<slug:project>/counts.svg", benchmark_views.counts_plot, name="counts_plot"),
        re_path(
            r"^(?P<project>[-\w]+)/(?P<table>excluded|transplanted)_candidates\.csv$",
            views.benchmark_candidates_csv,
            name="candidates_csv",
        ),
        path("<slug:project>/build", benchmark_views.build, name="build"),
        path("<slug:project>/release", release_views.release, name="release"),
        path("<slug:project>/releases/<str:version>/push", release_views.push, name="push"),
    ],
    "benchmarks",
)
