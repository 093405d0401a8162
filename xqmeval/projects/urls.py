from django.urls import path

from xqmeval.projects import views

app_name = "projects"
urlpatterns = [
    path("new/", views.project_new, name="new"),
    path("<slug:slug>/", views.project_page, name="detail"),
    path("<slug:slug>/stages/<str:key>/", views.stage_fragment, name="stage"),
    path("<slug:slug>/metaeval-headline/", views.metaeval_fragment, name="metaeval_headline"),
    path("<slug:slug>/corpus/", views.corpus_import, name="corpus"),
    path("<slug:slug>/xqmeval/", views.xqmeval_import, name="xqmeval"),
]
