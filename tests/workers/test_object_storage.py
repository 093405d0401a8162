"""Releases and uploaded parts in S3-compatible object storage (``RELEASES_STORAGE=s3``,
``WORKER_PARTS_STORAGE=s3``: django-storages' S3 backend, core.storage) against a real S3 HTTP server the
test starts (moto's ThreadedMotoServer on a free port): a release built with the bucket configured is
published into it byte for byte and read back from it alone (its directions, the worker file endpoint whole
and by ranges, meta-evaluation); a worker's part lands in the bucket and is ingested from it; the local
default writes nothing beside the release. What the bucket holds is read with boto3, not with the code
under test."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.files.storage import storages
from django.core.management import CommandError, call_command
from django.urls import reverse

from core import storage as core_storage
from core.models import Direction, Project
from exports.benchmark.services import build_run
from exports.metaeval.selectors import export_evalsets
from exports.models import MetricScore, PartUpload, Release, ScoringJob
from exports.release import services as release_services
from exports.scores import services
from exports.workers import services as worker_services
from scoring.runner import META_KEY
from scoring.tests.releases import write_release
from tests.exports.conftest import import_languages
from tests.exports.hub_server import HubServer
from tests.workers.jobs import worker_auth

KEY, SECRET, REGION = "testing-key", "testing-secret", "us-east-1"


@pytest.fixture(scope="module")
def s3_server():
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _reset_storages() -> None:
    storages._storages.clear()  # the handler caches the storages it built
    storages._backends = None


@pytest.fixture
def bucket(s3_server, settings, request):
    """A fresh bucket, with the ``releases`` and ``worker_parts`` storages in it (as the settings make them
    from RELEASES_STORAGE=s3 and WORKER_PARTS_STORAGE=s3)."""
    name = "xq-" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:12]
    client = boto3.client(
        "s3", endpoint_url=s3_server, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
    )
    client.create_bucket(Bucket=name)

    def s3(prefix: str, overwrite: bool) -> dict:
        return {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": name,
                "location": prefix,
                "endpoint_url": s3_server,
                "access_key": KEY,
                "secret_key": SECRET,
                "region_name": REGION,
                "file_overwrite": overwrite,
            },
        }

    settings.STORAGES = {
        **settings.STORAGES,
        "releases": s3("releases", True),
        "worker_parts": s3("worker-parts", False),
    }
    _reset_storages()
    yield client, name
    _reset_storages()


def objects(client, bucket: str, prefix: str) -> dict[str, bytes]:
    """Every object under ``prefix`` (key relative to it) with its bytes, read with boto3."""
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for entry in page.get("Contents", ()):
            body = client.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read()
            out[entry["Key"][len(prefix) + 1 :]] = body
    return out


def local_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).parts[0].startswith(".")
    }


def part_for(release_file: bytes, metric: str, version: str) -> tuple[bytes, dict[str, float]]:
    """A worker's part for the triplets of a release file (score 100 - 10·k), and the scores it holds."""
    table = pq.read_table(io.BytesIO(release_file), columns=["direction", "triplet_id", "num_errors"])
    scores = [100.0 - 10 * k for k in table.column("num_errors").to_pylist()]
    part = table.append_column("score", pa.array(scores, pa.float64()))
    meta = {"metric": metric, "signature": {"library": "sacrebleu"}, "release": {"version": version}}
    part = part.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    buf = io.BytesIO()
    pq.write_table(part, buf)
    return buf.getvalue(), dict(zip(table.column("triplet_id").to_pylist(), scores))


def auth(secret: str, release_id: int) -> dict:
    """A scoring worker's headers for the job chrF++ en-de of the release."""
    return worker_auth(secret, "scoring", release_id, "en-de", "chrF++")


@pytest.fixture
def worker(db, admin_user):
    return worker_services.token_create(name="cloud-gpu", created_by=admin_user)


