"""The annotator accounts' URLs. Mounted by ``annotation.review.urls`` inside its ``review:`` namespace (the
names ``review:annotators`` and ``review:invite`` are the site's), so this module names no namespace of its own."""

from django.urls import path

from annotation.people import views

urlpatterns = [
    path("annotators/", views.annotators, name="annotators"),
    path("invite/<str:uidb64>/<str:token>/", views.invite, name="invite"),
]
