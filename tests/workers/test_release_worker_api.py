"""Release directions staged by a worker with no database and no shared file system (issue 40): the row
stream (header, rows, checksummed trailer), the staged upload verified, stored once per content and recorded
with its worker, tampered uploads refused with the field named and nothing stored, failures reported, and a
release built through the worker's client byte for byte the release of the shared file system. The
client talks to the Django app in this process (httpx's WSGI transport); tests/workers/test_http_workers.py
runs the same over real HTTP with separate processes."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import httpx
import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.urls import reverse

from exports.benchmark.selectors import latest_build
from exports.benchmark.services import build_run
from exports.models import Release, StagedUpload
from exports.release import selectors as release_selectors
from exports.release import services, transfer
from exports.release.domain import release_files, staged_upload
from exports.release.domain.staged_upload import StagedRefused, StreamBroken
from exports.workers import services as worker_services
from tests.exports.conftest import seeded  # noqa: F401  (fixture: a small project with two directions)
from tests.support.asserts import every
from tests.workers.jobs import job_token, worker_auth
from worker_client import is_transient

pytestmark = pytest.mark.django_db


@pytest.fixture
def built(seeded):  # noqa: F811
    build_run(project=seeded)
    return seeded


@pytest.fixture
def worker(db, admin_user):
    return worker_services.token_create(name="far-cpu-3", created_by=admin_user)


@pytest.fixture
def building(built, settings):
    """A release of ``built`` being built for release workers (what create_release_task records)."""
    settings.RELEASE_WORKERS = "http"
    job = services.release_begin(project=built, version="1.0.0")
    services.release_job_record(job=job)
    return job


def auth(secret: str, release_id: int, direction_code: str) -> dict:
    """A release worker's headers: its worker token and the token of the job (the release's direction)."""
    return worker_auth(secret, "release", release_id, direction_code)


@pytest.fixture
def in_process():
    """httpx calls the Django app in this thread, inside the test's transaction: the connection must not be
    closed at the end of each request (the test client does the same)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def platform_for(secret: str, data: Path) -> transfer.ReleasePlatform:
    from django.core.wsgi import get_wsgi_application

    http = httpx.Client(
        transport=httpx.WSGITransport(app=get_wsgi_application()),
        base_url="http://testserver",
        headers={"Authorization": f"Bearer {secret}"},
    )
    return transfer.ReleasePlatform(url="http://testserver", token=secret, data_dir=data, _http=http)


def stage_locally(client, job, direction_code: str, secret: str, where: Path) -> tuple[Path, str]:
    """A direction staged as a worker does (rows from the platform, the release writer), packed."""
    r = client.get(
        reverse("workers:release_direction_rows", args=[job.release_id, direction_code]),
        **auth(secret, job.release_id, direction_code),
    )
    header, rows = staged_upload.rows_decode(_lines(b"".join(r.streaming_content)))
    release_files.write_staged_direction(rows, direction_code, where, tuple(header["formats"]), header["stamp"])
    archive = where / f"{direction_code}.tar.gz"
    return archive, staged_upload.archive_write(where, direction_code, header["formats"], archive)


def _lines(data: bytes):
    return [line + b"\n" for line in data.split(b"\n") if line]


def put(client, job, direction, body: bytes, secret: str, sha: str | None = None, length: int | None = None):
    url = reverse("workers:release_direction_staged", args=[job.release_id, direction])
    extra = {"CONTENT_LENGTH": str(length)} if length is not None else {}
    return client.generic(
        "PUT",
        url,
        body,
        content_type=staged_upload.ARCHIVE_MEDIA_TYPE,
        HTTP_X_STAGED_SHA256=sha if sha is not None else hashlib.sha256(body).hexdigest(),
        **auth(secret, job.release_id, direction),
        **extra,
    )


