"""core.domain.plotting: a figure with nothing on its axes becomes the empty state, never a −0.04…0.04 axis."""
import re

import os
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
    assert texts(svg(fig)) == [NO_DATA]
    fig, (left, right) = plt.subplots(1, 2)
    right.plot([0, 1], [2, 3])
    document = svg(fig)
    assert NO_DATA not in texts(document) and "3.0" in texts(document)  # one axis with data: drawn as it is


def test_the_empty_state_has_no_axis():
    assert texts(empty("nothing built yet")) == ["nothing built yet"]


def test_nothing_heavy_is_imported_with_the_urlconf():
    """Every management command (system checks), web and Celery worker imports the URLconf at start-up:
    matplotlib and scipy load on first use instead (together ~2 s of every command's start)."""
    code = (
        "import os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'xqmeval.settings'); import django; django.setup(); "
        "import xqmeval.urls; print(sorted(m for m in ('matplotlib', 'scipy.stats') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env={**os.environ}, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr[-2000:]
