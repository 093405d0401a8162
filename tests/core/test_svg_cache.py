"""Plots kept as their SVG, keyed by the digest of what they were drawn from (``core.svg_cache``)."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from core.svg_cache import cached_svg


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()


def test_the_same_inputs_are_drawn_once_and_other_inputs_again():
    drawn = []

    def draw(title, rows):
        drawn.append((title, rows))
        return f"<svg><text>{title} {len(rows)}</text></svg>"

    rows = [{"direction": "en-de", "levels": [1.0, 0.5]}]
    assert cached_svg("t", draw, "chrF++", rows) == "<svg><text>chrF++ 1</text></svg>"
    assert (
        cached_svg("t", draw, "chrF++", [dict(r) for r in rows]) == "<svg><text>chrF++ 1</text></svg>"
    )  # equal, not identical
    assert len(drawn) == 1
    assert (
        cached_svg("t", draw, "chrF++", rows + [{"direction": "en-zh", "levels": [0.9]}])
        == "<svg><text>chrF++ 2</text></svg>"
    )
    assert cached_svg("t", draw, "TER", rows) == "<svg><text>TER 1</text></svg>"
    assert cached_svg("other", draw, "chrF++", rows) == "<svg><text>chrF++ 1</text></svg>"  # another plot: its own key
    assert len(drawn) == 4


@pytest.mark.django_db
def test_a_plot_view_serves_the_kept_svg(client, admin_user, project, languages):
    from exports.models import MetricScore, Release
    from exports.scores import selectors
    from exports.scores.services import scores_summarize

    release = Release.objects.create(project=project, version="1.0.0", status=Release.Status.READY)
    MetricScore.objects.bulk_create(
        MetricScore(
            release=release,
            metric="chrF++",
            direction=languages["en-de"],
            triplet_id=f"t{k}{i}",
            level=k,
            score=80.0 - 8 * k + i,
        )
        for k in range(3)
        for i in range(2)
    )
    scores_summarize(release=release)
    client.force_login(admin_user)
    first = client.get(f"/scores/{release.pk}/trend.svg", {"metric": "chrF++"}).content.decode()
    assert "chrF++ by quality level" in first

    def must_not_draw(*inputs):
        raise AssertionError("drawn again")

    from exports.scores import plots

    must_not_draw.__module__ = plots.score_trend.__module__  # it stands in for the view's drawing code

    [table] = selectors.score_table(release)  # what the view draws from: its SVG is the kept one
    assert (
        cached_svg("score-trend", must_not_draw, table["metric"], table["better"], table["levels"], table["rows"])
        == first
    )
    assert client.get(f"/scores/{release.pk}/trend.svg", {"metric": "chrF++"}).content.decode() == first


def test_a_change_to_the_drawing_code_draws_again(tmp_path, monkeypatch):
    """A deploy that changes how a plot looks must not serve the old drawing from the cache."""
    import importlib

    from core.svg_cache import code_version

    module = tmp_path / "plot_under_test.py"
    module.write_text("def draw(n):\n    return f\"<svg><circle r='{n}'/></svg>\"\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plots = importlib.import_module("plot_under_test")
    assert cached_svg("c", plots.draw, 3) == "<svg><circle r='3'/></svg>"
    module.write_text("def draw(n):\n    return f\"<svg><rect width='{n}'/></svg>\"\n")
    plots = importlib.reload(plots)
    assert cached_svg("c", plots.draw, 3) == "<svg><circle r='3'/></svg>"  # the same process: the code it loaded
    code_version.cache_clear()  # what a new process (the deploy) starts with
    assert cached_svg("c", plots.draw, 3) == "<svg><rect width='3'/></svg>"
