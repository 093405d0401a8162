"""The rating screens' URLs. Mounted by ``annotation.review.urls`` inside its ``review:`` namespace (the names
``review:rate`` and ``review:rate_next`` are the site's), so this module names no namespace of its own."""

from django.urls import path

from annotation.rating import views

urlpatterns = [
    path("rate/<int:pk>/", views.rate, name="rate"),
    path("<slug:project>/rate/next/", views.next_rating, name="rate_next"),
]
