"""core.domain.plotting: a figure with nothing on its axes becomes the empty state, never a −0.04…0.04 axis."""

import os
import re
import subprocess
import sys
from pathlib import Path

from core.domain.plotting import NO_DATA, empty, pyplot, svg

plt = pyplot()


def texts(document: str) -> list[str]:
    return re.findall(r"<text\b[^>]*>([^<]*)</text>", document)


def test_a_figure_without_data_is_drawn_as_the_empty_state():
    fig, ax = plt.subplots()
    ax.set_xlabel("quality level k")
    assert texts(svg(fig, "Scores by level")) == ["Scores by level", NO_DATA]
    fig, (left, right) = plt.subplots(1, 2)
    right.plot([0, 1], [2, 3])
    document = svg(fig, "Scores by level")
    assert NO_DATA not in texts(document) and "3.0" in texts(document)  # one axis with data: drawn as it is


def test_the_empty_state_has_no_axis_and_keeps_the_title():
    assert texts(empty("nothing built yet", "Counts")) == ["Counts", "nothing built yet"]


def test_every_plot_is_named_by_its_title_and_described():
    """The SVG's root is an image labelled by its <title> and described by its <desc>, escaped."""
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 2])
    document = svg(fig, "Δ <by> level", "one line per direction")
    root = re.search(r"<svg\b[^>]*>", document).group()
    assert 'role="img"' in root and 'aria-labelledby="plot-title"' in root and 'aria-describedby="plot-desc"' in root
    after_root = document[document.index(root) + len(root) :].lstrip()
    assert after_root.startswith('<title id="plot-title">Δ &lt;by&gt; level</title>')
    assert '<desc id="plot-desc">one line per direction</desc>' in document
    empty_one = empty("no data yet", "Counts")
    assert (
        '<title id="plot-title">Counts</title>' in empty_one and '<desc id="plot-desc">no data yet</desc>' in empty_one
    )


def test_counts_plot_keeps_coinciding_directions_visible_and_says_they_coincide():
    """The demo's directions have level 0 only, so their lines lie on top of each other: each has its own
    marker, and the legend names every direction and says which have the same counts."""
    from exports.benchmark.plots import level_counts

    def row(at_zero: int) -> dict:
        return {"total": at_zero, "levels": {str(k): {"total": at_zero if k == 0 else 0} for k in range(5)}}

    document = level_counts({"en-zh": row(3), "en-ar": row(3), "en-de": row(3), "en-ja": row(5)})
    labels = texts(document)
    assert {"en-ar", "en-de", "en-ja", "en-zh"} <= set(labels)
    assert "en-ar, en-de, en-zh: the same counts" in labels  # en-ja differs at level 0
    # markers are <defs> paths placed with <use>; the data's are filled, the ticks' marks are strokes only
    shapes = dict(re.findall(r'<path id="(m[0-9a-f]+)" d="([^"]*)"', document))
    data_markers = {
        shapes[ref]
        for ref, style in re.findall(r'<use xlink:href="#(m[0-9a-f]+)"[^>]*style="([^"]*)"', document)
        if "fill: #" in style
    }
    assert len(data_markers) == 4  # one marker per direction, none the same shape and size as another's


def test_nothing_heavy_is_imported_with_the_urlconf():
    """Every management command (system checks), web and Celery worker imports the URLconf at start-up:
    matplotlib and scipy load on first use instead (together ~2 s of every command's start)."""
    code = (
        "import os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'xqmeval.settings'); import django; django.setup(); "
        "import xqmeval.urls; print(sorted(m for m in ('matplotlib', 'scipy.stats') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env={**os.environ}, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr[-2000:]
