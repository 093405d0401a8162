"""A build's or a release's direction that hits a transient database fault is retried on the worker, and
meanwhile says so: 'retrying' with the reason, the build running (not failed) unless another direction
failed for good."""

from __future__ import annotations

import re

import pytest

from exports.benchmark import services as build_services
from exports.models import BenchmarkBuild, PseudoTranslation, Release
from exports.release import services as release_services
from tests.support.db_faults import table_held, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def test_a_lock_timeout_shows_retrying_and_the_retry_merges_the_direction(seeded, worker_queue, lock_timeout):
    from celery.contrib.testing.worker import start_worker

    from exports.benchmark.tasks import build_direction_task
    from xqmeval.celery import app

    build = BenchmarkBuild.objects.create(project=seeded)
    build_services.build_begin(build=build)

    def entry() -> dict:
        return BenchmarkBuild.objects.get(pk=build.pk).directions["en-de"]

    # Another session holds the pseudo translations: the direction's merge cannot write them.
    with table_held("exports_pseudotranslation") as holder:
        with start_worker(
            app, pool="solo", perform_ping_check=False, queues=[worker_queue], loglevel="WARNING", shutdown_timeout=30
        ):
            build_direction_task.apply_async((build.pk, "en-de"), queue=worker_queue)
            # One read gives both the build and its direction. The backoff is fully jittered (a first countdown
            # of 0 s is possible), so the retrying seen first may be the second or third, and a second read may
            # already see the next one.
            shown = wait_until(
                lambda: (
                    (b := BenchmarkBuild.objects.get(pk=build.pk)).directions["en-de"]["status"] == "retrying" and b
                ),
                "the direction to say it is retrying",
            )
            retrying = shown.directions["en-de"]["error"]
            assert shown.status == "running" and shown.error == "" and "lock timeout" in retrying
            assert re.search(r"retrying in \d+ s \(retry [123] of 3\)$", retrying), retrying
            holder.rollback()  # the lock goes; the next retry (due within 8 s) merges the direction
            wait_until(lambda: entry()["status"] == "done", "the retried direction", timeout=60)
    assert PseudoTranslation.objects.filter(segment__direction__code="en-de").count() == entry()["pseudo_created"] > 0


def test_a_direction_that_failed_for_good_keeps_the_build_failed(seeded):
    build = BenchmarkBuild.objects.create(project=seeded)
    build_services.build_begin(build=build)
    BenchmarkBuild.objects.filter(pk=build.pk).update(
        status="failed",
        error="en-zh: ValueError: bad span",
        directions={
            "en-de": {"status": "failed", "error": "OperationalError: lock timeout"},
            "en-zh": {"status": "failed", "error": "ValueError: bad span"},
        },
    )
    build_services.build_retry_record(
        build=build, direction_code="en-de", reason="OperationalError: lock timeout — retrying in 1 s (retry 1 of 3)"
    )
    shown = BenchmarkBuild.objects.get(pk=build.pk)
    assert shown.directions["en-de"]["status"] == "retrying" and (shown.status, shown.error) == (
        "failed",
        "en-zh: ValueError: bad span",
    )


def test_a_release_direction_retry_is_recorded_the_same_way(seeded, settings, tmp_path):
    settings.RELEASES_DIR = tmp_path / "releases"
    build_services.build_run(project=seeded)
    job = release_services.release_begin(project=seeded, version="1.0.0")
    Release.objects.filter(pk=job.release_id).update(
        status="failed",
        error="en-de: OperationalError: lock timeout",
        directions={"en-de": {"status": "failed", "error": "OperationalError: lock timeout"}},
    )
    release_services.release_retry_record(
        job=job, direction_code="en-de", reason="OperationalError: lock timeout — retrying in 1 s (retry 1 of 3)"
    )
    shown = Release.objects.get(pk=job.release_id)
    assert (shown.status, shown.error) == ("building", "") and shown.directions["en-de"]["status"] == "retrying"
