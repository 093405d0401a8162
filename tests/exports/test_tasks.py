"""Task plumbing: which push failures are retried; the build task runs a recorded build, idempotently."""
from __future__ import annotations

import httpx
import pytest
from huggingface_hub.errors import HfHubHTTPError

from exports.models import BenchmarkBuild
from exports.benchmark.services import ReleaseError
from exports.benchmark.tasks import build_benchmark_task, is_transient


def _http_error(status: int) -> HfHubHTTPError:
    request = httpx.Request("POST", "http://127.0.0.1/api/datasets/a/b/commit/main")
    return HfHubHTTPError(f"{status}", response=httpx.Response(status, request=request))


def test_only_network_faults_and_server_errors_are_retried():
    assert is_transient(httpx.ConnectError("refused"))
    assert is_transient(_http_error(503))
    assert not is_transient(_http_error(400))
    assert not is_transient(_http_error(401))
    assert not is_transient(ReleaseError("HF_TOKEN is not set in the environment"))


@pytest.mark.django_db
def test_build_task_runs_a_recorded_build_and_is_idempotent(project):
    build = BenchmarkBuild.objects.create(project=project)
    first = build_benchmark_task.delay(build.pk).get()
    assert first["status"] == "done"
    build.refresh_from_db()
    assert build.status == "done" and build.total_segments == 0 and build.counts == {}
    # running the same build again changes nothing and still ends done
    assert build_benchmark_task.delay(build.pk).get()["status"] == "done"
