"""Pure rules of the project page (no Django): how the stages' states read together."""

from __future__ import annotations

WAITING = "blocked"  # shown as "waiting"
# states of a stage whose work has started or may start now
UNDER_WAY = frozenset({"ready", "running", "partial", "done"})


def states_agree(states: list[str]) -> list[str]:
    """The pipeline's states in order, with no stage "waiting" while a later one is under way (#46.3): work done
    downstream (a benchmark built from the directions reviewed so far) means the earlier stage has given what
    that work needed, so it reads "in progress" (``partial``), its blockers still listed."""
    out = list(states)
    later_under_way = False
    for i in range(len(out) - 1, -1, -1):
        if out[i] == WAITING and later_under_way:
            out[i] = "partial"
        later_under_way = later_under_way or out[i] in UNDER_WAY
    return out
