from django.urls import path

from annotation.agreement import views

app_name = "agreement"
urlpatterns = [
    path("", views.index, name="index"),
    path("<slug:project>/", views.dashboard, name="dashboard"),
    path("<slug:project>/annotators/", views.annotators, name="annotators"),
    path("<slug:project>/tables/<slug:table>.<slug:fmt>", views.download, name="download"),
    path("<slug:project>/plots/<slug:plot>.svg", views.plot, name="plot"),
    path("<slug:project>/spans/<slug:task>/", views.spans, name="spans"),
]
