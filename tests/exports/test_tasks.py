"""Task plumbing: which push failures are retried; the build task runs a recorded build, idempotently."""

from __future__ import annotations

import io

import httpx
import pytest
from django.core.management import call_command
from huggingface_hub.errors import HfHubHTTPError

from core.models import GoldSegment
from exports.benchmark import services
from exports.benchmark.tasks import build_benchmark_task
from exports.models import BenchmarkBuild, PseudoTranslation
from exports.release.services import ReleaseError
from scoring.faults import is_transient


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


@pytest.mark.django_db
def test_build_task_spreads_directions_and_resumes_an_interrupted_build(seeded):
    """One task per direction: an interrupted build (one direction merged, then the worker gone) run again
    merges only the direction left, and ends with the same rows as a build in one go."""
    build = BenchmarkBuild.objects.create(project=seeded)
    assert services.build_begin(build=build) == ["en-de", "en-zh"]
    first = services.build_direction_run(build=build, direction_code="en-de")
    build.refresh_from_db()
    assert (
        build.status == "running"
        and build.directions["en-de"] == first
        and build.directions["en-zh"]["status"] == "pending"
    )
    de_rows = set(PseudoTranslation.objects.filter(segment__direction__code="en-de").values_list("pk", "key", "text"))
    assert first["rebuilt"] == 2 and len(de_rows) == first["pseudo_created"] > 0
    assert not PseudoTranslation.objects.filter(segment__direction__code="en-zh").exists()

    out = build_benchmark_task.delay(build.pk).get()
    build.refresh_from_db()
    assert out["status"] == "done" and build.status == "done"
    assert build.directions["en-de"] == first  # not merged again
    zh = build.directions["en-zh"]
    assert zh["status"] == "done" and zh["rebuilt"] == 2
    assert (
        build.pseudo_created
        == first["pseudo_created"] + zh["pseudo_created"]
        == PseudoTranslation.objects.filter(segment__project=seeded).count()
    )
    assert build.done_segments == build.total_segments == 4 and build.rebuilt_segments == 4
    assert build.excluded == first["excluded"] + zh["excluded"] == 2 and build.transplanted == 1
    assert (
        set(PseudoTranslation.objects.filter(segment__direction__code="en-de").values_list("pk", "key", "text"))
        == de_rows
    )
    assert set(build.counts) == {"en-de", "en-zh"}

    # the same rows as one build of everything from scratch
    ours = sorted(PseudoTranslation.objects.filter(segment__project=seeded).values_list("segment_id", "key", "text"))
    again = BenchmarkBuild.objects.create(project=seeded)
    build_benchmark_task.delay(again.pk, True).get()
    again.refresh_from_db()
    assert again.status == "done" and again.rebuilt_segments == 4
    assert (
        sorted(PseudoTranslation.objects.filter(segment__project=seeded).values_list("segment_id", "key", "text"))
        == ours
    )


@pytest.mark.django_db
def test_build_task_of_a_project_without_gold_pairs_ends_done(project):
    build = BenchmarkBuild.objects.create(project=project)
    assert build_benchmark_task.delay(build.pk).get() == {"build": build.pk, "status": "done", "pseudo_created": 0}
    build.refresh_from_db()
    assert build.directions == {} and build.status == "done" and build.finished_at is not None


@pytest.mark.django_db
def test_build_command_prints_a_line_per_direction(seeded):
    out = io.StringIO()
    call_command("build_benchmark", seeded.name, verbosity=2, stdout=out, stderr=io.StringIO())
    build = BenchmarkBuild.objects.get(project=seeded)
    assert build.status == "done"
    for code, entry in build.directions.items():
        assert (
            f"{code}: {entry['gold_pairs']} gold pairs, {entry['rebuilt']} rebuilt, {entry['pseudo_created']} pseudo translations"
            in out.getvalue()
        )


@pytest.mark.django_db
def test_build_command_resumes_the_latest_unfinished_build(seeded):
    build = BenchmarkBuild.objects.create(project=seeded, number=1)
    services.build_begin(build=build)
    first = services.build_direction_run(build=build, direction_code="en-de")  # then the process is gone
    out = io.StringIO()
    call_command("build_benchmark", seeded.name, "--resume", verbosity=2, stdout=out, stderr=io.StringIO())
    assert "resuming build 1: 1 direction(s) done, 1 left" in out.getvalue()
    assert "en-zh: 2 gold pairs, 2 rebuilt" in out.getvalue() and "en-de: " not in out.getvalue()
    build.refresh_from_db()
    assert BenchmarkBuild.objects.filter(project=seeded).count() == 1
    assert build.status == "done" and build.directions["en-de"] == first and build.rebuilt_segments == 4
    # a finished build is not resumed: --resume starts a new one
    call_command("build_benchmark", seeded.name, "--resume", verbosity=0, stdout=io.StringIO())
    assert BenchmarkBuild.objects.filter(project=seeded).count() == 2


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_failing_direction_fails_the_build_and_the_rerun_merges_only_it(seeded):
    """A direction whose writes the database refuses (a trigger on PostgreSQL, no code of ours replaced):
    the build fails naming it, the other direction stays done, and the same build run again merges only
    the failed one."""
    from django.db import connection

    from tests.conftest import need

    need(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL=postgres://…)")
    with connection.cursor() as cur:
        cur.execute(
            """CREATE FUNCTION refuse_en_zh() RETURNS trigger AS $$ BEGIN
                 IF EXISTS (SELECT 1 FROM core_goldsegment g JOIN core_direction d ON d.id = g.direction_id
                            WHERE g.id = NEW.segment_id AND d.code = 'en-zh') THEN RAISE EXCEPTION 'refused for en-zh'; END IF;
                 RETURN NEW; END $$ LANGUAGE plpgsql"""
        )
        cur.execute(
            "CREATE TRIGGER refuse_en_zh BEFORE INSERT ON exports_pseudotranslation FOR EACH ROW EXECUTE FUNCTION refuse_en_zh()"
        )
    build = BenchmarkBuild.objects.create(project=seeded)
    with pytest.raises(Exception, match="refused for en-zh"):
        build_benchmark_task.delay(build.pk)
    build.refresh_from_db()
    assert build.status == "failed" and build.error.startswith("en-zh: ") and "refused for en-zh" in build.error
    assert build.directions["en-de"]["status"] == "done" and build.directions["en-zh"]["status"] == "failed"
    assert build.done_segments == 2 and not PseudoTranslation.objects.filter(segment__direction__code="en-zh").exists()
    de = build.directions["en-de"]
    de_rows = set(PseudoTranslation.objects.filter(segment__direction__code="en-de").values_list("pk", "key", "text"))

    with connection.cursor() as cur:
        cur.execute("DROP TRIGGER refuse_en_zh ON exports_pseudotranslation")
    assert build_benchmark_task.delay(build.pk).get()["status"] == "done"
    build.refresh_from_db()
    assert build.status == "done" and build.error == "" and build.directions["en-de"] == de
    assert build.directions["en-zh"]["status"] == "done" and build.directions["en-zh"]["rebuilt"] == 2
    assert (
        set(PseudoTranslation.objects.filter(segment__direction__code="en-de").values_list("pk", "key", "text"))
        == de_rows
    )
    assert (
        build.done_segments == 4
        and build.pseudo_created == PseudoTranslation.objects.filter(segment__project=seeded).count()
    )
