from django.contrib.auth.decorators import login_required
from django.urls import path
from django.views.generic import RedirectView

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
    path("<slug:slug>/corpus/", views.corpus_import, name="corpus"),
    path("<slug:slug>/corpus/hub-imports/", views.hub_imports_fragment, name="hub_imports"),
    path("<slug:slug>/corpus/hub-imports/<int:pk>/retry/", views.hub_import_retry, name="hub_import_retry"),
    path("<slug:slug>/xqmeval/", views.xqmeval_import, name="xqmeval"),
]
