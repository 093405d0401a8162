"""The flag change log (PostgreSQL triggers): one row per statement and project that changed what the flag
counts of the injection run page and the candidate list are computed from. Django-free: the migration
installs these strings; the token and the pruning are ``core.change_log`` over ``LOG``.

Why: the counts are a pass over every flagged candidate in view (≈ 0.36 s a view at 1.6 M candidates with
one in seven flagged), and flags change only when candidates are written, checked again or placed by a
build, not when they are reviewed. With the log a page reads a few rows to know whether the counts it keeps
(``injection.selectors.flag_counts``) are still those of the rows stored now.

What the counts read, and the trigger that covers it:

- candidates: every insert and delete; updates that change their flags, run, segment or error type (the
  frequent status updates of a review write nothing);
- a run moved to another project; a gold segment moved to another project or direction;
- a direction's code or target language (the list's direction filter, an annotator's languages), and any
  change of an annotator's languages (the list counts only their languages' candidates, through a subquery
  of them that the cache key, the statement, does not spell out): logged for every project (NULL).
"""

from __future__ import annotations

from core import triggers_sql as sql

LOG = "injection_flagchange"
CANDIDATE = "injection_candidate"
RUN = "injection_injectionrun"
ANNOTATOR_LANGUAGES = "core_profile_languages"


def _run_projects(rows: str) -> str:
    # A run already deleted (a project's cascade) logs NULL: every project.
    return f"SELECT r.project_id FROM (SELECT DISTINCT run_id FROM {rows}) c LEFT JOIN {RUN} r ON r.id = c.run_id"


_RUN_PROJECT = f"(SELECT project_id FROM {RUN} WHERE id = %s)"

# name: (table, event, referencing, function body)
TRIGGERS = {
    "xq_flags_candidate_insert": (CANDIDATE, "INSERT", sql.NEW_ROWS, sql.log_projects(LOG, _run_projects("new_rows"))),
    "xq_flags_candidate_delete": (CANDIDATE, "DELETE", sql.OLD_ROWS, sql.log_projects(LOG, _run_projects("old_rows"))),
    "xq_flags_candidate_update": sql.logged_update(
        LOG,
        CANDIDATE,
        ("flags", "run_id", "segment_id", "error_type"),
        f"({_RUN_PROJECT % 'o.run_id'}), ({_RUN_PROJECT % 'n.run_id'})",
    ),
    "xq_flags_run_project": sql.logged_update(LOG, RUN, ("project_id",), "(o.project_id), (n.project_id)"),
    "xq_flags_segment_move": sql.logged_update(
        LOG, sql.SEGMENT, ("project_id", "direction_id"), "(o.project_id), (n.project_id)"
    ),
    "xq_flags_direction": sql.logged_update(LOG, sql.DIRECTION, ("code", "target_id"), "(NULL::bigint)"),
    **{
        f"xq_flags_annotator_languages_{event.lower()}": (
            ANNOTATOR_LANGUAGES,
            event,
            "",
            sql.log_projects(LOG, sql.EVERY_PROJECT),
        )
        for event in ("INSERT", "UPDATE", "DELETE")
    },
    "xq_flags_project_delete": sql.forget_deleted_projects(LOG),
}


def install() -> str:
    return sql.install_triggers(TRIGGERS)


def uninstall() -> str:
    return sql.uninstall_triggers(TRIGGERS)
