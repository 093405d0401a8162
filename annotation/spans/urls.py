"""The span-annotation pages, mounted at /spans/ (namespace ``spans:``)."""

from django.urls import path

from annotation.spans import views

app_name = "spans"

urlpatterns = [
    path("crowd/<int:task>/<str:token>/", views.crowd, name="crowd"),
    path("a/<int:pk>/", views.annotate, name="annotate"),
    path("<slug:project>/", views.tasks, name="tasks"),
    path("<slug:project>/<slug:task>/", views.start, name="start"),
    path("<slug:project>/<slug:task>/done/", views.done, name="done"),
    path("<slug:project>/<slug:task>/quality/", views.quality, name="quality"),
    path("<slug:project>/<slug:task>/annotators/<int:annotator>/", views.annotator_action, name="annotator_action"),
]
