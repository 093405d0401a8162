"""A Hugging Face dataset imported from the corpus page runs as a task (#36.4), against a real HTTP Hub
look-alike (``tests.exports.hub_server``): the request records the job and returns without calling the Hub,
the page shows it pending, running, done with its counts, or failed with the reason; an unreachable Hub
writes nothing; a job whose process died shows as interrupted and can be retried; one import per project
and direction at a time; the command line reads through the same service."""

from __future__ import annotations

import io
import re
import socket
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from core.corpus import services
from core.corpus.domain import Columns, HubUnreachable
from core.corpus.tasks import import_hub_corpus_task
from core.models import CorpusImport, GoldSegment, JobStatus
from core.services import project_create
from tests.exports.hub_server import HubServer

pytestmark = pytest.mark.django_db

README = (
    b"---\nconfigs:\n- config_name: deu_Latn\n  data_files:\n  - split: devtest\n"
    b"    path: devtest/deu_Latn.parquet\n---\n# a FLORES+-shaped dataset\n"
)
ROWS = {
    "id": ["1", "2"],
    "source": ["The cat sat on the mat.", "He bought three apples."],
    "reference": ["Die Katze saß auf der Matte.", "Er kaufte drei Äpfel."],
}
COLUMNS = {"id_column": "id", "source_column": "source", "reference_column": "reference"}
FORM = {"direction": "en-de", "hf_dataset": "org/flores", "hf_config": "deu_Latn", "hf_split": "devtest", **COLUMNS}


def parquet(rows: dict) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table(rows), buf)
    return buf.getvalue()


def point_datasets_at(monkeypatch, url: str, cache) -> None:
    """``datasets`` and ``huggingface_hub`` read HF_ENDPOINT when first imported; a test running after that
    points their module settings at the look-alike (a worker process would take HF_ENDPOINT from its
    environment), with caches of its own."""
    import datasets
    import huggingface_hub.constants as hub

    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setattr(datasets.config, "HF_ENDPOINT", url)
    monkeypatch.setattr(datasets.config, "HUB_DATASETS_URL", url + "/datasets/{repo_id}/resolve/{revision}/{path}")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache / "datasets")
    monkeypatch.setattr(hub, "ENDPOINT", url)
    monkeypatch.setattr(hub, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(cache / "hub"))
    monkeypatch.setattr(hub, "HF_HUB_ETAG_TIMEOUT", hub.HF_HUB_ETAG_TIMEOUT)  # read_hf_dataset sets them
    monkeypatch.setattr(hub, "HF_HUB_DOWNLOAD_TIMEOUT", hub.HF_HUB_DOWNLOAD_TIMEOUT)


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with HubServer(token="hf_unused") as server:
        server.add_dataset("org/flores", {"README.md": README, "devtest/deu_Latn.parquet": parquet(ROWS)})
        point_datasets_at(monkeypatch, server.url, tmp_path / "hf-cache")
        yield server


@pytest.fixture
def flores(languages):
    return project_create(name="flores", directions=["en-de"])


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def hub_reads(hub) -> list[str]:
    return [c for c in hub.state.calls if "org/flores" in c]


