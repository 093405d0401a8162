from django.urls import path

from annotation.review import views

app_name = "review"
urlpatterns = [
    path("", views.index, name="index"),
    path("mine/", views.my_decisions, name="mine"),
    path("annotators/", views.annotators, name="annotators"),
    path("invite/<str:uidb64>/<str:token>/", views.invite, name="invite"),
    path("rate/<int:pk>/", views.rate, name="rate"),
    path("<slug:project>/next/", views.next_item, name="next"),
    path("<slug:project>/candidate/<int:pk>/", views.candidate, name="candidate"),
    path("<slug:project>/rate/next/", views.next_rating, name="rate_next"),
    path("<slug:project>/manage/", views.manage, name="manage"),
    path("<slug:project>/adjudication/", views.adjudication, name="adjudication"),
]
