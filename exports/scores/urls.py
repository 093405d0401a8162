from django.urls import path

from exports.scores import views as scoring_views

app_name = "scores"
urlpatterns = [
    path("", scoring_views.index, name="index"),
    path("<int:release_id>/", scoring_views.release_scores, name="release"),
    path("<int:release_id>/progress", scoring_views.progress, name="progress"),
    path("<int:release_id>/trend.svg", scoring_views.trend_plot, name="trend_plot"),
    path("<int:release_id>/metaeval/", scoring_views.metaeval_page, name="metaeval"),
    path("<int:release_id>/start", scoring_views.start, name="start"),
]
