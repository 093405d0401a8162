"""The benchmark change log (PostgreSQL triggers): one row per statement and project that changed what the
counts per direction and level are computed from: pseudo translations (any insert, update, delete), gold
segments (insert, delete, a new direction or project), a project's number of levels (``max_errors``), and a
direction's code (for every project). Django-free: the migration installs these strings; the token and the
pruning are ``core.change_log`` over ``LOG``.

Why: the counts are a pass over every pseudo translation of the project (≈ 0.2 s at 190,000, seconds at
millions), and the project and benchmark pages show them on every view. With the log a page reads a few
rows to know whether the counts it keeps (``exports.benchmark.selectors.current_level_counts``) are still
those of the rows stored now; a build computes them once at its end.
"""

from __future__ import annotations

from core.triggers_sql import (
    BOTH_ROWS,
    INDEX_LOOKUPS,
    NEW_ROWS,
    OLD_ROWS,
    changed_rows_projects,
    drop_trigger,
    forget_deleted_projects,
    log_projects,
    statement_trigger,
)

LOG = "exports_benchmarkchange"
PSEUDO = "exports_pseudotranslation"
SEGMENT = "core_goldsegment"
PROJECT = "core_project"
DIRECTION = "core_direction"


def _pseudo_projects(rows: str) -> str:
    # A segment already deleted (no cascade order guaranteed for raw SQL) logs NULL: every project.
    return f"SELECT s.project_id FROM {rows} p LEFT JOIN {SEGMENT} s ON s.id = p.segment_id"


# name: (table, event, referencing, function body)
TRIGGERS = {
    "xq_bench_pseudo_insert": (PSEUDO, "INSERT", NEW_ROWS, log_projects(LOG, _pseudo_projects("new_rows"))),
    "xq_bench_pseudo_update": (
        PSEUDO,
        "UPDATE",
        BOTH_ROWS,
        log_projects(LOG, _pseudo_projects("old_rows") + " UNION ALL " + _pseudo_projects("new_rows")),
    ),
    "xq_bench_pseudo_delete": (PSEUDO, "DELETE", OLD_ROWS, log_projects(LOG, _pseudo_projects("old_rows"))),
    "xq_bench_segment_insert": (SEGMENT, "INSERT", NEW_ROWS, log_projects(LOG, "SELECT project_id FROM new_rows")),
    "xq_bench_segment_update": (
        SEGMENT,
        "UPDATE",
        BOTH_ROWS,
        log_projects(LOG, changed_rows_projects(("project_id", "direction_id"), "(o.project_id), (n.project_id)")),
    ),
    "xq_bench_segment_delete": (SEGMENT, "DELETE", OLD_ROWS, log_projects(LOG, "SELECT project_id FROM old_rows")),
    "xq_bench_project_levels": (
        PROJECT,
        "UPDATE",
        BOTH_ROWS,
        log_projects(LOG, changed_rows_projects(("max_errors",), "(n.id)")),
    ),
    "xq_bench_direction_code": (
        DIRECTION,
        "UPDATE",
        BOTH_ROWS,
        log_projects(LOG, changed_rows_projects(("code",), "(NULL::bigint)")),
    ),
    "xq_bench_project_delete": forget_deleted_projects(LOG),
}


def install() -> str:
    return "\n".join(
        statement_trigger(name, *spec, INDEX_LOOKUPS if spec[0] == PSEUDO else ()) for name, spec in TRIGGERS.items()
    )


def uninstall() -> str:
    return "\n".join(drop_trigger(name, spec[0]) for name, spec in TRIGGERS.items())
