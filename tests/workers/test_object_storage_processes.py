"""The deployment with object storage, as separate processes: the web app (gunicorn) and a platform worker
configured with RELEASES_STORAGE=s3 and WORKER_PARTS_STORAGE=s3 against a real S3 HTTP server (moto), a
scoring worker with its own data directory sharing only Redis and HTTP, and a pushed release on the Hub
look-alike. The release's files are in the bucket only (the web host has no copy); the worker takes the
direction files from the Hub, scores chrF++, uploads its parts, which land in the bucket and are ingested
from it."""

from __future__ import annotations

import hashlib
import json

import pytest

from core import storage as core_storage
from exports.models import MetricScore, PartUpload, Release
from exports.scores import tasks
from exports.workers import services as worker_services
from scoring.tests.releases import release_rows, write_release
from tests.exports.hub_server import HubServer
from tests.exports.scores.test_scoring_jobs import broker  # noqa: F401  (fixture: the platform's app on Redis)
from tests.support.asserts import every
from tests.workers.test_object_storage import KEY, REGION, SECRET, bucket, objects, s3_server  # noqa: F401

pytestmark = [pytest.mark.redis, pytest.mark.slow, pytest.mark.subprocess, pytest.mark.django_db(transaction=True)]

LIMIT = 10


def test_a_far_worker_scores_a_release_kept_in_object_storage_from_its_hub_copy(
    procs,
    bucket,  # noqa: F811
    s3_server,  # noqa: F811
    project,
    languages,
    admin_user,
    tmp_path,
    monkeypatch,
):
    s3, name = bucket
    web, far = tmp_path / "web", tmp_path / "far-worker"
    root = write_release(tmp_path / "builder" / "demo" / "t1")  # the builder's disk, not the web host's
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    release = Release.objects.create(
        project=project,
        version="t1",
        status=Release.Status.READY,
        path=str(root),
        manifest=json.loads(files["manifest.json"]),
    )
    core_storage.release_publish(release=release)
    import shutil

    shutil.rmtree(tmp_path / "builder")
    # the web app and its worker read the settings' environment: the bucket for releases and parts
    for key, value in {
        "RELEASES_STORAGE": "s3",
        "WORKER_PARTS_STORAGE": "s3",
        "OBJECT_STORAGE_BUCKET": name,
        "AWS_S3_ENDPOINT_URL": s3_server,
        "AWS_S3_REGION_NAME": REGION,
        "AWS_ACCESS_KEY_ID": KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET,
    }.items():
        monkeypatch.setenv(key, value)
    token, secret = worker_services.token_create(name="far-gpu", created_by=admin_user)
    with HubServer(token="hf_secret") as hub:
        repo = hub.add_dataset("xq-lab/demo", files)
        release.hub_repo, release.hub_revision, release.push_status = "xq-lab/demo", repo.head, "pushed"
        release.save()
        base = procs.web(web)
        procs.platform_worker(web)
        procs.scoring_worker(
            "far",
            queues="scoring",
            platform_url=base,
            data=far,
            token=secret,
            env={"HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0"},
        )
        tasks.start_scoring(release=release, metrics=["chrF++"], options={"limit": LIMIT})
        from tests.workers.test_http_workers import wait_done

        jobs = wait_done(release, 2, procs)
        assert every(j.status == "done" for j in jobs), [(j.metric, j.error) for j in jobs]
        for code in ("en-de", "en-zh"):
            assert f"GET /datasets/xq-lab/demo/resolve/{repo.head}/{code}/test.parquet" in hub.state.calls
            assert (far / "releases" / str(release.pk) / code / "test.parquet").read_bytes() == files[
                f"{code}/test.parquet"
            ]
    # the parts are in the bucket (read with boto3), as the platform recorded them, and nothing on its disk
    stored = objects(s3, name, "worker-parts")
    uploads = list(PartUpload.objects.filter(worker=token))
    assert len(uploads) == 2 and sorted(stored) == sorted(u.storage_name for u in uploads)
    assert every(hashlib.sha256(stored[u.storage_name]).hexdigest() == u.sha256 for u in uploads)
    assert not (web / "worker-parts").exists() and not (web / "releases").exists()
    # ingested: LIMIT triplets per direction, in release order; an untouched translation (k = 0) scores 100
    rows = {code: release_rows(code)[:LIMIT] for code in ("en-de", "en-zh")}
    got = {
        (s.direction.code, s.triplet_id): s.score
        for s in MetricScore.objects.filter(release=release).select_related("direction")
    }
    assert set(got) == {(code, r["triplet_id"]) for code, rs in rows.items() for r in rs}
    for code, rs in rows.items():
        for r in rs:
            if r["num_errors"] == 0:
                assert got[(code, r["triplet_id"])] == pytest.approx(100.0)
            else:
                assert got[(code, r["triplet_id"])] < 100.0
