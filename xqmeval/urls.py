from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from core import views as core_views

# Each area owns its URL module; this file only mounts them.
urlpatterns = [
    path("", core_views.home, name="home"),
    path("healthz", core_views.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("projects/", include("xqmeval.projects.urls")),  # project page (the pipeline), new project, imports
    path("review/", include("annotation.urls")),  # review queue, review and Likert screens, adjudication
    path("agreement/", include("annotation.agreement_urls")),  # agreement dashboard, plots, downloads
    path("injection/", include("injection.urls")),  # injection runs: start, watch, cancel, retry
    path("benchmarks/", include("exports.urls")),  # merging counts, releases, scores
    path("scores/", include("exports.scoring_urls")),  # metric scores by release, direction, level; scoring jobs
    path("api/review/", include("annotation.api_urls")),
    path("api/benchmarks/", include("exports.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI from drf-spectacular-sidecar (our static files, no CDN); its settings script is a separate request (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html"), name="api-docs"),
    path("admin/", admin.site.urls),
]
