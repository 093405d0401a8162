"""The benchmark counts plot as SVG (see core.domain.plotting). No Django import."""

from __future__ import annotations

from core.domain.plotting import empty, subplots, svg

TITLE = "Pseudo translations per level"
NOTHING_BUILT = "nothing built yet: build the benchmark to see pseudo translations per level"
# one marker shape per direction, so a line drawn over another (the same counts, e.g. zeros at the top levels) shows
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")


def level_counts(counts: dict) -> str:
    """Pseudo translations per quality level k, one line per direction (XQ-MEval Table 4 as a picture:
    counts grow then shrink with k). ``counts`` is ``merging.counts_table``'s output."""
    if not any(row["total"] for row in counts.values()):  # no direction, or nothing merged yet
        return empty(NOTHING_BUILT, TITLE)
    series = {}
    for direction_code, row in sorted(counts.items()):
        levels = sorted(row["levels"], key=int)
        series[direction_code] = ([int(k) for k in levels], [row["levels"][k]["total"] for k in levels])
    fig, ax = subplots(figsize=(7, 3.4))
    last = max(len(series) - 1, 1)
    for i, (direction_code, (levels, totals)) in enumerate(series.items()):
        # each line is drawn over the ones before: thinner, with a smaller marker of its own shape, so where
        # lines coincide every direction stays visible
        ax.plot(
            levels,
            totals,
            marker=MARKERS[i % len(MARKERS)],
            markersize=10 - 5 * i / last,
            lw=3 - 1.6 * i / last,
            label=direction_code,
        )
    same = {}
    for direction_code, points in series.items():
        same.setdefault((tuple(points[0]), tuple(points[1])), []).append(direction_code)
    coinciding = [", ".join(names) for names in same.values() if len(names) > 1]
    ax.set_xticks(sorted({k for levels, _ in series.values() for k in levels}))  # levels are whole numbers
    ax.set_xlabel("quality level k (major errors)")
    ax.set_ylabel("pseudo translations")
    ax.set_title(TITLE)
    ax.grid(alpha=0.3)
    # the legend says which lines lie on top of each other (the demo's directions all have level 0 only)
    note = "; ".join(f"{names}: the same counts" for names in coinciding) or None
    ax.legend(fontsize=8, ncol=3, title=note, title_fontsize=8)
    return svg(fig, TITLE)