@pytest.mark.django_db(transaction=True)  # the request commits, so its on_commit work runs inside it, as on the site
def test_without_a_broker_the_import_runs_in_process_and_the_page_shows_its_counts(client, admin_user, flores, hub):
    client.force_login(admin_user)
    url = reverse("projects:corpus", args=["flores"])
    response = client.post(url, FORM, follow=True)
    job = CorpusImport.objects.get(project=flores)
    assert (job.status, job.created, job.unchanged, job.error) == ("done", 2, 0, "")
    assert _messages(response) == ["org/flores: 2 gold segments imported into en-de, 0 unchanged."]
    assert sorted(GoldSegment.objects.filter(project=flores).values_list("external_id", "reference")) == [
        ("1", "Die Katze saß auf der Matte."),
        ("2", "Er kaufte drei Äpfel."),
    ]
    assert any("/resolve/" in c and "deu_Latn.parquet" in c for c in hub_reads(hub))  # read over HTTP
    page = response.content.decode()
    assert "2 gold segments imported, 0 unchanged." in page and f'data-import="{job.pk}"' in page
    assert "hx-trigger" not in page.split('id="hub-imports"')[1].split(">")[0]  # finished: no polling

    # the same import again: nothing new (idempotent), counted as unchanged
    client.post(url, FORM)
    again = CorpusImport.objects.exclude(pk=job.pk).get()
    assert (again.status, again.created, again.unchanged) == ("done", 0, 2)
    assert GoldSegment.objects.filter(project=flores).count() == 2


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_with_a_broker_the_request_records_the_job_and_never_waits_on_the_hub(
    client, admin_user, flores, hub, redis_url
):
    import redis as redis_lib

    from tests.support.celery_queue import tasks_queued_to

    hub.state.delay = 5.0  # a slow Hub: a request that read it would take longer than this test allows
    queue = redis_lib.Redis.from_url(redis_url)
    queue.delete("default")
    client.force_login(admin_user)
    url = reverse("projects:corpus", args=["flores"])
    try:
        with tasks_queued_to(redis_url):
            started = time.monotonic()
            response = client.post(url, FORM, follow=True)
            took = time.monotonic() - started
            job = CorpusImport.objects.get(project=flores)
            assert took < hub.state.delay and hub_reads(hub) == []  # the request did not touch the Hub
            assert job.status == "pending" and not GoldSegment.objects.exists()
            assert _messages(response) == [f"Import {job.pk} of org/flores into en-de started."]
            page = response.content.decode()
            fragment = reverse("projects:hub_imports", args=["flores"])
            assert f'hx-get="{fragment}" hx-trigger="every 2s"' in page and "queued …" in page
            messages = queue.lrange("default", 0, -1)
            assert len(messages) == 1 and b"core.import_hub_corpus" in messages[0]
            # a second submit while it is pending starts nothing and names the one queued
            response = client.post(url, FORM, follow=True)
            assert CorpusImport.objects.count() == 1 and queue.llen("default") == 1
            assert _messages(response) == [
                f"an import of org/flores into en-de is already pending (import {job.pk}); nothing else was started"
            ]
    finally:
        queue.delete("default")
    # the project page's corpus stage says an import is queued, and polls until it is written
    stage = reverse("projects:stage", args=["flores", "corpus"])
    fragment = client.get(stage).content.decode()
    assert f'hx-get="{stage}" hx-trigger="every 2s"' in fragment
    assert "Importing <bdi>org/flores</bdi> into en-de (pending)" in fragment
    hub.state.delay = 0.0
    import_hub_corpus_task.apply((job.pk,))  # what the worker runs
    job.refresh_from_db()
    assert (job.status, job.created, job.attempts) == ("done", 2, 1)
    fragment = client.get(stage).content.decode()
    assert "hx-trigger" not in fragment and "Importing" not in fragment
    fragment = client.get(reverse("projects:hub_imports", args=["flores"])).content.decode()
    assert "2 gold segments imported, 0 unchanged." in fragment and "hx-trigger" not in fragment


@pytest.mark.slow  # huggingface_hub tries a refused connection five times with backoff (about 24 s)
@pytest.mark.django_db(transaction=True)
def test_an_unreachable_hub_fails_the_job_with_the_reason_writes_nothing_and_can_be_retried(
    client, admin_user, flores, hub, monkeypatch, tmp_path
):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    point_datasets_at(monkeypatch, closed, tmp_path / "other-cache")
    client.force_login(admin_user)
    response = client.post(reverse("projects:corpus", args=["flores"]), FORM, follow=True)
    job = CorpusImport.objects.get(project=flores)
    assert job.status == "failed" and job.error.startswith("the Hub did not answer: ConnectionError: ")
    assert "Couldn't reach 'org/flores' on the Hub" in job.error
    assert not GoldSegment.objects.exists()
    assert _messages(response) == [f"org/flores: nothing imported (import {job.pk} failed; the reason is below)."]
    page = response.content.decode()
    assert "Couldn&#x27;t reach &#x27;org/flores&#x27; on the Hub" in page and f"Retry import {job.pk}" in page

    point_datasets_at(monkeypatch, hub.url, tmp_path / "hf-cache")  # the Hub is back
    retry = reverse("projects:hub_import_retry", args=["flores", job.pk])
    response = client.post(retry, follow=True)
    job.refresh_from_db()
    assert (job.status, job.created, job.error, job.attempts) == ("done", 2, "", 2)
    assert _messages(response) == ["org/flores: 2 gold segments imported into en-de, 0 unchanged."]


