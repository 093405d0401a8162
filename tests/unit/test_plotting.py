"""core.domain.plotting: a figure with nothing on its axes becomes the empty state, never a −0.04…0.04 axis."""
import re

import matplotlib.pyplot as plt

from core.domain.plotting import NO_DATA, empty, svg


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
