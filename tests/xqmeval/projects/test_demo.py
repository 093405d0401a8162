"""The demo set-up's XQ-MEval step (on one language of the shared release): what its pages then show."""

from __future__ import annotations

import csv
import shutil

import pytest
from django.test import Client
from django.urls import reverse

from exports.models import BenchmarkBuild
from xqmeval.demo.setup import import_release_xqmeval

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def indonesian(tmp_path, shared_data):
    """The shared release cut down to en-id (its candidate files and decisions)."""
    folder = tmp_path / "xqmeval"
    (folder / "candidates").mkdir(parents=True)
    for path in (shared_data / "candidates").glob("en-id-*.parquet"):
        shutil.copy(path, folder / "candidates" / path.name)
    with (
        open(shared_data / "decisions.csv", encoding="utf-8") as src,
        open(folder / "decisions.csv", "w", encoding="utf-8", newline="") as dst,
    ):
        rows = csv.reader(src)
        out = csv.writer(dst, lineterminator="\n")
        out.writerow(next(rows))
        out.writerows(row for row in rows if row[0] == "id")
    return folder


def test_demo_benchmark_is_a_recorded_build_the_benchmark_page_shows(indonesian, admin_user, settings, tmp_path):
    settings.RELEASES_DIR = tmp_path / "releases"
    lines = []
    import_release_xqmeval(None, lines.append, shared=indonesian)
    build = BenchmarkBuild.objects.get(project__name="xqmeval")
    assert build.status == BenchmarkBuild.Status.DONE and build.pseudo_created > 0, lines
    client = Client()
    client.force_login(admin_user)
    page = client.get(reverse("benchmarks:project", args=["xqmeval"])).content.decode()
    assert "Not built yet" not in page and f"Latest build {build.number}" in page
    import_release_xqmeval(None, lines.append, shared=indonesian)  # idempotent: no second build
    assert BenchmarkBuild.objects.filter(project__name="xqmeval").count() == 1
