"""The score trend plot (mean score by level, one line per direction) as SVG (see core.domain.plotting).
No Django import."""

from __future__ import annotations

from collections.abc import Sequence

from core.domain.plotting import empty, subplots, svg


def score_trend(metric: str, better: str, levels: Sequence[int], rows: Sequence[dict]) -> str:
    """A metric's mean score against the level k, one line per direction; a good metric falls (or rises,
    for lower-is-better metrics) monotonically with k, at the same height in every language."""
    rows = [r for r in rows if any(v is not None for v in r["levels"])]
    if not rows or not levels:
        return empty(no_scores(metric), trend_title(metric))
    fig, ax = subplots(figsize=(7, 3.4))
    for row in rows:
        points = [(k, v) for k, v in zip(levels, row["levels"]) if v is not None]
        style = {"color": "black", "lw": 2.5, "ls": "--"} if row["direction"] == "mean of directions" else {"lw": 1.3}
        ax.plot([k for k, _ in points], [v for _, v in points], marker="o", label=row["direction"], **style)
    ax.set_xlabel("quality level k (major errors)")
    ax.set_ylabel(f"mean {metric} ({better} is better)")
    ax.set_title(trend_title(metric))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=3)
    return svg(fig, trend_title(metric))


def trend_title(metric: str) -> str:
    return f"{metric or 'A metric'} by quality level"


def no_scores(metric: str) -> str:
    # no metric: the URL named none, or one the release does not know (?metric=chrF++ names one)
    return f"no {metric} scores yet" if metric else "no scores of a metric this release knows (?metric=NAME)"
