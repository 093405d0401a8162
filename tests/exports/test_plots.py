"""The counts plot of the benchmark page and the score-trend plot of the scores page."""
import pytest

from core.models import Direction, Project
from exports.benchmark.services import build_benchmark
from exports.models import MetricScore, Release
from tests.exports.conftest import import_languages

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]


@pytest.fixture
def built(shared_data):
    import_languages("xq", shared_data, ["de", "zh"])
    project = Project.objects.get(name="xq")
    build_benchmark(project)
    return project


def test_counts_plot_shows_the_visible_directions_only(client, built, admin_user, annotator_de):
    client.force_login(admin_user)
    response = client.get("/benchmarks/xq/counts.svg")
    assert response["Content-Type"] == "image/svg+xml"
    svg = response.content.decode()
    assert svg.startswith("<?xml") and "en-de" in svg and "en-zh" in svg and "Pseudo translations per level" in svg
    client.force_login(annotator_de)
    svg = client.get("/benchmarks/xq/counts.svg").content.decode()
    assert "en-de" in svg and "en-zh" not in svg
    page = client.get("/benchmarks/xq/").content.decode()
    assert "/benchmarks/xq/counts.svg" in page


def test_counts_plot_needs_login_and_a_language_of_the_project(client, built, annotator_zh):
    assert client.get("/benchmarks/xq/counts.svg").status_code == 302
    from core.services import create_user

    client.force_login(create_user("ar_only", "ar-pass-123", languages=["ar"]))
    assert client.get("/benchmarks/xq/counts.svg").status_code in (403, 404)


@pytest.fixture
def scored(project, languages):
    release = Release.objects.create(project=project, version="1.0.0", status=Release.Status.READY)
    for code, offset in (("en-de", 80.0), ("en-zh", 60.0)):
        direction = Direction.objects.get(code=code)
        MetricScore.objects.bulk_create(
            MetricScore(release=release, metric="chrF++", direction=direction, triplet_id=f"{code}/{k}/{i}", level=k, score=offset - 8 * k + i)
            for k in range(6)
            for i in range(3)
        )
    return release


def test_score_trend_plot_per_metric_and_permissions(client, scored, admin_user, annotator_de):
    client.force_login(admin_user)
    response = client.get(f"/scores/{scored.pk}/trend.svg", {"metric": "chrF++"})
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    svg = response.content.decode()
    assert "chrF++ by quality level" in svg and "en-de" in svg and "en-zh" in svg and "mean of directions" in svg
    assert client.get(f"/scores/{scored.pk}/trend.svg", {"metric": "nope"}).status_code == 404
    assert f"/scores/{scored.pk}/trend.svg?metric=chrF%2B%2B" in client.get(f"/scores/{scored.pk}/").content.decode()
    client.force_login(annotator_de)
    svg = client.get(f"/scores/{scored.pk}/trend.svg", {"metric": "chrF++"}).content.decode()
    assert "en-de" in svg and "en-zh" not in svg
