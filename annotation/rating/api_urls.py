"""The rating API's URLs. Mounted by ``annotation.review.api_urls`` inside its ``review_api:`` namespace (the
names ``review_api:rating_next``, ``rating_item``, ``ratings`` are the API's), so no namespace of its own."""

from django.urls import path

from annotation.rating import api

urlpatterns = [
    path("projects/<slug:project>/rating-next/", api.NextRatingItemView.as_view(), name="rating_next"),
    path("rating-items/<int:pk>/", api.RatingItemView.as_view(), name="rating_item"),
    path("ratings/", api.RatingsView.as_view(), name="ratings"),
]
