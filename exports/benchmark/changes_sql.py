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

from core import triggers_sql as sql

LOG = "exports_benchmarkchange"
PSEUDO = "exports_pseudotranslation"


def _pseudo_projects(rows: str) -> str:
    # A segment already deleted (no cascade order guaranteed for raw SQL) logs NULL: every project.
    return f"SELECT s.project_id FROM {rows} p LEFT JOIN {sql.SEGMENT} s ON s.id = p.segment_id"


# name: (table, event, referencing, function body)
TRIGGERS = {
    **sql.logged_writes(LOG, "xq_bench_pseudo", PSEUDO, _pseudo_projects),
    "xq_bench_segment_insert": (
        sql.SEGMENT,
        "INSERT",
        sql.NEW_ROWS,
        sql.log_projects(LOG, "SELECT project_id FROM new_rows"),
    ),
    "xq_bench_segment_update": sql.logged_update(
        LOG, sql.SEGMENT, ("project_id", "direction_id"), "(o.project_id), (n.project_id)"
    ),
    "xq_bench_segment_delete": (
        sql.SEGMENT,
        "DELETE",
        sql.OLD_ROWS,
        sql.log_projects(LOG, "SELECT project_id FROM old_rows"),
    ),
    "xq_bench_project_levels": sql.logged_update(LOG, sql.PROJECT, ("max_errors",), "(n.id)"),
    "xq_bench_direction_code": sql.logged_update(LOG, sql.DIRECTION, ("code",), "(NULL::bigint)"),
    "xq_bench_project_delete": sql.forget_deleted_projects(LOG),
}


def install() -> str:
    return sql.install_triggers(TRIGGERS, by_key=(PSEUDO,))


def uninstall() -> str:
    return sql.uninstall_triggers(TRIGGERS)
