from django.urls import path

from annotation.review import api

app_name = "review_api"
urlpatterns = [
    path("projects/<slug:project>/next/", api.NextCandidateView.as_view(), name="next"),
    path("projects/<slug:project>/progress/", api.ProgressView.as_view(), name="progress"),
    path("projects/<slug:project>/rating-next/", api.NextRatingItemView.as_view(), name="rating_next"),
    path("candidates/<int:pk>/", api.CandidateView.as_view(), name="candidate"),
    path("decisions/", api.DecisionsView.as_view(), name="decisions"),
    path("skips/", api.SkipsView.as_view(), name="skips"),
    path("withdrawals/", api.WithdrawalsView.as_view(), name="withdrawals"),
    path("rating-items/<int:pk>/", api.RatingItemView.as_view(), name="rating_item"),
    path("ratings/", api.RatingsView.as_view(), name="ratings"),
    path("adjudications/", api.AdjudicationsView.as_view(), name="adjudications"),
]
