"""Done-when of issue 40 (releases): the web app (gunicorn) and a platform worker (queue ``default``) with one
data directory, a release-direction worker and a scoring worker each with its own, sharing only Redis and
HTTP, on PostgreSQL. The release worker is the web app's code with a database it cannot reach: its task
touches no database. A release of the XQ-MEval data is built through the workers (RELEASE_WORKERS=http),
scored with chrF++ and an LLM judge (GEMBA-MQM against the OpenAI-compatible stub) over HTTP and ingested;
the release is byte for byte the release written on the shared file system, and the scores are those of a
scoring worker on the shared file system. Also: a release worker killed in the middle of an upload leaves
nothing on the platform, and the task, delivered again, completes the release."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from django.db import transaction

from core.models import Project
from exports.benchmark.services import build_run
from exports.models import Release, StagedUpload
from exports.release import services as release_services
from exports.release import tasks as release_tasks
from exports.release.domain import release_files
from exports.scores import tasks
from exports.workers import services as worker_services
from tests.exports.conftest import import_languages, seeded  # noqa: F401  (fixture: a small two-direction project)
from tests.exports.scores.test_scoring_jobs import broker  # noqa: F401  (fixture: the platform's app on Redis)
from tests.support.asserts import every
from tests.workers.processes import Processes
from tests.workers.test_http_workers import LIMIT, StallingProxy, scores, wait_done

pytestmark = [pytest.mark.redis, pytest.mark.slow, pytest.mark.subprocess, pytest.mark.django_db(transaction=True)]

SMALL_PLAN = {"monolingual_repetitions": 3, "multilingual_repetitions": 4}


def wait_release(project: Project, version: str, running: Processes, timeout: float = 300.0) -> Release:
    deadline = time.monotonic() + timeout
    release = None
    while time.monotonic() < deadline:
        release = Release.objects.filter(project=project, version=version).first()
        if release is not None and release.status in ("ready", "failed"):
            return release
        time.sleep(0.5)
    state = (release.status, release.stage, release.directions) if release else None
    raise AssertionError(f"release {version}: {state}\n{running.tail()}")


def start_release(project: Project, version: str) -> None:
    with transaction.atomic():
        release_tasks.start_release(project=project, version=version)


def shared_fs_release(project: Project, out: Path) -> dict:
    """Release 1.0.0 of ``project`` written in this process, on this file system (its manifest)."""
    plan = release_services.sampling_plan_make(project=project)
    content = release_services.release_content_make(project=project, version="1.0.0", plan=plan)
    return release_files.write_release(content, out)


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_release_built_and_scored_through_workers_sharing_only_redis_and_http_is_the_shared_file_systems(
    procs,
    shared_data,
    admin_user,
    tmp_path,
):
    from scoring.judges.stub import JudgeStubServer

    import_languages("xqm", shared_data, ["de", "zh"])
    project = Project.objects.get(name="xqm")
    project.options = {"sampling": SMALL_PLAN}
    project.save()
    build_run(project=project)
    web, releaser, scorer = tmp_path / "web", tmp_path / "release-worker", tmp_path / "scoring-worker"
    release_token, release_secret = worker_services.token_create(name="far-cpu", created_by=admin_user)
    scoring_token, scoring_secret = worker_services.token_create(name="far-gpu", created_by=admin_user)
    procs.web_extra = {"RELEASE_WORKERS": "http"}
    base = procs.web(web)
    procs.platform_worker(web)
    procs.release_worker("releaser", platform_url=base, data=releaser, token=release_secret)
    far_scorer = procs.scoring_worker(
        "far", queues="scoring,judge", platform_url=base, data=scorer, token=scoring_secret
    )

    start_release(project, "1.0.0")
    release = wait_release(project, "1.0.0", procs)
    assert release.status == "ready", (release.error, procs.tail())
    out = Path(release.path)
    assert out == web / "releases" / "xqm" / "1.0.0"
    # every direction came over HTTP from the release worker, which kept nothing and wrote no release of its own
    uploads = StagedUpload.objects.filter(release=release)
    assert sorted(u.direction for u in uploads) == ["en-de", "en-zh"] and {u.worker for u in uploads} == {release_token}
    assert {code: (e["status"], e["worker"]) for code, e in release.directions.items()} == {
        "en-de": ("done", "far-cpu"),
        "en-zh": ("done", "far-cpu"),
    }
    assert not list(releaser.rglob("*.parquet")) and not (releaser / "settings-data" / "releases").exists()
    log = procs.logs["releaser"].read_text()
    assert log.count("exports.release_direction_remote[") >= 4 and log.count("succeeded in") == 2, log[-3000:]
    assert "OperationalError" not in log and "Traceback" not in log  # it never tried the database
    assert not list(out.parent.glob(".*staging")) and not list(out.parent.glob(".*incoming"))
    # byte for byte the release written on the shared file system (tests/exports/release/test_release_staged.py:
    # the chord on the shared file system writes these bytes too)
    reference = shared_fs_release(project, tmp_path / "shared-fs")
    built_over_http = files_of(out)
    assert release.content_hash == reference["content_hash"] and release.manifest["files"] == reference["files"]
    assert built_over_http == files_of(tmp_path / "shared-fs") and len(built_over_http) == 2 + 2 + 2 + 2

    # scored over HTTP (chrF++ and the judge), then again by a worker on the shared file system
    with JudgeStubServer() as stub:
        options = {"limit": LIMIT, "judge": {"base_url": stub.base_url, "model": "stub-judge", "max_usd": 1}}
        tasks.start_scoring(release=release, metrics=["chrF++", "gemba-mqm"], options=options)
        jobs = wait_done(release, 4, procs)
        assert every(j.status == "done" for j in jobs), [(j.metric, j.error) for j in jobs]
        assert every(j.output_path.startswith("worker_parts:") for j in jobs)
        over_http = scores(release)
        assert len(over_http) == 2 * LIMIT * 2 and {k[0] for k in over_http} == {"chrF++", "gemba-mqm"}
        procs.stop(far_scorer)
        procs.scoring_worker("shared", queues="scoring,judge", platform_url=None, data=None)
        tasks.start_scoring(release=release, metrics=["chrF++", "gemba-mqm"], options=options, force=True)
        jobs = wait_done(release, 4, procs)
        assert every(j.status == "done" for j in jobs), [(j.metric, j.error) for j in jobs]
        assert every(j.output_path.startswith(str(out / "scores")) for j in jobs)
    assert scores(release) == over_http


def test_a_release_worker_killed_mid_upload_loses_nothing_and_the_redelivered_task_completes(
    procs,
    seeded,  # noqa: F811
    admin_user,
    tmp_path,
):
    build_run(project=seeded)
    web, far = tmp_path / "web", tmp_path / "release-worker"
    _, secret = worker_services.token_create(name="flaky-node", created_by=admin_user)
    procs.web_extra = {"RELEASE_WORKERS": "http"}
    base = procs.web(web)
    procs.platform_worker(web)
    proxy = StallingProxy(int(base.rsplit(":", 1)[1]))
    fast = {"CELERY_VISIBILITY_TIMEOUT": "5"}  # the killed worker's task comes back after 5 s (not 6 h)
    try:
        first = procs.release_worker("killed", platform_url=f"http://127.0.0.1:{proxy.port}", data=far, token=secret)
        start_release(seeded, "1.0.0")
        assert proxy.stalled.wait(120), procs.tail()
        os.killpg(first.pid, signal.SIGKILL)  # mid-upload: half the archive sent
        killed_at = time.monotonic()
        first.wait(30)
        release = Release.objects.get(project=seeded, version="1.0.0")
        staging = release_services.staging_dir_get(out_dir=release.job["out_dir"])
        incoming = staging.parent / f".{Path(release.job['out_dir']).name}.incoming"
        deadline = time.monotonic() + 30  # gunicorn reads the cut body to its end, then the view cleans up
        while incoming.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        release.refresh_from_db()
        assert release.status == "building" and not StagedUpload.objects.exists()
        [cut] = [code for code, e in release.directions.items() if e["status"] == "running"]
        assert not (staging / cut).exists() and not incoming.exists()
        kept = release_files.staged_direction(far / "release-staging" / str(release.pk), cut)
        assert kept is not None  # the worker's own copy survives it
        # the message goes back on the queue; a new worker with the same data directory sends its copy in full
        # (started once the message is past its visibility timeout: a worker's first sweep then restores it,
        # where the next one comes about 100 s later)
        time.sleep(max(0.0, 6 - (time.monotonic() - killed_at)))
        procs.release_worker("retry", platform_url=base, data=far, token=secret, env=fast)
        release = wait_release(seeded, "1.0.0", procs, timeout=180)
        assert release.status == "ready", (release.error, procs.tail())
        assert StagedUpload.objects.filter(release=release, direction=cut).get().digest == kept["digest"]
        assert StagedUpload.objects.filter(release=release).count() == 2
        reference = shared_fs_release(seeded, tmp_path / "shared-fs")
        assert release.content_hash == reference["content_hash"]
        assert files_of(Path(release.path)) == files_of(tmp_path / "shared-fs")
    finally:
        proxy.close()
