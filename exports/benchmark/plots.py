"""The benchmark counts plot as SVG (see core.domain.plotting). No Django import."""
from __future__ import annotations

from core.domain.plotting import empty, subplots, svg


NOTHING_BUILT = "nothing built yet: build the benchmark to see pseudo translations per level"


def level_counts(counts: dict) -> str:
    """Pseudo translations per quality level k, one line per direction (XQ-MEval Table 4 as a picture:
    counts grow then shrink with k). ``counts`` is ``merging.counts_table``'s output."""
    if not any(row["total"] for row in counts.values()):  # no direction, or nothing merged yet
        return empty(NOTHING_BUILT)
    fig, ax = subplots(figsize=(7, 3.4))
    for direction, row in sorted(counts.items()):
        levels = sorted(row["levels"], key=int)
        ax.plot([int(k) for k in levels], [row["levels"][k]["total"] for k in levels], marker="o", lw=1.5, label=direction)
    ax.set_xlabel("quality level k (major errors)")
    ax.set_ylabel("pseudo translations")
    ax.set_title("Pseudo translations per level")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=3)
    return svg(fig)
