from django.urls import include, path

from annotation.people import urls as people_urls
from annotation.rating import urls as rating_urls
from annotation.review import views

# The annotation screens' namespace: review's pages, and mounted here under the names they always had, the
# annotator accounts' (review:annotators, review:invite) and rating's (review:rate, review:rate_next).
app_name = "review"
urlpatterns = [
    path("", views.index, name="index"),
    path("mine/", views.my_decisions, name="mine"),
    path("", include(people_urls)),
    path("", include(rating_urls)),
    path("<slug:project>/next/", views.next_item, name="next"),
    path("<slug:project>/candidate/<int:pk>/", views.candidate, name="candidate"),
    path("<slug:project>/manage/", views.manage, name="manage"),
    path("<slug:project>/adjudication/", views.adjudication, name="adjudication"),
]
