"""Task plumbing: which push failures are retried; the build task runs a recorded build, idempotently."""
from __future__ import annotations

import httpx
import pytest
from huggingface_hub.errors import HfHubHTTPError

from core.models import GoldSegment
from exports.benchmark.tasks import build_benchmark_task
from exports.models import BenchmarkBuild, PseudoTranslation
from exports.release.services import ReleaseError
from exports.release.tasks import is_transient


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
def test_build_task_runs_a_recorded_build_and_is_idempotent(seeded):
    """On a project with a pool to merge, so that a second run that rewrote anything would show."""
    build = BenchmarkBuild.objects.create(project=seeded)
    first = build_benchmark_task.delay(build.pk).get()
    assert first["status"] == "done" and first["pseudo_created"] > 0
    build.refresh_from_db()
    segments = GoldSegment.objects.filter(project=seeded).count()
    assert build.status == "done" and build.total_segments == segments and build.rebuilt_segments == segments
    assert set(build.counts) == {"en-de", "en-zh"}
    rows = set(PseudoTranslation.objects.filter(segment__project=seeded).values_list("pk", "key", "text"))
    assert len(rows) == first["pseudo_created"]
    # running the same build again changes nothing and still ends done
    again = build_benchmark_task.delay(build.pk).get()
    assert again == {"build": build.pk, "status": "done", "pseudo_created": 0}
    build.refresh_from_db()
    assert build.status == "done" and build.rebuilt_segments == 0
    assert set(PseudoTranslation.objects.filter(segment__project=seeded).values_list("pk", "key", "text")) == rows
