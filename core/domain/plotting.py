"""Server-side plots as SVG text (matplotlib, Agg). No Django import.

Views serve the SVG as ``image/svg+xml`` for ``<img>`` tags, so labels that come from data (language codes,
user names, metric names) are never interpreted as HTML by the page; matplotlib XML-escapes them anyway.
"""

from __future__ import annotations

import io
from functools import cache
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@cache
def pyplot():
    """matplotlib's pyplot, set up on first use: importing it costs ~0.6 s, which every process that
    imports the URLconf (each management command's system checks, each web and Celery worker) would pay
    at start-up even when it never draws."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "xqmeval"  # stable element ids: the same figures give the same SVG
    plt.rcParams["svg.fonttype"] = "none"  # text stays text (searchable, smaller)
    plt.rcParams["figure.constrained_layout.use"] = True  # titles and suptitles never overlap
    # Labels come from data (user names, error types): "$x_$" must be shown as typed, not parsed as mathtext
    # (which raises on malformed input and renders well-formed input as a formula). No plot here uses mathtext.
    plt.rcParams["text.parse_math"] = False
    return plt


def subplots(*args, **kwargs):
    return pyplot().subplots(*args, **kwargs)


NO_DATA = "no data yet"


def svg(fig: Figure, title: str, desc: str = "") -> str:
    """The figure as SVG text, with ``title`` (and ``desc``) as the document's accessible name and
    description: what a screen reader or a browser tab says when the SVG is opened on its own. A figure
    none of whose axes holds data would draw a meaningless axis (matplotlib's default −0.04…0.04): it
    becomes the empty state instead, under the same title."""
    plt = pyplot()
    shown = [ax for ax in fig.axes if ax.axison]
    if shown and not any(ax.has_data() for ax in shown):
        plt.close(fig)
        return empty(NO_DATA, title)
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return _named(buffer.getvalue(), title, desc)


def empty(message: str, title: str) -> str:
    """A small figure that keeps the plot's title and says why there is nothing to plot (and no axis)."""
    fig, ax = subplots(figsize=(5, 1.4))
    ax.axis("off")
    ax.text(0.5, 0.85, title, ha="center", va="center", fontsize=11)  # drawn, then the reason below it
    ax.text(0.5, 0.3, message, ha="center", va="center", fontsize=10, color="#666")
    return svg(fig, title, message)


def _named(document: str, title: str, desc: str) -> str:
    """``<title>`` and ``<desc>`` as the root's first children, and the root labelled by them (SVG's
    accessible name and description; matplotlib writes neither)."""
    start = document.index("<svg")
    end = document.index(">", start)
    label = 'role="img" aria-labelledby="plot-title"' + (' aria-describedby="plot-desc"' if desc else "")
    children = f'\n <title id="plot-title">{escape(title)}</title>' + (
        f'\n <desc id="plot-desc">{escape(desc)}</desc>' if desc else ""
    )
    return f"{document[:end]} {label}>{children}{document[end + 1 :]}"
