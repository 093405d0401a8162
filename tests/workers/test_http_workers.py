"""Done-when of issue 40 (scoring): the web app (gunicorn) and a platform worker with one data directory,
a scoring worker with another, sharing only Redis and HTTP, on PostgreSQL. A release is scored with chrF++
and an LLM judge (GEMBA-MQM against the OpenAI-compatible stub) over HTTP and ingested; then the same jobs
are run again by a worker on the shared file system, and the scores are the same. Also: a worker killed
in the middle of an upload leaves nothing on the platform, and the task, delivered again, completes."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from exports.models import MetricScore, PartUpload, Release, ScoringJob
from exports.scores import selectors, tasks
from exports.workers import services as worker_services
from scoring.tests.releases import release_rows, write_release
from tests.exports.scores.test_scoring_jobs import broker  # noqa: F401  (fixture: the platform's app on Redis)
from tests.support.asserts import every
from tests.workers.processes import Processes

pytestmark = [pytest.mark.redis, pytest.mark.slow, pytest.mark.subprocess, pytest.mark.django_db(transaction=True)]

LIMIT = 12  # judge calls per direction


def make_release(project, root: Path) -> Release:
    write_release(root)
    manifest = json.loads((root / "manifest.json").read_text())
    return Release.objects.create(
        project=project, version="t1", status=Release.Status.READY, path=str(root), manifest=manifest
    )


def wait_done(release, n: int, procs: Processes, timeout: float = 240.0) -> list[ScoringJob]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = list(ScoringJob.objects.filter(release=release).select_related("direction"))
        if len(jobs) == n and all(j.status in ("done", "failed") for j in jobs):
            return jobs
        time.sleep(0.5)
    raise AssertionError(f"jobs: {[(j.metric, j.direction.code, j.status, j.error) for j in jobs]}\n{procs.tail()}")


def scores(release) -> dict:
    return {
        (s.metric, s.direction.code, s.triplet_id): (s.score, s.level)
        for s in MetricScore.objects.filter(release=release).select_related("direction")
    }


def test_a_worker_sharing_only_redis_and_http_scores_as_the_shared_file_system_does(
    procs, project, languages, admin_user, tmp_path, settings
):
    from scoring.judges.stub import JudgeStubServer

    web, far = tmp_path / "web", tmp_path / "far-worker"
    release = make_release(project, web / "releases" / "demo" / "t1")
    token, secret = worker_services.token_create(name="far-gpu", created_by=admin_user)
    base = procs.web(web)
    procs.platform_worker(web)
    far_worker = procs.scoring_worker("far", queues="scoring,judge", platform_url=base, data=far, token=secret)
    n = len(release_rows("en-de"))
    with JudgeStubServer() as stub:
        options = {"limit": LIMIT, "judge": {"base_url": stub.base_url, "model": "stub-judge", "max_usd": 1}}
        tasks.start_scoring(release=release, metrics=["chrF++", "gemba-mqm"], options=options)
        jobs = wait_done(release, 4, procs)
        assert every(j.status == "done" for j in jobs), [(j.metric, j.error) for j in jobs]
        over_http = scores(release)
        # every part came over HTTP, from this worker, into the platform's storage; nothing beside the release
        assert PartUpload.objects.filter(worker=token).count() == 4
        assert every(j.output_path.startswith("worker_parts:") for j in jobs)
        assert not (Path(release.path) / "scores").exists()
        assert (far / "releases" / str(release.pk) / "en-de" / "test.parquet").read_bytes() == (
            Path(release.path) / "en-de" / "test.parquet"
        ).read_bytes()
        assert len(over_http) == 2 * LIMIT * 2 and sum(1 for k in over_http if k[0] == "chrF++") == 2 * LIMIT
        assert {k[0] for k in over_http} == {"chrF++", "gemba-mqm"}
        assert n >= LIMIT
        # the judge's calls and cost, which the worker wrote on its own disk, come from the uploaded parts
        # (read here as one more process of the web side: its storage)
        settings.STORAGES = {
            **settings.STORAGES,
            "worker_parts": {
                "BACKEND": "django.core.files.storage.FileSystemStorage",
                "OPTIONS": {"location": str(web / "worker-parts")},
            },
        }
        costs = {c["direction"]: c for c in selectors.judge_reports(release)["costs"]}
        assert set(costs) == {"en-de", "en-zh"} and every(c["metric"] == "gemba-mqm" for c in costs.values())
        assert every(c["calls"] == LIMIT and c["model"] == "stub-judge" for c in costs.values()), costs

        # the same jobs again, by a worker on the shared file system (today's path: nothing copied)
        procs.stop(far_worker)
        procs.scoring_worker("shared", queues="scoring,judge", platform_url=None, data=None)
        tasks.start_scoring(release=release, metrics=["chrF++", "gemba-mqm"], options=options, force=True)
        jobs = wait_done(release, 4, procs)
        assert every(j.status == "done" for j in jobs), [(j.metric, j.error) for j in jobs]
        assert every(j.output_path.startswith(str(Path(release.path) / "scores")) for j in jobs)
    assert PartUpload.objects.count() == 4  # the shared worker uploaded nothing
    assert scores(release) == over_http


class StallingProxy:
    """A TCP proxy in front of gunicorn that, once, forwards a part upload's headers and half its body and
    then holds the rest: the worker is mid-upload until the test kills it."""

    def __init__(self, target_port: int):
        self.target = target_port
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        self.stalled = threading.Event()
        self.armed = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()

    def _pipe(self, src, dst, upload_side: bool):
        seen, budget = b"", None
        try:
            while data := src.recv(65536):
                if upload_side and self.armed:
                    seen += data
                    if budget is None and b"PUT /api/workers/" in seen and b"\r\n\r\n" in seen:
                        head, _, body = seen.partition(b"\r\n\r\n")
                        length = int(
                            next(
                                h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")
                            )
                        )
                        budget = length // 2 - len(body)
                        dst.sendall(head + b"\r\n\r\n" + body[: length // 2])
                        data = b""
                    elif budget is not None:
                        data, budget = data[: max(0, budget)], budget - len(data)
                    else:
                        data = b"" if b"PUT /api/workers/" in seen else data
                        if data:
                            seen = b""
                    if budget is not None and budget <= 0:
                        if data:
                            dst.sendall(data)
                        self.armed = False
                        self.stalled.set()
                        while src.recv(65536):  # hold the rest until the worker dies
                            pass
                        break
                if data:
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.server.close()


def test_a_worker_killed_mid_upload_loses_nothing_and_the_redelivered_task_completes(
    procs, project, languages, admin_user, tmp_path
):
    web, far = tmp_path / "web", tmp_path / "far-worker"
    release = make_release(project, web / "releases" / "demo" / "t1")
    _, secret = worker_services.token_create(name="flaky-node", created_by=admin_user)
    base = procs.web(web)
    procs.platform_worker(web)
    proxy = StallingProxy(int(base.rsplit(":", 1)[1]))
    # the killed worker's task comes back after 5 s (not 6 h), at Redis' next sweep of unacknowledged tasks:
    # every second with this app (its default period is 100 s)
    fast = {"env": {"CELERY_VISIBILITY_TIMEOUT": "5"}, "app": "tests.support.scoring_worker_app"}
    try:
        first = procs.scoring_worker(
            "killed", queues="scoring", platform_url=f"http://127.0.0.1:{proxy.port}", data=far, token=secret, **fast
        )
        [job] = tasks.start_scoring(release=release, metrics=["chrF++"], directions=["en-de"])
        assert proxy.stalled.wait(120), procs.tail()
        os.killpg(first.pid, signal.SIGKILL)  # mid-upload: half the part sent
        first.wait(30)
        deadline = time.monotonic() + 30  # gunicorn reads the cut body to its end, then the view cleans up
        while list((web / "tmp").iterdir()) and time.monotonic() < deadline:
            time.sleep(0.2)
        job.refresh_from_db()
        assert job.status == "pending" and not PartUpload.objects.exists()
        assert not list((web / "worker-parts").rglob("*.parquet")) and not list((web / "tmp").iterdir())
        part = far / "scores" / str(release.pk) / "parts" / "chrfpp" / "en-de.parquet"
        assert part.is_file()  # the worker's own copy survives it
        # the message goes back on the queue; a new worker with the same data directory finishes the task
        # without scoring again (its part is there) and uploads it in full
        before = part.stat().st_mtime_ns
        procs.scoring_worker("retry", queues="scoring", platform_url=base, data=far, token=secret, **fast)
        [job] = wait_done(release, 1, procs, timeout=180)
        assert job.status == "done", job.error
        assert part.stat().st_mtime_ns == before
        [upload] = PartUpload.objects.all()
        assert upload.worker.name == "flaky-node" and upload.size == part.stat().st_size
        assert MetricScore.objects.filter(release=release, metric="chrF++").count() == len(release_rows("en-de"))
    finally:
        proxy.close()
