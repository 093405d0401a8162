"""Worker tokens and the worker endpoints (exports.workers.api), through Django's test client: tokens made
and revoked by an admin, shown once and stored hashed, opening the worker endpoints and nothing else;
release files served whole and by single ranges; part uploads verified, stored once per content and
recorded with their worker, tampered ones refused with the field named."""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.files.storage import storages
from django.urls import reverse

from exports.models import PartUpload, Release, ScoringJob, WorkerToken
from exports.scores import services
from exports.workers import services as worker_services
from scoring.runner import META_KEY
from scoring.tests.releases import release_rows, write_release
from tests.workers.jobs import job_token, worker_auth


@pytest.fixture
def release(project, tmp_path):
    root = write_release(tmp_path / "rel")
    manifest = json.loads((root / "manifest.json").read_text())
    return Release.objects.create(
        project=project, version="t1", status=Release.Status.READY, path=str(root), manifest=manifest
    )


@pytest.fixture
def worker(db, admin_user):
    token, secret = worker_services.token_create(name="gpu-node-7", created_by=admin_user)
    return token, secret


@pytest.fixture(autouse=True)
def parts_dir(settings, tmp_path):
    settings.STORAGES = {
        **settings.STORAGES,
        "worker_parts": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "parts")},
        },
    }
    storages._storages.pop("worker_parts", None)  # the handler caches the storage it built
    storages._backends = None
    yield tmp_path / "parts"
    storages._storages.pop("worker_parts", None)
    storages._backends = None


def auth(secret: str, release_id: int, direction_code: str = "en-de", metric: str = "chrF++") -> dict:
    """A scoring worker's headers: its worker token and the token of the job (release, metric, direction)."""
    return worker_auth(secret, "scoring", release_id, direction_code, metric)


def part_bytes(metric: str, direction_code: str, version: str = "test-1", rows_of: str | None = None) -> bytes:
    rows = release_rows(rows_of or direction_code)
    table = pa.table(
        {
            "direction": [r["direction"] if rows_of else direction_code for r in rows],
            "triplet_id": [r["triplet_id"] for r in rows],
            "num_errors": [r["num_errors"] for r in rows],
            "score": [100.0 - 10 * r["num_errors"] for r in rows],
        }
    )
    meta = {"metric": metric, "signature": {"library": "sacrebleu"}, "release": {"version": version}}
    table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def put(client, release, metric, direction, body: bytes, secret: str, sha: str | None = None):
    url = reverse("workers:upload_part", args=[release.pk, metric, direction])
    return client.generic(
        "PUT",
        url,
        body,
        content_type="application/vnd.apache.parquet",
        HTTP_X_PART_SHA256=sha if sha is not None else hashlib.sha256(body).hexdigest(),
        **auth(secret, release.pk, direction, metric),
    )


def test_an_admin_creates_a_token_shown_once_and_stored_hashed_and_revokes_it(client, admin_user):
    client.force_login(admin_user)
    page = client.post(reverse("admin:exports_workertoken_add"), {"name": "cloud box <b>1</b>"})
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    html = page.content.decode()
    secret = re.search(r'id="worker-token-secret">([^<]+)<', html).group(1)
    assert secret.startswith("xqw_") and len(secret) > 40
    assert "cloud box &lt;b&gt;1&lt;/b&gt;" in html  # the name is escaped
    token = WorkerToken.objects.get()
    assert token.token_hash == hashlib.sha256(secret.encode()).hexdigest() and secret not in token.token_hash
    assert token.created_by == admin_user and token.prefix == secret[:10]
    listing = client.get(reverse("admin:exports_workertoken_changelist")).content.decode()
    assert token.prefix in listing and secret not in listing  # never shown again
    assert secret not in client.get(reverse("admin:exports_workertoken_change", args=[token.pk])).content.decode()
    assert worker_services.token_authenticate(secret=secret) == token
    client.post(
        reverse("admin:exports_workertoken_changelist"),
        {"action": "revoke", "_selected_action": [token.pk]},
    )
    token.refresh_from_db()
    assert token.revoked_at is not None and worker_services.token_authenticate(secret=secret) is None