def test_the_row_stream_is_the_selectors_rows_with_a_header_and_a_checksummed_trailer(client, building, worker, built):
    token, secret = worker
    url = reverse("workers:release_direction_rows", args=[building.release_id, "en-de"])
    assert client.get(url).status_code == 401
    r = client.get(url, **auth(secret, building.release_id, "en-de"), HTTP_ACCEPT_ENCODING="gzip")
    assert r.status_code == 200 and r["Content-Encoding"] == "gzip"
    import gzip

    data = gzip.decompress(b"".join(r.streaming_content))
    header, rows = staged_upload.rows_decode(_lines(data))
    assert header["direction"] == "en-de" and header["release"] == building.release_id and header["formats"] == []
    assert header["stamp"]["build"] == latest_build(built).pk
    expected = list(release_selectors.iter_triplet_rows(built, "en-de"))
    assert list(rows) == expected and len(expected) > 4
    release = Release.objects.get(pk=building.release_id)
    assert release.directions["en-de"]["status"] == "running" and release.directions["en-de"]["worker"] == token.name
    # the trailer is the sha256 of every byte before it (computed here independently)
    lines = _lines(data)
    end = json.loads(lines[-1])["end"]
    assert end == {"rows": len(expected), "sha256": hashlib.sha256(b"".join(lines[:-1])).hexdigest()}
    # a stream cut before its trailer, or altered, is refused before its last row is handed over
    _, cut = staged_upload.rows_decode(lines[:-1])
    with pytest.raises(StreamBroken, match="before its trailer"):
        list(cut)
    altered = [*lines[:2], lines[2].replace(b"en-de", b"en-xx", 1), *lines[3:]]
    _, bad = staged_upload.rows_decode(altered)
    with pytest.raises(StreamBroken, match="trailer says"):
        list(bad)
    # a release that is not being built by release workers, a direction it does not stage, none at all
    other = reverse("workers:release_direction_rows", args=[building.release_id, "en-ja"])
    assert client.get(other, **auth(secret, building.release_id, "en-ja")).json()["field"] == "direction"
    assert (
        client.get(
            reverse("workers:release_direction_rows", args=[999999, "en-de"]), **auth(secret, 999999, "en-de")
        ).status_code
        == 404
    )
    Release.objects.filter(pk=building.release_id).update(job={})
    r = client.get(url, **auth(secret, building.release_id, "en-de"))
    assert r.status_code == 409 and r.json()["field"] == "release"


def test_a_staged_direction_is_verified_stored_once_and_recorded_with_its_worker(
    client, building, worker, tmp_path, admin_user
):
    token, secret = worker
    archive, sha = stage_locally(client, building, "en-de", secret, tmp_path / "worker")
    body = archive.read_bytes()
    first = put(client, building, "en-de", body, secret)
    assert first.status_code == 201, first.content
    assert first.json()["stored"] is True and first.json()["sha256"] == sha
    staging = building.staging
    staged = release_files.staged_direction(staging, "en-de")
    local = release_files.staged_direction(tmp_path / "worker", "en-de")
    assert staged == local  # the same files, the same summary
    for rel in release_files.direction_files("en-de", ()):
        assert (staging / rel).read_bytes() == (tmp_path / "worker" / rel).read_bytes()
    release = Release.objects.get(pk=building.release_id)
    entry = release.directions["en-de"]
    assert entry["status"] == "done" and entry["worker"] == "far-cpu-3" and entry["digest"] == local["digest"]
    [upload] = StagedUpload.objects.all()
    assert upload.worker == token and upload.size == len(body) and upload.direction == "en-de"
    written = (staging / "en-de" / "test.parquet").stat().st_mtime_ns
    again = put(client, building, "en-de", body, secret)  # a task delivered again sends the same archive
    assert again.status_code == 200 and again.json()["stored"] is False
    assert StagedUpload.objects.count() == 1 and (staging / "en-de" / "test.parquet").stat().st_mtime_ns == written
    assert not any(p.name.endswith(".incoming") for p in staging.parent.iterdir())
    # an admin sees every staged direction with its worker, and how many each token sent
    client.force_login(admin_user)
    listing = client.get(reverse("admin:exports_stagedupload_changelist")).content.decode()
    assert sha in listing and "far-cpu-3" in listing
    tokens = client.get(reverse("admin:exports_workertoken_changelist")).content.decode()
    assert "staged directions" in tokens.lower() and '<td class="field-staged_count">1</td>' in tokens