@pytest.mark.slow  # huggingface_hub tries each call five times with backoff (about 24 s)
def test_a_transient_hub_fault_is_told_apart_from_a_missing_dataset(flores, hub):
    missing = services.corpus_import_queue(project=flores, direction_code="en-de", dataset="org/none", split="devtest")
    assert services.corpus_import_run(job_id=missing.pk, owner="task-1").ran  # a missing dataset: failed, not raised
    missing.refresh_from_db()
    assert missing.status == "failed" and "org/none" in missing.error and "DatasetNotFoundError" in missing.error

    hub.state.unavailable = 1000  # 503 on every call
    job = services.corpus_import_queue(
        project=flores, direction_code="en-de", dataset="org/flores", config="deu_Latn", split="devtest"
    )
    with pytest.raises(HubUnreachable):
        services.corpus_import_run(job_id=job.pk, owner="task-2")
    job.refresh_from_db()
    assert job.status == "failed" and job.error.startswith("the Hub did not answer: ") and "503" in job.error
    assert str(Path.cwd()) not in job.error  # datasets names the folder it looked in first; the page does not
    services.corpus_import_retry_record(
        job_id=job.pk, exc=HubUnreachable("org/flores", ["the Hub said 503"]), attempt=1, of=4, countdown=30
    )
    job.refresh_from_db()
    assert job.status == "pending" and job.note == "the Hub said 503 — retrying in 30 s (retry 1 of 4)"
    assert not job.interrupted  # the lease covers the wait


def test_a_bad_row_fails_the_job_with_every_problem_and_writes_nothing(flores, hub):
    hub.add_dataset(
        "org/bad",
        {
            "README.md": README,
            "devtest/deu_Latn.parquet": parquet({**ROWS, "source": ["", "He bought three apples."]}),
        },
    )
    job = services.corpus_import_queue(
        project=flores, direction_code="en-de", dataset="org/bad", config="deu_Latn", split="devtest", columns=Columns()
    )
    services.corpus_import_run(job_id=job.pk, owner="task-1")
    job.refresh_from_db()
    assert job.status == "failed" and "row 0" in job.error and not GoldSegment.objects.exists()


