"""Celery tasks of the benchmark (queue ``default``): merging, releases, Hub pushes.

Idempotent: a build only rewrites changed gold pairs; a release regenerates the same bytes or is refused;
a push skips files already on the Hub and a commit already tagged. Transient database faults are retried
with backoff; failures are recorded on the build or release with their reason."""
from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from exports import services
from exports.models import BenchmarkBuild, Release

RETRY = dict(autoretry_for=(OperationalError,), retry_backoff=True, retry_backoff_max=60, max_retries=3)


@shared_task(name="exports.build_benchmark", **RETRY)
def build_benchmark_task(build_id: int, force: bool = False) -> dict:
    build = BenchmarkBuild.objects.select_related("project").get(pk=build_id)
    services.run_build(build, force=force)
    return {"build": build.pk, "status": build.status, "pseudo_created": build.pseudo_created}


@shared_task(name="exports.create_release", **RETRY)
def create_release_task(project_id: int, version: str, formats: list[str] | None = None, push_repo: str = "", private: bool = True, user_id: int | None = None) -> dict:
    from django.contrib.auth import get_user_model

    from core.models import Project

    project = Project.objects.get(pk=project_id)
    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    release = services.create_release(project, version, formats=tuple(formats or ()), user=user)
    if push_repo:
        release = services.push_release(release, push_repo, private=private)
    return {"release": release.pk, "content_hash": release.content_hash, "hub_revision": release.hub_revision}


def is_transient(exc: Exception) -> bool:
    import httpx
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, httpx.TransportError):
        return True
    response = getattr(exc, "response", None)
    return isinstance(exc, HfHubHTTPError) and response is not None and response.status_code >= 500


@shared_task(name="exports.push_release", bind=True, max_retries=3)
def push_release_task(self, release_id: int, repo_id: str, private: bool = True) -> dict:
    release = Release.objects.select_related("project").get(pk=release_id)
    try:
        release = services.push_release(release, repo_id, private=private)
    except Exception as exc:
        if not is_transient(exc):
            raise  # bad request, no token, refused by the Hub: recorded on the release; retrying cannot help
        # network fault or Hub 5xx: retry with backoff; the push resumes where it stopped
        raise self.retry(exc=exc, countdown=min(300, 10 * 2 ** self.request.retries))
    return {"release": release.pk, "hub_revision": release.hub_revision}


@shared_task(name="exports.metaeval_headline", **RETRY)
def metaeval_headline_task(release_id: int, metric: str) -> dict:
    """The project page's meta-evaluation headline of one metric on a release, into the cache."""
    from exports.metaeval_selectors import compute_headline

    return compute_headline(Release.objects.get(pk=release_id), metric)
