"""The two URL trees users know, each spanning several stages: /benchmarks/ (benchmark build, releases)
and /scores/ (metric scores, meta-evaluation). Mounted by ``xqmeval.urls``; the view modules are the
stages' own. Lives at the app's top because it imports from several stages, as ``xqmeval.urls`` does."""

from django.urls import path, re_path

from exports.benchmark import views as benchmark_views
from exports.metaeval import views as metaeval_views
from exports.release import views as release_views
from exports.scores import api as worker_api
from exports.scores import views as scores_views

benchmarks = (
    [
        path("", release_views.index, name="index"),
        path("<slug:project>/", release_views.project_page, name="project"),
        path("<slug:project>/status.json", benchmark_views.status, name="status"),
        path("<slug:project>/counts.svg", benchmark_views.counts_plot, name="counts_plot"),
        re_path(
            r"^(?P<project>[-\w]+)/(?P<table>excluded|transplanted)_candidates\.csv$",
            release_views.candidates_csv,
            name="candidates_csv",
        ),
        path("<slug:project>/build", benchmark_views.build, name="build"),
        path("<slug:project>/release", release_views.release, name="release"),
        path("<slug:project>/releases/<str:version>/push", release_views.push, name="push"),
    ],
    "benchmarks",
)

scores = (
    [
        path("", scores_views.index, name="index"),
        path("<int:release_id>/", scores_views.release_scores, name="release"),
        path("<int:release_id>/progress", scores_views.progress, name="progress"),
        path("<int:release_id>/trend.svg", scores_views.trend_plot, name="trend_plot"),
        path("<int:release_id>/metaeval/", metaeval_views.metaeval_page, name="metaeval"),
        path("<int:release_id>/leaderboard/", metaeval_views.leaderboard_page, name="leaderboard"),
        path("<int:release_id>/diagnostics/", metaeval_views.diagnostics_page, name="diagnostics"),
        path("<int:release_id>/start", scores_views.start, name="start"),
    ],
    "scores",
)

# The worker endpoints (exports.scores.api): a worker token opens these and nothing else.
workers = (
    [
        path("releases/<int:release_id>/", worker_api.release_manifest, name="release_manifest"),
        path(
            "releases/<int:release_id>/files/<str:direction>/test.parquet",
            worker_api.release_file,
            name="release_file",
        ),
        path(
            "releases/<int:release_id>/parts/<str:metric>/<str:direction>",
            worker_api.upload_part,
            name="upload_part",
        ),
    ],
    "workers",
)