def test_a_token_opens_the_worker_endpoints_only_and_a_session_none_of_them(client, release, worker, admin_user):
    token, secret = worker
    manifest_url = reverse("workers:release_manifest", args=[release.pk])
    assert client.get(manifest_url).status_code == 401
    assert client.get(manifest_url, HTTP_AUTHORIZATION="Bearer xqw_forged").status_code == 401
    listing = client.get(manifest_url, **auth(secret, release.pk))
    assert listing.status_code == 200
    body = listing.json()
    assert set(body["directions"]) == {"en-de", "en-zh"} and body["manifest"]["version"] == "test-1"
    path = Path(release.path) / "en-de" / "test.parquet"
    assert body["directions"]["en-de"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    token.refresh_from_db()
    assert token.last_used_at is not None
    # the token is no key to anything else: pages, the API, the admin
    for url in (
        "/",
        reverse("scores:release", args=[release.pk]),
        reverse("review_api:progress", args=[release.project.name]),
        reverse("benchmarks_api:project", args=[release.project.name]),
        "/admin/",
    ):
        r = client.get(url, **auth(secret, release.pk))
        assert r.status_code in (302, 401, 403), (url, r.status_code)
    # a session (even an admin's) opens no worker endpoint
    client.force_login(admin_user)
    assert client.get(manifest_url).status_code == 401
    client.logout()
    # a release that is not ready, or none, answers as a missing thing
    building = Release.objects.create(project=release.project, version="t2", status=Release.Status.BUILDING)
    assert (
        client.get(reverse("workers:release_manifest", args=[building.pk]), **auth(secret, building.pk)).status_code
        == 404
    )
    assert client.get(reverse("workers:release_manifest", args=[999999]), **auth(secret, 999999)).status_code == 404
    worker_services.tokens_revoke(tokens=WorkerToken.objects.filter(pk=token.pk))
    assert client.get(manifest_url, **auth(secret, release.pk)).status_code == 401


def test_release_files_whole_and_by_single_ranges(client, release, worker):
    _, secret = worker
    data = (Path(release.path) / "en-de" / "test.parquet").read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    url = reverse("workers:release_file", args=[release.pk, "en-de"])

    def get(**headers):
        r = client.get(url, **auth(secret, release.pk), **headers)
        return r, b"".join(r.streaming_content) if r.status_code in (200, 206) else b""

    r, body = get()
    assert r.status_code == 200 and body == data and r["ETag"] == f'"{sha}"' and r["Accept-Ranges"] == "bytes"
    r, body = get(HTTP_RANGE="bytes=100-")
    assert (
        r.status_code == 206 and body == data[100:] and r["Content-Range"] == f"bytes 100-{len(data) - 1}/{len(data)}"
    )
    r, body = get(HTTP_RANGE="bytes=10-19")
    assert r.status_code == 206 and body == data[10:20] and r["Content-Length"] == "10"
    r, body = get(HTTP_RANGE="bytes=-5")
    assert r.status_code == 206 and body == data[-5:]
    r, _ = get(HTTP_RANGE=f"bytes={len(data)}-")
    assert r.status_code == 416 and r["Content-Range"] == f"bytes */{len(data)}"
    r, body = get(HTTP_RANGE="bytes=100-", HTTP_IF_RANGE='"0000"')  # the file changed: whole again
    assert r.status_code == 200 and body == data
    r, body = get(HTTP_RANGE="bytes=0-1,5-6")  # several ranges: this server sends the whole file
    assert r.status_code == 200 and body == data
    assert (
        client.get(
            reverse("workers:release_file", args=[release.pk, "en-fr"]), **auth(secret, release.pk, "en-fr")
        ).status_code
        == 404
    )


def test_part_upload_is_verified_stored_once_and_recorded_with_its_worker(
    client, release, worker, languages, parts_dir, settings
):
    token, secret = worker
    job = ScoringJob.objects.create(release=release, metric="chrF++", direction=languages["en-de"])
    body = part_bytes("chrF++", "en-de")
    r = put(client, release, "chrF++", "en-de", body, secret)
    assert r.status_code == 201, r.content
    upload = PartUpload.objects.get()
    assert upload.worker == token and upload.job == job and upload.sha256 == hashlib.sha256(body).hexdigest()
    stored = list(parts_dir.rglob("*.parquet"))
    assert [p.read_bytes() for p in stored] == [body]
    # the same part again (a task retried after a lost answer): 200, nothing new written
    r = put(client, release, "chrF++", "en-de", body, secret)
    assert r.status_code == 200 and r.json()["stored"] is False
    assert PartUpload.objects.count() == 1 and list(parts_dir.rglob("*.parquet")) == stored
    # the ingest reads the stored part when the task's result names it
    assert services.job_ingest(job=job, result={"part_sha256": upload.sha256}) == len(release_rows("en-de"))
    job.refresh_from_db()
    assert job.status == "done" and job.output_path == f"worker_parts:{upload.storage_name}"


@pytest.mark.parametrize(
    ("case", "field"),
    [
        ("checksum", "sha256"),
        ("no checksum", "sha256"),
        ("other metric inside", "metric"),
        ("other direction inside", "direction"),
        ("other release inside", "release"),
        ("no such job", "metric"),
        ("job of no such direction", "direction"),
        ("not parquet", "body"),
        ("too large", "size"),
    ],
)
def test_a_tampered_part_is_refused_with_the_field_and_nothing_is_stored(
    client, release, worker, languages, parts_dir, settings, case, field
):
    _, secret = worker
    ScoringJob.objects.create(release=release, metric="chrF++", direction=languages["en-de"])
    metric, direction, sha = "chrF++", "en-de", None
    body = part_bytes("chrF++", "en-de")
    if case == "checksum":
        sha = hashlib.sha256(body + b"x").hexdigest()
    elif case == "no checksum":
        sha = ""
    elif case == "other metric inside":
        body = part_bytes("BLEU", "en-de")
    elif case == "other direction inside":
        body = part_bytes("chrF++", "en-de", rows_of="en-zh")
    elif case == "other release inside":
        body = part_bytes("chrF++", "en-de", version="9.9.9")
    elif case == "no such job":
        metric = "TER"
    elif case == "job of no such direction":
        direction = "en-zh"
    elif case == "not parquet":
        body = b"PAR1 but not really"
    elif case == "too large":
        settings.WORKER_PART_MAX_BYTES = len(body) - 1
    r = put(client, release, metric, direction, body, secret, sha=sha)
    assert r.status_code in (400, 413), r.content
    assert r.json()["field"] == field and r.json()["error"]
    assert not PartUpload.objects.exists() and not list(parts_dir.rglob("*"))
    assert ScoringJob.objects.get().status == "pending"


@pytest.mark.django_db(transaction=True)
def test_the_worker_client_resumes_a_cut_download_checks_it_and_uploads_once(
    live_server, release, worker, languages, tmp_path, settings
):
    """scoring.transfer against the platform's endpoints (a live server): a download cut short resumes from
    its partial file with a range request; a partial that is not the file's start fails the sha256 check and
    is dropped, and the next try fetches it whole; an upload is stored once and a refused one says why."""
    from scoring.transfer import ChecksumMismatch, Platform, TransferError

    _, secret = worker
    platform = Platform(url=live_server.url, token=secret, data_dir=tmp_path / "worker")
    job_of = job_token("scoring", release.pk, "en-de", "chrF++")
    data = (Path(release.path) / "en-de" / "test.parquet").read_bytes()
    target = platform.release_root(release.pk) / "en-de" / "test.parquet"
    partial = target.with_name("test.parquet.partial")
    partial.parent.mkdir(parents=True)
    partial.write_bytes(data[:100])
    root = platform.fetch_release(release.pk, ["en-de"], job_token=job_of)
    assert target.read_bytes() == data and not partial.exists()
    assert json.loads((root / "manifest.json").read_text())["version"] == "test-1"
    assert not (root / "en-zh").exists()  # only the task's direction
    target.unlink()
    partial.write_bytes(b"x" * 100)  # the rest appended to these bytes cannot have the listed sha256
    with pytest.raises(ChecksumMismatch):
        platform.fetch_release(release.pk, ["en-de"], job_token=job_of)
    assert not partial.exists() and not target.exists()
    platform.fetch_release(release.pk, ["en-de"], job_token=job_of)
    assert target.read_bytes() == data
    with pytest.raises(TransferError, match="no direction en-fr"):
        platform.fetch_release(release.pk, ["en-fr"], job_token=job_of)

    job = ScoringJob.objects.create(release=release, metric="chrF++", direction=languages["en-de"])
    part = tmp_path / "part.parquet"
    part.write_bytes(part_bytes("chrF++", "en-de"))
    first = platform.upload_part(release.pk, "chrF++", "en-de", part, job_of)
    again = platform.upload_part(release.pk, "chrF++", "en-de", part, job_of)
    assert (first["status"], again["status"]) == (201, 200) and first["sha256"] == again["sha256"]
    job.refresh_from_db()
    assert job.uploads.count() == 1
    part.write_bytes(part_bytes("BLEU", "en-de"))
    with pytest.raises(TransferError, match=r"HTTP 400: .*metric 'BLEU'.* \(field metric\)"):
        platform.upload_part(release.pk, "chrF++", "en-de", part, job_of)
    with pytest.raises(TransferError, match="HTTP 401"):
        Platform(url=live_server.url, token="xqw_revoked", data_dir=tmp_path).fetch_release(release.pk, ["en-de"])


def test_a_scoring_job_token_opens_its_own_release_direction_and_metric_only(client, release, worker, languages):
    """A worker token alone opens nothing; with a job token, only that job's release, direction and metric:
    another's answers as missing, and nothing is stored."""
    _, secret = worker
    ScoringJob.objects.create(release=release, metric="chrF++", direction=languages["en-de"])
    ScoringJob.objects.create(release=release, metric="BLEU", direction=languages["en-de"])
    body = part_bytes("chrF++", "en-de")
    url = reverse("workers:upload_part", args=[release.pk, "chrF++", "en-de"])

    def send(**headers):
        return client.generic(
            "PUT",
            url,
            body,
            content_type="application/vnd.apache.parquet",
            HTTP_X_PART_SHA256=hashlib.sha256(body).hexdigest(),
            HTTP_AUTHORIZATION=f"Bearer {secret}",
            **headers,
        )

    assert (send().status_code, send().json()["field"]) == (401, "job")
    for scope in (
        ("scoring", release.pk, "en-de", "BLEU"),  # another metric's job
        ("scoring", release.pk, "en-zh", "chrF++"),  # another direction's
        ("scoring", release.pk + 1, "en-de", "chrF++"),  # another release's
        ("release", release.pk, "en-de"),  # a release worker's job
    ):
        r = send(HTTP_X_WORKER_JOB=job_token(*scope))
        assert (r.status_code, r.json()["field"]) == (404, "job"), scope
    assert not PartUpload.objects.exists()
    other_file = reverse("workers:release_file", args=[release.pk, "en-zh"])
    assert client.get(other_file, **auth(secret, release.pk, "en-de")).status_code == 404
    assert client.get(other_file, **auth(secret, release.pk, "en-zh")).status_code == 200
    assert send(HTTP_X_WORKER_JOB=job_token("scoring", release.pk, "en-de", "chrF++")).status_code == 201