def repack(src: Path, dst: Path, direction_code: str, change) -> bytes:
    shutil.copytree(src, dst)
    change(dst)
    return (
        staged_upload.archive_write(dst, direction_code, [], dst / "out.tar.gz") and (dst / "out.tar.gz").read_bytes()
    )


def test_a_tampered_staged_direction_is_refused_with_the_field_named_and_nothing_is_stored(
    client, building, worker, tmp_path
):
    token, secret = worker
    archive, _ = stage_locally(client, building, "en-de", secret, tmp_path / "worker")
    good = archive.read_bytes()
    src = tmp_path / "worker"

    def flip_parquet(d: Path):
        p = d / "en-de" / "test.parquet"
        data = bytearray(p.read_bytes())
        data[len(data) // 2] ^= 0xFF
        p.write_bytes(bytes(data))

    def edit_summary(**fields):
        def change(d: Path):
            p = d / release_files.SPOOL_DIR / "en-de.json"
            summary = json.loads(p.read_text())
            summary.update(fields)
            p.write_text(json.dumps(summary))

        return change

    def add_levels_id(d: Path):
        p = d / release_files.SPOOL_DIR / "en-de.json"
        summary = json.loads(p.read_text())
        summary["levels"]["0"].append("en-de/forged/reference")
        p.write_text(json.dumps(summary))

    cases = [
        ("wrong sha256", lambda: put(client, building, "en-de", good, secret, sha="0" * 64), 400, "sha256"),
        ("no sha256", lambda: put(client, building, "en-de", good, secret, sha="abc"), 400, "sha256"),
        ("not an archive", lambda: put(client, building, "en-de", b"x" * 100, secret), 400, "body"),
        ("a changed file", lambda: put(client, building, "en-de", repack(src, tmp_path / "a", "en-de", flip_parquet), secret), 400, "files"),
        ("another direction's summary", lambda: put(client, building, "en-de", repack(src, tmp_path / "b", "en-de", edit_summary(direction="en-zh")), secret), 400, "direction"),
        ("other formats", lambda: put(client, building, "en-de", repack(src, tmp_path / "c", "en-de", edit_summary(formats=["jsonl"])), secret), 400, "formats"),
        ("a triplet id too many", lambda: put(client, building, "en-de", repack(src, tmp_path / "d", "en-de", add_levels_id), secret), 400, "triplets"),
        ("rows of an earlier build", lambda: put(client, building, "en-de", repack(src, tmp_path / "e", "en-de", edit_summary(stamp={"build": 0, "merged": "x"})), secret), 409, "stamp"),
        ("sent for another direction", lambda: put(client, building, "en-zh", good, secret), 400, "body"),
        ("a direction the release lacks", lambda: put(client, building, "en-ja", good, secret), 400, "direction"),
    ]  # fmt: skip
    for name, send, status, field in cases:
        r = send()
        assert (r.status_code, r.json().get("field")) == (status, field), (name, r.content)
        assert r.json()["error"]
    # a body cut off before its declared length (a worker killed mid-upload; over real HTTP in test_http_workers)
    with pytest.raises(StagedRefused) as refused:
        worker_services.direction_staged_receive(
            release_id=building.release_id,
            direction_code="en-de",
            declared_sha256=hashlib.sha256(good).hexdigest(),
            body=io.BytesIO(good[:1000]),
            length=len(good),
            worker=token,
        )
    assert refused.value.field == "body" and "received 1000 of the" in str(refused.value)
    assert not StagedUpload.objects.exists()
    assert not (building.staging / "en-de").exists() and not list(
        (building.staging / release_files.SPOOL_DIR).glob("en-*")
    )
    assert Release.objects.get(pk=building.release_id).directions["en-de"]["status"] == "running"
    # past the size bound: refused before a byte is read
    from django.test import override_settings

    with override_settings(RELEASE_UPLOAD_MAX_BYTES=1000):
        r = put(client, building, "en-de", good, secret)
    assert r.status_code == 413 and r.json()["field"] == "size"
    # the untampered archive is then taken
    assert put(client, building, "en-de", good, secret).status_code == 201


def test_a_worker_reports_a_failed_direction_and_the_release_fails_naming_it(client, building, worker):
    _, secret = worker
    url = reverse("workers:release_direction_report", args=[building.release_id, "en-zh"])
    r = client.post(
        url,
        {"status": "retrying", "error": "ConnectError: refused"},
        content_type="application/json",
        **auth(secret, building.release_id, "en-zh"),
    )
    assert r.status_code == 200
    release = Release.objects.get(pk=building.release_id)
    assert release.status == "building" and release.directions["en-zh"]["status"] == "retrying"
    r = client.post(
        url,
        {"status": "failed", "error": "<b>MemoryError</b>"},
        content_type="application/json",
        **auth(secret, building.release_id, "en-zh"),
    )
    assert r.status_code == 200
    release.refresh_from_db()
    assert release.status == "failed" and release.error == "en-zh: <b>MemoryError</b> (worker far-cpu-3)"
    r = client.post(
        url, {"status": "done"}, content_type="application/json", **auth(secret, building.release_id, "en-zh")
    )
    assert r.status_code == 400 and r.json()["field"] == "status"
    r = client.post(
        url,
        {"status": "failed", "error": "late"},
        content_type="application/json",
        **auth(secret, building.release_id, "en-zh"),
    )
    assert r.status_code == 409 and r.json()["field"] == "release"  # the release is no longer being built


@pytest.mark.parametrize("formats", [(), ("jsonl", "tsv")])
def test_a_release_staged_by_the_worker_client_is_byte_for_byte_the_shared_file_system_release(
    built, worker, settings, tmp_path, in_process, formats
):
    """Every direction staged through the client (rows over the platform's endpoint, written on the worker's
    disk, uploaded), then the platform's finish step: the files are those of the release written on the
    shared file system, byte for byte."""
    _, secret = worker
    settings.RELEASE_WORKERS = "http"
    platform = platform_for(secret, tmp_path / "worker-data")
    job = services.release_begin(project=built, version="1.0.0", formats=formats)
    services.release_job_record(job=job)
    for direction in job.todo:
        token = job_token("release", job.release_id, direction)
        entry = transfer.direction_stage(platform, release_id=job.release_id, direction_code=direction, job_token=token)
        assert entry["stored"] is True
    assert not list((tmp_path / "worker-data" / "release-staging").iterdir())  # nothing kept once sent
    release = services.release_finish(job=job)
    out = Path(release.path)
    reference = tmp_path / "shared"
    content = services.release_content_make(
        project=built, version="1.0.0", plan=services.sampling_plan_make(project=built)
    )
    manifest = release_files.write_release(content, reference, tuple(sorted(formats)))
    assert release.content_hash == manifest["content_hash"]
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert files == {str(p.relative_to(reference)): p.read_bytes() for p in sorted(reference.rglob("*")) if p.is_file()}
    assert len(files) == 2 * (1 + len(formats)) + 6
    assert {e["worker"] for e in release.directions.values()} == {"far-cpu-3"}
    assert StagedUpload.objects.filter(release=release).count() == 2


class CutOnce(httpx.BaseTransport):
    """The network between worker and platform: the first upload is cut off after half its body."""

    def __init__(self, inner: httpx.BaseTransport):
        self.inner, self.cuts = inner, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "PUT" and self.cuts == 0:
            self.cuts += 1
            body = b"".join(request.stream)
            raise httpx.WriteError(f"connection reset after {len(body) // 2} of {len(body)} bytes")
        return self.inner.handle_request(request)


def test_a_worker_cut_off_mid_upload_sends_the_direction_again_without_reading_the_rows(
    built, worker, settings, tmp_path, in_process
):
    from django.core.wsgi import get_wsgi_application

    _, secret = worker
    settings.RELEASE_WORKERS = "http"
    job = services.release_begin(project=built, version="1.0.0")
    services.release_job_record(job=job)
    platform = platform_for(secret, tmp_path / "worker-data")
    network = CutOnce(httpx.WSGITransport(app=get_wsgi_application()))
    platform._http = httpx.Client(transport=network, base_url="http://testserver", headers=platform.http.headers)
    token = job_token("release", job.release_id, "en-de")
    with pytest.raises(httpx.WriteError) as cut:
        transfer.direction_stage(platform, release_id=job.release_id, direction_code="en-de", job_token=token)
    assert is_transient(cut.value) and network.cuts == 1
    assert not StagedUpload.objects.exists() and not (job.staging / "en-de").exists()
    kept = release_files.staged_direction(platform.staging_dir(job.release_id), "en-de")
    assert kept is not None  # the worker's own copy survives the cut
    # the task delivered again: the direction staged here before is sent, the rows are not read again
    entry = transfer.direction_stage(platform, release_id=job.release_id, direction_code="en-de", job_token=token)
    assert entry["stored"] is True and entry["reused"] is True and entry["digest"] == kept["digest"]
    release = Release.objects.get(pk=job.release_id)
    assert release.directions["en-de"]["status"] == "done" and StagedUpload.objects.count() == 1
    assert release_files.staged_direction(job.staging, "en-de")["digest"] == kept["digest"]


def test_without_a_platform_url_the_release_workers_task_stages_on_the_shared_file_system(built, settings, tmp_path):
    """RELEASE_WORKERS=http with no broker (tasks in-process) or a worker without XQMEVAL_PLATFORM_URL: the
    direction task stages through the database and the shared file system, and the release is the same."""
    from exports.release.tasks import create_release_task

    settings.RELEASE_WORKERS = "http"
    result = create_release_task.delay(built.pk, "1.0.0", ["jsonl"]).get()
    release = Release.objects.get(pk=result["release"])
    assert release.status == "ready" and release.job["formats"] == ["jsonl"]
    assert not StagedUpload.objects.exists() and every("worker" not in e for e in release.directions.values())
    content = services.release_content_make(
        project=built, version="1.0.0", plan=services.sampling_plan_make(project=built)
    )
    reference = release_files.write_release(content, tmp_path / "shared", ("jsonl",))
    assert release.content_hash == reference["content_hash"] and release.manifest["files"] == reference["files"]


def forge_first_triplet_id(d: Path) -> None:
    """What a token holder did (#48): the first triplet_id of test.parquet changed, the file written with
    the release's own options, and the summary's sha256 of the file recomputed; the spool left as sent."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = d / "en-de" / "test.parquet"
    table = pq.read_table(path)
    ids = table.column("triplet_id").to_pylist()
    ids[0] = "FORGED BY A WORKER TOKEN"
    table = table.set_column(table.schema.get_field_index("triplet_id"), "triplet_id", pa.array(ids, pa.string()))
    pq.write_table(table.cast(release_files.TRIPLET_SCHEMA), path, **release_files.PARQUET_OPTIONS)
    summary_path = d / release_files.SPOOL_DIR / "en-de.json"
    summary = json.loads(summary_path.read_text())
    summary["files"]["en-de/test.parquet"] = hashlib.sha256(path.read_bytes()).hexdigest()
    summary_path.write_text(json.dumps(summary))


def test_a_forged_staged_direction_is_refused_and_the_honest_one_is_then_taken(client, building, worker, tmp_path):
    """The archive agrees with itself (each file's sha256 is its summary's), but its rows are not those the
    platform sent: refused, naming the row, and nothing of it is kept, so the honest archive is stored."""
    _, secret = worker
    archive, _ = stage_locally(client, building, "en-de", secret, tmp_path / "worker")
    honest = archive.read_bytes()
    forged = repack(tmp_path / "worker", tmp_path / "forged", "en-de", forge_first_triplet_id)
    unpacked = staged_upload.archive_unpack(
        _written(tmp_path / "forged.tar.gz", forged),
        tmp_path / "forged-check",
        direction_code="en-de",
        formats=[],
        max_unpacked=1 << 30,
    )
    assert unpacked["direction"] == "en-de"  # consistent with itself: the archive's own checks pass it

    r = put(client, building, "en-de", forged, secret)
    assert (r.status_code, r.json()["field"]) == (400, "triplets"), r.content
    assert "row 1 is triplet 'FORGED BY A WORKER TOKEN'" in r.json()["error"]
    assert not StagedUpload.objects.exists() and not (building.staging / "en-de").exists()
    assert Release.objects.get(pk=building.release_id).directions["en-de"]["status"] == "running"

    r = put(client, building, "en-de", honest, secret)
    assert r.status_code == 201 and r.json()["stored"] is True
    staged = pq_ids(building.staging / "en-de" / "test.parquet")
    assert staged == [
        row["triplet_id"] for row in release_selectors.iter_triplet_rows(building_project(building), "en-de")
    ]
    # and once the honest one is in, the forgery sent again is still refused: it does not replace it
    r = put(client, building, "en-de", forged, secret)
    assert (r.status_code, r.json()["field"]) == (400, "triplets")
    assert StagedUpload.objects.get().sha256 == hashlib.sha256(honest).hexdigest()


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def pq_ids(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["triplet_id"]).column("triplet_id").to_pylist()


def building_project(job):
    return Release.objects.select_related("project").get(pk=job.release_id).project


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(lambda job: ("release", job.release_id, "en-de"), id="another direction's job"),
        pytest.param(lambda job: ("release", job.release_id + 1, "en-zh"), id="another release's job"),
        pytest.param(lambda job: ("scoring", job.release_id, "en-zh", "chrF++"), id="a scoring job"),
    ],
)
def test_a_report_is_taken_only_with_the_jobs_own_token(client, building, worker, other):
    """Any token could fail any release being built with its own text (#48): a report now needs the job
    token of that release's direction; another job's token answers as missing and changes nothing."""
    _, secret = worker
    url = reverse("workers:release_direction_report", args=[building.release_id, "en-zh"])
    body = {"status": "failed", "error": "FORGED failure"}
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    r = client.post(url, body, content_type="application/json", **bearer)
    assert (r.status_code, r.json()["field"]) == (401, "job")
    r = client.post(url, body, content_type="application/json", **bearer, HTTP_X_WORKER_JOB=job_token(*other(building)))
    assert (r.status_code, r.json()["field"]) == (404, "job")
    forged = job_token("release", building.release_id, "en-zh")[:-4] + "AAAA"  # not the platform's signature
    r = client.post(url, body, content_type="application/json", **bearer, HTTP_X_WORKER_JOB=forged)
    assert (r.status_code, r.json()["field"]) == (401, "job")
    release = Release.objects.get(pk=building.release_id)
    assert release.status == "building" and release.directions["en-zh"]["status"] != "failed" and not release.error
    # the job's own token is taken
    r = client.post(url, body, content_type="application/json", **auth(secret, building.release_id, "en-zh"))
    assert r.status_code == 200
    release.refresh_from_db()
    assert release.status == "failed" and "FORGED failure" in release.error


def test_a_job_token_expires(client, building, worker, settings):
    import time

    from exports.workers.grants import JobScope, job_token_issue

    _, secret = worker
    url = reverse("workers:release_direction_rows", args=[building.release_id, "en-de"])
    stale = job_token_issue(JobScope("release", building.release_id, "en-de"), now=time.time() - 8 * 24 * 3600)
    r = client.get(url, HTTP_AUTHORIZATION=f"Bearer {secret}", HTTP_X_WORKER_JOB=stale)
    assert r.status_code == 401 and "expired" in r.json()["error"]
    settings.WORKER_JOB_TOKEN_MAX_AGE = 10 * 24 * 3600
    fresh = job_token_issue(JobScope("release", building.release_id, "en-de"), now=time.time() - 8 * 24 * 3600)
    assert client.get(url, HTTP_AUTHORIZATION=f"Bearer {secret}", HTTP_X_WORKER_JOB=fresh).status_code == 200
