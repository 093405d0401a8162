"""The counts plot of the benchmark page and the score-trend plot of the scores page."""

import pytest

from core.models import Direction, Project
from exports.benchmark.services import build_run
from exports.models import MetricScore, Release
from exports.scores.services import scores_summarize
from tests.exports.conftest import import_languages

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]


def import_and_build(shared_data) -> int:
    import_languages("xq", shared_data, ["de", "zh"])
    project = Project.objects.get(name="xq")
    build_run(project=project)
    return project.pk


@pytest.fixture(scope="module")
def built_once(module_data, shared_data):
    """Imported and built once for the module's tests of the counts plot (each rolls its changes back)."""
    return module_data(lambda: import_and_build(shared_data))


@pytest.fixture
def built(db, built_once):
    return Project.objects.get(pk=built_once)


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
    from core.services import user_create

    client.force_login(user_create(username="ar_only", password="ar-pass-123", languages=["ar"]))
    assert client.get("/benchmarks/xq/counts.svg").status_code in (403, 404)


@pytest.fixture
def scored(project, languages):
    release = Release.objects.create(project=project, version="1.0.0", status=Release.Status.READY)
    for code, offset in (("en-de", 80.0), ("en-zh", 60.0)):
        direction = Direction.objects.get(code=code)
        MetricScore.objects.bulk_create(
            MetricScore(
                release=release,
                metric="chrF++",
                direction=direction,
                triplet_id=f"{code}/{k}/{i}",
                level=k,
                score=offset - 8 * k + i,
            )
            for k in range(6)
            for i in range(3)
        )
    scores_summarize(release=release)  # as the ingest does
    return release


def test_score_trend_plot_per_metric_and_permissions(client, scored, admin_user, annotator_de):
    client.force_login(admin_user)
    response = client.get(f"/scores/{scored.pk}/trend.svg", {"metric": "chrF++"})
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    svg = response.content.decode()
    assert "chrF++ by quality level" in svg and "en-de" in svg and "en-zh" in svg and "mean of directions" in svg
    for query in ({"metric": "nope"}, {}):  # an existing release answers, saying why there is nothing (#46.3)
        unknown = client.get(f"/scores/{scored.pk}/trend.svg", query)
        assert unknown.status_code == 200 and "no scores of a metric this release knows" in unknown.content.decode()
    assert f"/scores/{scored.pk}/trend.svg?metric=chrF%2B%2B" in client.get(f"/scores/{scored.pk}/").content.decode()
    client.force_login(annotator_de)
    svg = client.get(f"/scores/{scored.pk}/trend.svg", {"metric": "chrF++"}).content.decode()
    assert "en-de" in svg and "en-zh" not in svg


# ---- empty charts: a message, never an axis (issue 16 item 5) ---------------------------------------------


def svg_texts(svg: str) -> list[str]:
    """The text elements of an SVG drawn with ``svg.fonttype = none`` (tick labels, titles, messages)."""
    import html
    import re

    return [html.unescape(t) for t in re.findall(r"<text\b[^>]*>([^<]*)</text>", svg)]


def test_counts_plot_of_a_benchmark_with_nothing_built_says_so_instead_of_an_axis(client, project, admin_user):
    from core.models import GoldSegment

    client.force_login(admin_user)
    for step in ("no gold pair", "gold pairs, nothing merged"):
        if step == "gold pairs, nothing merged":
            GoldSegment.objects.create(
                project=project,
                direction=project.directions.get(code="en-de"),
                external_id="1",
                source="s",
                reference="a b c",
            )
        response = client.get("/benchmarks/demo/counts.svg")
        assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
        texts = svg_texts(response.content.decode())
        assert texts == [
            "Pseudo translations per level",
            "nothing built yet: build the benchmark to see pseudo translations per level",
        ], step
        assert '<title id="plot-title">Pseudo translations per level</title>' in response.content.decode()


def test_score_trend_of_a_metric_without_scores_says_so_instead_of_an_axis(client, project, admin_user):
    release = Release.objects.create(project=project, version="1.0.0", status=Release.Status.READY)
    client.force_login(admin_user)
    response = client.get(f"/scores/{release.pk}/trend.svg", {"metric": "chrF++"})
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert svg_texts(response.content.decode()) == ["chrF++ by quality level", "no chrF++ scores yet"]
    assert '<title id="plot-title">chrF++ by quality level</title>' in response.content.decode()
    # scores without a level (nothing to put on the x axis): the same
    MetricScore.objects.create(
        release=release,
        metric="chrF++",
        direction=Direction.objects.get(code="en-de"),
        triplet_id="t",
        level=None,
        score=50.0,
    )
    scores_summarize(release=release)
    assert svg_texts(client.get(f"/scores/{release.pk}/trend.svg", {"metric": "chrF++"}).content.decode()) == [
        "chrF++ by quality level",
        "no chrF++ scores yet",
    ]
    assert svg_texts(client.get(f"/scores/{release.pk}/trend.svg", {"metric": "nope"}).content.decode()) == [
        "A metric by quality level",
        "no scores of a metric this release knows (?metric=NAME)",
    ]
