from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from exports import urls as exports_urls
from xqmeval import views as site_views
from xqmeval.projects import urls as project_urls

# Each stage owns its URL module; this file only mounts them (two trees users know span several stages:
# /benchmarks/, the benchmark page's tree in xqmeval.projects.urls, and /scores/ in exports.urls).
urlpatterns = [
    path("", site_views.home, name="home"),
    path("healthz", site_views.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("projects/", include("xqmeval.projects.urls")),  # project page (the pipeline), new project, imports
    path("review/", include("annotation.review.urls")),  # review queue, review and Likert screens, adjudication
    path("spans/", include("annotation.spans.urls")),  # error-span annotation (ESA, MQM): tasks, screen, quality
    path("agreement/", include("annotation.agreement.urls")),  # agreement dashboard, plots, downloads
    path("injection/", include("injection.urls")),  # injection runs: start, watch, cancel, retry
    path("benchmarks/", include(project_urls.benchmarks)),  # merging counts, releases, scores
    path("scores/", include(exports_urls.scores)),  # metric scores by release, direction, level; scoring jobs
    path("api/review/", include("annotation.review.api_urls")),
    path("api/spans/", include("annotation.spans.api_urls")),
    path("api/benchmarks/", include("exports.benchmark.api_urls")),
    path("api/workers/", include(exports_urls.workers)),  # scoring workers with a token (no shared file system)
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI from drf-spectacular-sidecar (our static files, no CDN); its settings script is a separate request (CSP).
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html"),
        name="api-docs",
    ),
    path("admin/", admin.site.urls),
]
