from django.urls import include, path

from annotation.rating import api_urls as rating_api_urls
from annotation.review import api

app_name = "review_api"
urlpatterns = [
    path("projects/<slug:project>/next/", api.NextCandidateView.as_view(), name="next"),
    path("projects/<slug:project>/progress/", api.ProgressView.as_view(), name="progress"),
    path("candidates/<int:pk>/", api.CandidateView.as_view(), name="candidate"),
    path("decisions/", api.DecisionsView.as_view(), name="decisions"),
    path("skips/", api.SkipsView.as_view(), name="skips"),
    path("withdrawals/", api.WithdrawalsView.as_view(), name="withdrawals"),
    path("adjudications/", api.AdjudicationsView.as_view(), name="adjudications"),
    # rating's API, under the same names it always had (review_api:rating_next, rating_item, ratings)
    path("", include(rating_api_urls)),
]
