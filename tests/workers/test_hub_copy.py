"""A worker without the shared file system takes a pushed release from the Hub (issue 40: "from the Hub
when the release was pushed"): the scoring task names the release's Hub repo and the tagged revision, and
the worker client (scoring.transfer) downloads the direction file from the Hub at that revision, checked
against the sha256 the platform lists, and never from the platform's file endpoint; a Hub copy with other
bytes, a private repo without the worker's HF_TOKEN, or a worker kept off the Hub (HF_HUB_OFFLINE) gets
the file from the platform. Against the Hub look-alike (tests/exports/hub_server.py) and a live server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.signals import request_started

from exports.models import Release
from exports.scores import selectors
from exports.workers import services as worker_services
from scoring.tests.releases import write_release
from tests.exports.hub_server import HubServer
from tests.workers.jobs import job_token

REPO_ID = "xq-lab/demo-release"


@pytest.fixture
def release(project, tmp_path):
    root = write_release(tmp_path / "rel")
    return Release.objects.create(
        project=project,
        version="t1",
        status=Release.Status.READY,
        path=str(root),
        manifest=json.loads((root / "manifest.json").read_text()),
    )


def release_files(release) -> dict[str, bytes]:
    root = Path(release.path)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def hub(monkeypatch):
    with HubServer(token="hf_hub_secret") as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield server


@pytest.fixture
def platform_file_requests():
    """The paths of requests to the platform's release-file endpoint (the live server runs in this process)."""
    seen: list[str] = []

    def record(sender, environ=None, **kwargs):
        path = (environ or {}).get("PATH_INFO", "")
        if "/files/" in path:
            seen.append(path)

    request_started.connect(record)
    yield seen
    request_started.disconnect(record)


def pushed(release, hub, files: dict[str, bytes], *, private: bool = False) -> str:
    repo = hub.add_dataset(REPO_ID, files, private=private)
    release.hub_repo, release.hub_revision = REPO_ID, repo.head
    release.push_status = Release.PushStatus.DONE
    release.save()
    return repo.head


def test_the_scoring_task_names_the_hub_copy_only_of_a_finished_push(release):
    assert selectors.hub_copy(release) == {}
    release.hub_repo, release.hub_revision, release.push_status = REPO_ID, "a" * 40, Release.PushStatus.RUNNING
    assert selectors.hub_copy(release) == {}  # a push still running (or failed) is no copy to read
    release.push_status = Release.PushStatus.DONE
    assert selectors.hub_copy(release) == {"hub_repo": REPO_ID, "hub_revision": "a" * 40}


@pytest.mark.django_db(transaction=True)
def test_a_worker_downloads_a_pushed_release_from_the_hub_at_its_revision_checked_against_the_platform(
    live_server, release, hub, tmp_path, admin_user, platform_file_requests, monkeypatch
):
    from scoring.transfer import Platform

    _, secret = worker_services.token_create(name="cloud-gpu", created_by=admin_user)
    files = release_files(release)
    revision = pushed(release, hub, files)

    def job_of(directions) -> str:  # a task scores one direction; this test fetches two with one listing
        return job_token("scoring", release.pk, directions[0], "chrF++")

    def fetch(name: str, directions=("en-de",)):
        platform = Platform(url=live_server.url, token=secret, data_dir=tmp_path / name)
        root = platform.fetch_release(release.pk, list(directions), REPO_ID, revision, job_token=job_of(directions))
        return platform, root

    platform, root = fetch("w1", ["en-de", "en-zh"])
    assert platform.sources == {"en-de": "hub", "en-zh": "hub"} and platform_file_requests == []
    for code in ("en-de", "en-zh"):
        assert (root / code / "test.parquet").read_bytes() == files[f"{code}/test.parquet"]
        assert f"GET /datasets/{REPO_ID}/resolve/{revision}/{code}/test.parquet" in hub.state.calls
    # a file already there with the listed sha256 is kept: nothing asked of either
    calls = len(hub.state.calls)
    platform.fetch_release(release.pk, ["en-de"], REPO_ID, revision, job_token=job_of(["en-de"]))
    assert platform.sources == {"en-de": "kept"} and len(hub.state.calls) == calls

    # a Hub copy with other bytes than the platform lists: refused, and the platform's file is taken
    hub.state.repos[REPO_ID].files["en-de/test.parquet"] = files["en-de/test.parquet"][:-1] + b"\0"
    platform, root = fetch("w2")
    assert platform.sources == {"en-de": "platform"} and len(platform_file_requests) == 1
    assert (root / "en-de" / "test.parquet").read_bytes() == files["en-de/test.parquet"]
    assert not (root / "en-de" / "test.parquet.partial").exists()

    # a private repo: the worker's HF_TOKEN opens it; without one, the platform serves
    hub.state.repos.clear()
    revision = pushed(release, hub, files, private=True)
    platform, _ = fetch("w3")
    assert platform.sources == {"en-de": "platform"}
    monkeypatch.setenv("HF_TOKEN", "hf_hub_secret")
    platform, root = fetch("w4")
    assert platform.sources == {"en-de": "hub"}
    assert (root / "en-de" / "test.parquet").read_bytes() == files["en-de/test.parquet"]

    # a worker kept off the Hub asks the platform only
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    calls = len(hub.state.calls)
    platform, _ = fetch("w5")
    assert platform.sources == {"en-de": "platform"} and len(hub.state.calls) == calls
