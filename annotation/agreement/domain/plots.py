"""Agreement plots as SVG text, drawn server-side with matplotlib (Agg). No Django import.

Each function takes rows of a report table (``annotation.agreement.selectors.project_report``) and returns an SVG
document. The views serve them as ``image/svg+xml`` for ``<img>`` tags, so text inside (language codes,
error types, user names) is never interpreted as HTML by the page; matplotlib XML-escapes it anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.domain.plotting import empty as _empty
from core.domain.plotting import subplots
from core.domain.plotting import svg as _svg

RWG_TITLE = "rwg per item"
SCORE_TITLE = "Agreement vs mean score per task, language and dimension"
QUALITY_TITLE = "Annotator quality: accept rate and agreement with other reviewers"

DIMENSION_COLOURS = {
    "informativeness": "#1b9e77",
    "clarity": "#d95f02",
    "plausibility": "#7570b3",
    "faithfulness": "#e7298a",
}


def _bar_with_ci(ax, labels: Sequence[str], values, lows, highs, colour: str) -> None:
    xs = list(range(len(labels)))
    heights = [v if v is not None else 0.0 for v in values]
    ax.bar(xs, heights, color=colour, alpha=0.85)
    for x, v, lo, hi in zip(xs, values, lows, highs):
        if v is None:
            ax.text(x, 0.02, "undefined", rotation=90, ha="center", va="bottom", fontsize=7, color="#666")
        elif lo is not None and hi is not None:
            # A percentile bound can sit a rounding error (2e-16) beyond the estimate when every resample
            # gives the same value; matplotlib refuses negative error bars, so clip at 0.
            ax.errorbar([x], [v], yerr=[[max(0.0, v - lo)], [max(0.0, hi - v)]], color="black", capsize=3, lw=1)
    ax.set_xticks(xs, labels, rotation=45, ha="right", fontsize=8)


def agreement_by_group(rows: Sequence[dict], label: Callable[[dict], str], title: str) -> str:
    """Percent agreement and Krippendorff's α (nominal) with bootstrap intervals, one bar pair per group."""
    if not rows:
        return _empty("no units with decisions yet", title)
    if all(r[col] is None for r in rows for col in ("percent_agreement", "krippendorff_alpha")):
        return _empty("no data yet: no unit has decisions from two reviewers", title)
    labels = [label(r) for r in rows]
    fig, axes = subplots(1, 2, figsize=(max(6, 0.5 * len(rows) + 4), 3.4), sharey=False)
    for ax, (col, name, colour) in zip(
        axes,
        [
            ("percent_agreement", "percent agreement", "#4c78a8"),
            ("krippendorff_alpha", "Krippendorff's α (nominal)", "#f58518"),
        ],
    ):
        _bar_with_ci(
            ax,
            labels,
            [r[col] for r in rows],
            [r[f"{col}_low"] for r in rows],
            [r[f"{col}_high"] for r in rows],
            colour,
        )
        ax.set_title(name, fontsize=9)
        ax.set_ylim(min(0.0, *[r[f"{col}_low"] or 0.0 for r in rows]) - 0.05, 1.05)
        ax.axhline(0, color="#999", lw=0.6)
    fig.suptitle(title, fontsize=10)
    return _svg(fig, title)


def rwg_distribution(item_rows: Sequence[dict], dimensions: Sequence[str]) -> str:
    """Histogram of item-level rwg per dimension, and of the rwg(j) composite."""
    columns = [(f"{d}_rwg", d) for d in dimensions] + [("rwg_j_composite", "rwg(j) composite")]
    data = [[r[c] for r in item_rows if r.get(c) is not None] for c, _ in columns]
    if not any(data):
        return _empty("no item rated by two or more raters yet", RWG_TITLE)
    fig, axes = subplots(1, len(columns), figsize=(2.3 * len(columns), 2.6), sharey=True)
    bins = [i / 10 for i in range(11)]
    for ax, values, (_col, name) in zip(axes, data, columns):
        ax.hist(values, bins=bins, color=DIMENSION_COLOURS.get(name, "#555"), alpha=0.85)
        ax.set_title(f"{name} (n={len(values)})", fontsize=8)
        ax.set_xlim(0, 1)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("items", fontsize=8)
    fig.suptitle(RWG_TITLE, fontsize=10)
    return _svg(fig, RWG_TITLE)