@pytest.mark.django_db(transaction=True)  # Retry's on_commit runs the task in-process, as on the site
def test_the_job_runs_once_a_died_process_shows_as_interrupted_and_its_own_retry_takes_over(
    client, admin_user, flores, hub
):
    job = services.corpus_import_queue(
        project=flores, direction_code="en-de", dataset="org/flores", config="deu_Latn", split="devtest"
    )
    # a process took it and is alive: a duplicate delivery does nothing, the same task's retry takes over
    CorpusImport.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, lease_owner="task-a", lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    assert not services.corpus_import_run(job_id=job.pk, owner="task-b").ran and hub_reads(hub) == []
    assert services.corpus_import_run(job_id=job.pk, owner="task-a").ran
    job.refresh_from_db()
    assert job.status == "done" and GoldSegment.objects.count() == 2
    calls = len(hub.state.calls)
    assert not services.corpus_import_run(job_id=job.pk, owner="task-a").ran  # done: never run again
    assert len(hub.state.calls) == calls

    # a process that died while running: shown as such, it holds nothing back, and Retry runs it again
    died = services.corpus_import_queue(
        project=flores, direction_code="en-de", dataset="org/flores", config="deu_Latn", split="devtest"
    )
    CorpusImport.objects.filter(pk=died.pk).update(
        status=JobStatus.RUNNING, lease_owner="task-c", lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    client.force_login(admin_user)
    page = client.get(reverse("projects:corpus", args=["flores"])).content.decode()
    row = page.split(f'data-import="{died.pk}"')[1].split("</tr>")[0]
    assert "interrupted" in row and "Its process stopped" in row and f"Retry import {died.pk}" in row
    response = client.post(reverse("projects:hub_import_retry", args=["flores", died.pk]), follow=True)
    died.refresh_from_db()  # in-process: it ran at once
    assert (died.status, died.unchanged) == ("done", 2)
    assert _messages(response) == ["org/flores: 0 gold segments imported into en-de, 2 unchanged."]
    # a done import has nothing to retry
    response = client.post(reverse("projects:hub_import_retry", args=["flores", died.pk]), follow=True)
    assert _messages(response) == [f"import {died.pk} is done: there is nothing to retry"]


def test_an_interrupted_import_gives_way_to_a_new_one(flores, hub):
    died = services.corpus_import_queue(
        project=flores, direction_code="en-de", dataset="org/flores", config="deu_Latn", split="devtest"
    )
    with pytest.raises(services.CorpusImportRunning):
        services.corpus_import_queue(project=flores, direction_code="en-de", dataset="org/other")
    CorpusImport.objects.filter(pk=died.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    fresh = services.corpus_import_queue(project=flores, direction_code="en-de", dataset="org/other")
    died.refresh_from_db()
    assert (died.status, died.error) == ("failed", services.INTERRUPTED) and fresh.status == "pending"


def test_the_service_refuses_a_path_or_a_direction_not_the_projects(flores):
    with pytest.raises(services.CorpusImportRejected) as refused:
        services.corpus_import_queue(project=flores, direction_code="en-zh", dataset="../../etc")
    assert refused.value.errors == [
        "'../../etc' is not a Hub dataset id: namespace/name, letters, digits, '-', '_' and '.' (not first); "
        "local dataset directories are imported with the import_corpus command",
        "direction: 'en-zh' is not one of flores's active directions",
    ]
    assert not CorpusImport.objects.exists()


def test_the_command_reads_a_hub_id_through_the_same_service(flores, hub):
    out = io.StringIO()
    call_command(
        "import_corpus", "flores", "--hf", "org/flores", "--config", "deu_Latn", "--split", "devtest",
        "--direction", "en-de", stdout=out,
    )  # fmt: skip
    assert out.getvalue().strip() == "flores en-de: 2 gold segments imported, 0 unchanged"
    assert any("deu_Latn.parquet" in c for c in hub_reads(hub)) and not CorpusImport.objects.exists()


@pytest.mark.slow  # one attempt against a Hub that answers 503: huggingface_hub's own five tries (about 24 s)
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_on_a_worker_an_unreachable_hub_is_tried_again_with_backoff_and_the_page_says_so(
    client, admin_user, flores, hub, worker_queue
):
    from celery.contrib.testing.worker import start_worker

    from tests.support.db_faults import wait_until
    from xqmeval.celery import app

    hub.state.unavailable = 10**6  # down until the test says otherwise
    job = services.corpus_import_queue(
        project=flores, direction_code="en-de", dataset="org/flores", config="deu_Latn", split="devtest"
    )
    client.force_login(admin_user)
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=[worker_queue], loglevel="WARNING", shutdown_timeout=30
    ):
        import_hub_corpus_task.apply_async((job.pk,), queue=worker_queue)
        url = reverse("projects:hub_imports", args=["flores"])

        def page_while_waiting() -> tuple[int, str] | None:
            page = client.get(url).content.decode()
            found = re.search(r"\(retry (\d) of 4\)", page)
            return (int(found.group(1)), page) if found else None

        # The page is read while the import waits for its next try. That wait is drawn with full jitter (0 to 2 s
        # after the first failure, 0 to 4 s after the second, ...), so a first wait can be too short to see
        # (CI, under load): with the Hub down, the next one comes after the next failed try.
        retry, page = wait_until(page_while_waiting, "the page showing the import waiting to be tried", timeout=150)
        assert "the Hub did not answer: " in page and "hx-trigger" in page  # still live: the page keeps polling
        assert not GoldSegment.objects.exists()
        hub.state.unavailable = 0  # the Hub is back before the next try
        wait_until(lambda: CorpusImport.objects.get(pk=job.pk).status == "done", "the retried import", timeout=60)
    job.refresh_from_db()
    assert (job.created, job.attempts, job.error) == (2, retry + 1, "") and GoldSegment.objects.count() == 2


def test_a_hub_id_named_like_a_server_folder_is_read_from_the_hub_only(flores, hub):
    """``core/corpus`` is a valid Hub id and a folder of the server's working directory: datasets would read
    the folder; the import asks the Hub, and the reason names no server path."""
    assert (Path.cwd() / "core" / "corpus").is_dir()
    job = services.corpus_import_queue(project=flores, direction_code="en-de", dataset="core/corpus", split="devtest")
    services.corpus_import_run(job_id=job.pk, owner="task-1")
    job.refresh_from_db()
    assert job.status == "failed" and "DatasetNotFoundError" in job.error and str(Path.cwd()) not in job.error
    assert any("/core/corpus" in call for call in hub.state.calls)  # asked the Hub, not the folder
    assert not GoldSegment.objects.exists()
