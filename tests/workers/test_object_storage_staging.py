"""A release staged in S3-compatible object storage (``RELEASE_STAGING_STORAGE=s3`` beside
``RELEASES_STORAGE=s3``: the ``release_staging`` storage, core.storage.StagedFiles) against a real S3 HTTP
server (moto, the fixtures of test_object_storage): directions staged by one process and the release
finished by another with a different data directory give the bytes of the release written on one file
system; an interrupted release resumes from the directions staged in the bucket; a direction whose spool
or file was altered in the bucket is refused at the finish and staged again; a release worker's upload is
stored in the bucket. The reference is the one-pass writer (test_release_staged shows the local staged
path gives its bytes); what the bucket holds is read with boto3."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from core.models import Project
from exports.benchmark.services import build_run
from exports.models import Release
from exports.release import services
from exports.release.domain import release_files
from exports.workers import services as worker_services
from tests.conftest import REPO
from tests.exports.conftest import import_languages, seeded  # noqa: F401  (fixture: a small two-direction project)
from tests.workers.processes import database_url
from tests.workers.test_object_storage import (  # noqa: F401  (fixtures)
    KEY,
    REGION,
    SECRET,
    _reset_storages,
    bucket,
    local_files,
    objects,
    s3_server,
)

SMALL_PLAN = {"monolingual_repetitions": 3, "multilingual_repetitions": 4}
STAGED = "release-staging/xqm/1.0.0"


@pytest.fixture
def staging_bucket(bucket, s3_server, settings):  # noqa: F811
    """The bucket of ``bucket`` with the ``release_staging`` storage in it too (RELEASE_STAGING_STORAGE=s3)."""
    client, name = bucket
    settings.STORAGES = {
        **settings.STORAGES,
        "release_staging": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": name,
                "location": "release-staging",
                "endpoint_url": s3_server,
                "access_key": KEY,
                "secret_key": SECRET,
                "region_name": REGION,
                "file_overwrite": True,
            },
        },
    }
    _reset_storages()
    return client, name


@pytest.fixture
def built(shared_data):
    import_languages("xqm", shared_data, ["de", "zh"])
    project = Project.objects.get(name="xqm")
    project.options = {"sampling": SMALL_PLAN}
    project.save()
    build_run(project=project)
    return project


def reference(project: Project, out: Path) -> tuple[dict[str, bytes], str]:
    """Release 1.0.0 written in one pass on this file system: its files and content hash."""
    content = services.release_content_make(
        project=project, version="1.0.0", plan=services.sampling_plan_make(project=project)
    )
    manifest = release_files.write_release(content, out)
    return local_files(out), manifest["content_hash"]


def stopped(release_id: int) -> None:
    """The process that was writing the release stopped (its lease passed)."""
    Release.objects.filter(pk=release_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def platform_process(script: str, data: Path, s3_server: str, bucket_name: str, *args: str) -> str:  # noqa: F811
    """``script`` run by a platform process of its own (the settings from the environment, as a worker's)
    with its own data directory and the bucket for releases and staging; its stdout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RELEASES_DIR", "DJANGO_ALLOW_ASYNC_UNSAFE", "PYTEST_XDIST_WORKER", "XQMEVAL_TEST_WORKER")
        and not k.endswith(("_STORAGE", "_BUCKET"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="xqmeval.settings",
        DATABASE_URL=database_url(),
        XQMEVAL_DATA_DIR=str(data),
        PYTHONPATH=str(REPO),
        TMPDIR=str(data / "tmp"),
        RELEASES_STORAGE="s3",
        RELEASE_STAGING_STORAGE="s3",
        OBJECT_STORAGE_BUCKET=bucket_name,
        AWS_S3_ENDPOINT_URL=s3_server,
        AWS_S3_REGION_NAME=REGION,
        AWS_ACCESS_KEY_ID=KEY,
        AWS_SECRET_ACCESS_KEY=SECRET,
    )
    (data / "tmp").mkdir(parents=True, exist_ok=True)
    prelude = "import json, sys\nimport django\ndjango.setup()\nfrom exports.release import services\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + script, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


STAGE = """
from core.models import Project
job = services.release_begin(project=Project.objects.get(name="xqm"), version="1.0.0")
for code in job.todo:
    services.release_direction_run(job=job, direction_code=code)
print(json.dumps(job.to_dict()))
"""
FINISH = """
release = services.release_finish(job=services.ReleaseJob.from_dict(json.loads(sys.argv[1])))
print(release.path)
"""


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.shared_data
@pytest.mark.django_db(transaction=True)
def test_a_release_staged_by_one_process_and_finished_by_another_with_its_own_data_directory_has_the_local_bytes(
    staging_bucket,
    built,
    s3_server,  # noqa: F811
    tmp_path,
):
    s3, name = staging_bucket
    expected, content_hash = reference(built, tmp_path / "one-pass")
    stager, finisher = tmp_path / "stager", tmp_path / "finisher"

    job = json.loads(platform_process(STAGE, stager, s3_server, name).strip().splitlines()[-1])
    assert job["todo"] == ["en-de", "en-zh"] and job["default_out"] is True
    staged = objects(s3, name, STAGED)
    assert sorted(staged) == sorted(release_files.staged_names("en-de", ()) + release_files.staged_names("en-zh", ()))
    for code in ("en-de", "en-zh"):
        assert staged[f"{code}/test.parquet"] == expected[f"{code}/test.parquet"]
    assert not [p for p in (stager / "releases").rglob("*") if p.is_file()]  # nothing staged on its disk
    shutil.rmtree(stager)  # the finishing process shares no disk with it

    path = platform_process(FINISH, finisher, s3_server, name, json.dumps(job)).strip().splitlines()[-1]
    release = Release.objects.get(pk=job["release_id"])
    assert release.status == "ready" and release.content_hash == content_hash
    assert Path(path) == Path(release.path) == finisher / "releases" / "xqm" / "1.0.0"
    assert local_files(Path(path)) == expected  # byte for byte the release written on one file system
    assert objects(s3, name, "releases/xqm/1.0.0") == expected  # and so is the published copy
    assert objects(s3, name, STAGED) == {}  # the staged directions are gone from the bucket
    assert sorted(p.name for p in (finisher / "releases" / "xqm").iterdir()) == ["1.0.0"]


@pytest.mark.shared_data
@pytest.mark.django_db
def test_an_interrupted_release_resumes_from_the_directions_staged_in_the_bucket(
    staging_bucket, built, settings, tmp_path
):
    s3, name = staging_bucket
    expected, content_hash = reference(built, tmp_path / "one-pass")
    settings.RELEASES_DIR = tmp_path / "first" / "releases"
    job = services.release_begin(project=built, version="1.0.0")
    services.release_direction_run(job=job, direction_code="en-de")  # then its process stops
    stopped(job.release_id)
    assert sorted(objects(s3, name, STAGED)) == sorted(release_files.staged_names("en-de", ()))
    shutil.rmtree(tmp_path / "first", ignore_errors=True)

    settings.RELEASES_DIR = tmp_path / "second" / "releases"  # another machine takes the release over
    staged = []
    release = services.release_create(
        project=built, version="1.0.0", on_direction=lambda code, entry: staged.append(code)
    )
    assert staged == ["en-zh"]  # en-de was taken from the bucket
    assert release.status == "ready" and release.content_hash == content_hash
    assert Path(release.path) == tmp_path / "second" / "releases" / "xqm" / "1.0.0"
    assert local_files(Path(release.path)) == expected
    assert objects(s3, name, STAGED) == {}


@pytest.mark.shared_data
@pytest.mark.django_db
def test_a_direction_altered_in_the_bucket_is_refused_at_the_finish_and_staged_again(
    staging_bucket, built, settings, tmp_path
):
    s3, name = staging_bucket
    expected, content_hash = reference(built, tmp_path / "one-pass")
    settings.RELEASES_DIR = tmp_path / "releases"
    out = tmp_path / "releases" / "xqm" / "1.0.0"
    job = services.release_begin(project=built, version="1.0.0")
    for code in job.todo:
        services.release_direction_run(job=job, direction_code=code)
    key = f"{STAGED}/en-zh/test.parquet"
    original = s3.get_object(Bucket=name, Key=key)["Body"].read()
    s3.put_object(Bucket=name, Key=key, Body=original[:-1] + b"\0")
    with pytest.raises(release_files.ReleaseConflict, match="en-zh: its staged en-zh/test.parquet changed"):
        services.release_finish(job=job)
    assert Release.objects.get(pk=job.release_id).status == "failed"
    assert not out.exists() and sorted(p.name for p in out.parent.iterdir()) == []  # nothing half-assembled

    s3.put_object(Bucket=name, Key=key, Body=original)
    spool = f"{STAGED}/{release_files.SPOOL_DIR}/en-de.bin"
    data = s3.get_object(Bucket=name, Key=spool)["Body"].read()
    s3.put_object(Bucket=name, Key=spool, Body=data.replace(b"en-de", b"en-dx", 1))
    staged = []
    release = services.release_create(
        project=built, version="1.0.0", on_direction=lambda code, entry: staged.append(code)
    )
    assert staged == ["en-de"]  # its spool no longer matched its summary; en-zh is intact again and kept
    assert release.status == "ready" and release.content_hash == content_hash
    assert local_files(out) == expected


def test_a_release_workers_upload_is_stored_in_the_staging_bucket_and_not_on_the_platforms_disk(
    staging_bucket,
    client,
    db,
    admin_user,
    seeded,  # noqa: F811
    tmp_path,
    settings,
):
    from tests.workers.test_release_worker_api import put, stage_locally

    s3, name = staging_bucket

    build_run(project=seeded)
    _, secret = worker_services.token_create(name="far-cpu-9", created_by=admin_user)
    settings.RELEASE_WORKERS = "http"
    job = services.release_begin(project=seeded, version="1.0.0")
    services.release_job_record(job=job)
    archive, sha = stage_locally(client, job, "en-de", secret, tmp_path / "worker")
    first = put(client, job, "en-de", archive.read_bytes(), secret)
    assert first.status_code == 201 and first.json()["stored"] is True, first.content
    stored = objects(s3, name, f"release-staging/{seeded.name}/1.0.0")
    assert sorted(stored) == sorted(release_files.staged_names("en-de", ()))
    assert stored == {rel: (tmp_path / "worker" / rel).read_bytes() for rel in stored}
    assert not job.staging.exists()  # nothing staged beside the release directory
    again = put(client, job, "en-de", archive.read_bytes(), secret)  # checked in the bucket: already there
    assert again.status_code == 200 and again.json()["stored"] is False
