"""The /scores/ URL tree (metric scores, meta-evaluation), spanning two stages. Mounted by ``xqmeval.urls``; the
view modules are the stages' own. Lives at the app's top because it imports from several stages, as
``xqmeval.urls`` does. (/benchmarks/ is ``xqmeval.projects.urls.benchmarks``: its page is a project page.)"""

from django.urls import path

from exports.metaeval import views as metaeval_views
from exports.scores import views as scores_views
from exports.workers import api as worker_api

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

# The worker endpoints (exports.workers.api): a worker token with a job token opens these and nothing else.
workers = (
    [
        path("releases/<int:release_id>/", worker_api.release_manifest, name="release_manifest"),
        path(
            "releases/<int:release_id>/files/<str:direction_code>/test.parquet",
            worker_api.release_file,
            name="release_file",
        ),
        path(
            "releases/<int:release_id>/parts/<str:metric>/<str:direction_code>",
            worker_api.upload_part,
            name="upload_part",
        ),
        # release-direction workers (RELEASE_WORKERS=http)
        path(
            "release-builds/<int:release_id>/directions/<str:direction_code>/rows",
            worker_api.direction_rows,
            name="release_direction_rows",
        ),
        path(
            "release-builds/<int:release_id>/directions/<str:direction_code>/staged",
            worker_api.direction_staged,
            name="release_direction_staged",
        ),
        path(
            "release-builds/<int:release_id>/directions/<str:direction_code>/report",
            worker_api.direction_report,
            name="release_direction_report",
        ),
    ],
    "workers",
)