def test_a_release_built_with_object_storage_is_published_whole_and_read_back_from_the_bucket_alone(
    bucket, shared_data, settings, tmp_path, client, worker
):
    s3, name = bucket
    settings.RELEASES_DIR = tmp_path / "releases"
    import_languages("xqm", shared_data, ["de"])
    project = Project.objects.get(name="xqm")
    project.options = {"sampling": {"monolingual_repetitions": 2, "multilingual_repetitions": 2}}
    project.save()
    build_run(project=project)
    release = release_services.release_create(project=project, version="1.0.0")

    # the builder's directory, as on the file system, and the same files in the bucket
    root = Path(release.path)
    written = local_files(root)
    assert "manifest.json" in written and "en-de/test.parquet" in written
    stored = objects(s3, name, "releases/xqm/1.0.0")
    assert stored == written
    manifest = json.loads(stored["manifest.json"])
    for rel, info in manifest["files"].items():  # what the manifest lists is what the bucket holds
        assert hashlib.sha256(stored[rel]).hexdigest() == info["sha256"]

    # the web host does not have the builder's disk: everything below reads the bucket
    data = written["en-de/test.parquet"]
    shutil.rmtree(root)
    assert services.release_directions_list(release=release) == ["en-de"]
    _, secret = worker
    listing = client.get(reverse("workers:release_manifest", args=[release.pk]), **auth(secret, release.pk)).json()
    assert listing["directions"]["en-de"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert listing["directions"]["en-de"]["bytes"] == len(data)
    url = reverse("workers:release_file", args=[release.pk, "en-de"])

    def get(**headers):
        r = client.get(url, **auth(secret, release.pk), **headers)
        return r, b"".join(r.streaming_content) if r.status_code in (200, 206) else b""

    r, body = get()
    assert r.status_code == 200 and body == data and r["Content-Length"] == str(len(data))
    r, body = get(HTTP_RANGE="bytes=100-")
    assert r.status_code == 206 and body == data[100:]
    assert r["Content-Range"] == f"bytes 100-{len(data) - 1}/{len(data)}"
    r, body = get(HTTP_RANGE="bytes=10-19")
    assert r.status_code == 206 and body == data[10:20] and r["Content-Length"] == "10"
    r, body = get(HTTP_RANGE="bytes=-5")
    assert r.status_code == 206 and body == data[-5:]
    r, _ = get(HTTP_RANGE=f"bytes={len(data)}-")
    assert r.status_code == 416

    # a worker's part lands in the bucket (worker_parts) and is ingested from it
    direction = Direction.objects.get(code="en-de")
    job = ScoringJob.objects.create(release=release, metric="chrF++", direction=direction)
    part, expected = part_for(data, "chrF++", "1.0.0")
    r = client.generic(
        "PUT",
        reverse("workers:upload_part", args=[release.pk, "chrF++", "en-de"]),
        part,
        content_type="application/vnd.apache.parquet",
        HTTP_X_PART_SHA256=hashlib.sha256(part).hexdigest(),
        **auth(secret, release.pk),
    )
    assert r.status_code == 201, r.content
    upload = PartUpload.objects.get()
    assert objects(s3, name, "worker-parts") == {upload.storage_name: part}
    assert services.job_ingest(job=job, result={"part_sha256": upload.sha256}) == len(expected)
    assert dict(MetricScore.objects.filter(release=release).values_list("triplet_id", "score")) == expected

    # meta-evaluation reads the release file from the bucket too: one EvalSet segment per triplet
    out = tmp_path / "evalsets"
    [written_dir] = export_evalsets(release, ["chrF++"], str(out))
    assert Path(written_dir).is_dir()
    assert sum(1 for _ in (out / "xqm-1.0.0" / "sources" / "en-de.txt").open(encoding="utf-8")) == len(expected)


def test_a_release_only_in_the_bucket_is_pushed_to_the_hub_byte_for_byte_and_an_interrupted_push_resumes(
    db, bucket, shared_data, settings, tmp_path, monkeypatch
):
    """A platform worker on another host has no copy of the builder's directory: the push reads the bucket.
    The Hub look-alike gets the bytes the builder wrote and the tag; cut short after the data files, the
    push resumes without sending them again."""
    s3, name = bucket
    settings.RELEASES_DIR = tmp_path / "releases"
    import_languages("xqm", shared_data, ["de"])
    project = Project.objects.get(name="xqm")
    project.options = {"sampling": {"monolingual_repetitions": 2, "multilingual_repetitions": 2}}
    project.save()
    build_run(project=project)
    release = release_services.release_create(project=project, version="1.0.0")
    root = Path(release.path)
    written = local_files(root)
    assert objects(s3, name, "releases/xqm/1.0.0") == written
    shutil.rmtree(root)

    with HubServer(token="hf_test_token_123") as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", "hf_test_token_123")
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        hub.state.fail_commits.append("dataset card")
        with pytest.raises(release_services.HubPushError, match="injected failure"):
            release_services.release_push(release=release, repo_id="lab/xq-meval")
        data_uploads = list(hub.state.uploads)
        assert "en-de/test.parquet" in data_uploads and "README.md" not in data_uploads

        release_services.release_push(release=release, repo_id="lab/xq-meval")
        repo = hub.state.repos["lab/xq-meval"]
        assert sorted(hub.state.uploads[len(data_uploads) :]) == ["README.md", "manifest.json"]

    release.refresh_from_db()
    assert repo.files == written  # every file, the builder's bytes, read from the bucket alone
    assert release.push_status == "pushed" and release.hub_revision == repo.tags["1.0.0"] == repo.head
    assert not root.exists()  # nothing was put back on this host's disk


def test_publishing_again_resumes_and_a_release_never_published_is_read_from_its_directory(bucket, project, tmp_path):
    s3, name = bucket
    root = write_release(tmp_path / "rel")
    release = Release.objects.create(
        project=project,
        version="t1",
        status=Release.Status.READY,
        path=str(root),
        manifest=json.loads((root / "manifest.json").read_text()),
    )
    # not published (built before the bucket was configured): its directory still serves
    files = core_storage.ReleaseFiles.for_release(release)
    assert files.local and files.directions() == ["en-de", "en-zh"]
    (root / "scores").mkdir()
    (root / "scores" / "summary.json").write_text("{}")  # a shared-file-system worker's, not the release's
    assert core_storage.release_publish(release=release) == len(local_files(root)) - 1
    assert set(objects(s3, name, f"releases/{project.name}/t1")) == set(local_files(root)) - {"scores/summary.json"}
    files = core_storage.ReleaseFiles.for_release(release)
    assert not files.local and files.directions() == ["en-de", "en-zh"]
    # run again (a publish cut short), by the command: only the manifest, which marks a whole release, again
    out = io.StringIO()
    call_command("publish_release", f"{project.name}@t1", stdout=out)
    assert "1 file(s) written" in out.getvalue()
    with pytest.raises(CommandError, match="not found"):
        call_command("publish_release", f"{project.name}@t9")


def test_the_local_default_publishes_nothing_and_reads_the_release_directory(project, tmp_path, settings):
    settings.RELEASES_DIR = tmp_path / "releases"
    settings.STORAGES = {
        **settings.STORAGES,
        "releases": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "releases")},
        },
    }
    _reset_storages()
    root = write_release(tmp_path / "elsewhere" / "rel")  # a release written outside RELEASES_DIR (--out)
    before = local_files(tmp_path)
    release = Release.objects.create(project=project, version="t1", status=Release.Status.READY, path=str(root))
    assert core_storage.release_publish(release=release) == 0
    assert local_files(tmp_path) == before
    assert services.release_directions_list(release=release) == ["en-de", "en-zh"]
    _reset_storages()


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RELEASES_STORAGE": "s3"}, "RELEASES_STORAGE=s3 needs a bucket: set OBJECT_STORAGE_BUCKET"),
        ({"WORKER_PARTS_STORAGE": "s3"}, "WORKER_PARTS_STORAGE=s3 needs a bucket"),
        ({"RELEASE_STAGING_STORAGE": "s3"}, "RELEASE_STAGING_STORAGE=s3 needs a bucket: set OBJECT_STORAGE_BUCKET"),
        ({"WORKER_PARTS_STORAGE": "minio"}, "WORKER_PARTS_STORAGE='minio': expected s3"),
    ],
)
def test_object_storage_without_a_bucket_or_of_an_unknown_kind_stops_the_start_naming_the_variable(env, message):
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    base = {k: v for k, v in os.environ.items() if not k.endswith(("_STORAGE", "_BUCKET"))}
    started = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO,
        env={**base, "DJANGO_SETTINGS_MODULE": "xqmeval.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode != 0 and message in started.stderr, started.stderr[-2000:]
    ok = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO,
        env={**base, "DJANGO_SETTINGS_MODULE": "xqmeval.settings", **env, "OBJECT_STORAGE_BUCKET": "xq"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (ok.returncode == 0) == ("needs a bucket" in message), ok.stderr[-2000:]