TASK_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def agreement_vs_score(dimension_rows: Sequence[dict]) -> str:
    """Like OmniScore's Figure 3: one point per (task, language, dimension); mean Likert score on x, mean rwg
    on y; colour = dimension, marker = task, label = language."""
    rows = [r for r in dimension_rows if r["language"] != "all" and r["task"] != "all" and r["mean_rwg"] is not None]
    if not rows:
        return _empty("no item rated by two or more raters yet", SCORE_TITLE)
    tasks = sorted({r["task"] for r in rows})
    marker = {t: TASK_MARKERS[i % len(TASK_MARKERS)] for i, t in enumerate(tasks)}
    fig, ax = subplots(figsize=(6, 4.2))
    for r in rows:
        ax.scatter(
            [r["mean_score"]],
            [r["mean_rwg"]],
            color=DIMENSION_COLOURS.get(r["dimension"], "#555"),
            marker=marker[r["task"]],
            s=40,
            alpha=0.85,
        )
        ax.annotate(
            r["language"],
            (r["mean_score"], r["mean_rwg"]),
            fontsize=6,
            xytext=(3, 2),
            textcoords="offset points",
            color="#444",
        )
    xs, ys = [r["mean_score"] for r in rows], [r["mean_rwg"] for r in rows]
    ax.set_xlim(max(1.0, min(xs) - 0.3), min(5.0, max(xs) + 0.3))
    ax.set_ylim(max(0.0, min(ys) - 0.1), 1.02)
    ax.set_xlabel("mean Likert score")
    ax.set_ylabel("mean rwg")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, marker="o", ls="", label=d) for d, c in DIMENSION_COLOURS.items()]
    handles += [Line2D([], [], color="#555", marker=marker[t], ls="", label=t) for t in tasks]
    ax.legend(handles=handles, fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title(f"{SCORE_TITLE} (cf. OmniScore Fig. 3)", fontsize=9)
    return _svg(fig, SCORE_TITLE)


def annotator_quality(rows: Sequence[dict]) -> str:
    """Accept rate against same-language peers (left); agreement with other reviewers, red when flagged,
    with the gold score as a diamond where the annotator met gold items (right)."""
    if not rows:
        return _empty("no annotator decisions yet", QUALITY_TITLE)
    labels = [f"{r['annotator']} ({r['language']})" for r in rows]
    fig, (left, right) = subplots(1, 2, figsize=(max(7, 0.6 * len(rows) + 5), 3.6))
    xs = list(range(len(rows)))
    left.bar(
        [x - 0.2 for x in xs], [r["accept_rate"] or 0 for r in rows], width=0.4, label="annotator", color="#4c78a8"
    )
    left.bar(
        [x + 0.2 for x in xs],
        [r["peer_accept_rate"] or 0 for r in rows],
        width=0.4,
        label="same-language peers",
        color="#bbb",
    )
    left.set_xticks(xs, labels, rotation=45, ha="right", fontsize=7)
    left.set_ylim(0, 1.05)
    left.set_title("accept rate", fontsize=9)
    left.legend(fontsize=7, loc="lower right")
    right.bar(
        xs,
        [r["agreement_with_others"] or 0 for r in rows],
        color=["#e45756" if r["flags"] else "#4c78a8" for r in rows],
        label="agreement with others",
    )
    gold = [(x, r["gold_score"]) for x, r in zip(xs, rows) if r["gold_score"] is not None]
    if gold:
        right.scatter(
            [g[0] for g in gold], [g[1] for g in gold], marker="D", color="black", s=22, zorder=3, label="gold score"
        )
    right.set_xticks(xs, labels, rotation=45, ha="right", fontsize=7)
    right.set_ylim(0, 1.05)
    right.set_title("agreement with other reviewers (red: flagged)", fontsize=9)
    right.legend(fontsize=7, loc="lower right")
    fig.suptitle(QUALITY_TITLE, fontsize=10)
    return _svg(fig, QUALITY_TITLE)
