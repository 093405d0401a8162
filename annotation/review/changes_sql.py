"""The SQL of the review change log (PostgreSQL triggers): one row per statement that changed a row the
review figures and the agreement report are computed from, naming the project it touched. Django-free: the
migration installs these strings.

Why: a page that wants to know whether the figures it keeps are still those of the rows stored now would
otherwise read every decision and rating (seconds at a million decisions). With the log it reads the
count and the newest id of its project's rows (``annotation.review.changes.token``): any insert, update or
delete of those rows, by any writer (services, the admin, ``COPY`` imports, raw SQL), adds a row in its own
transaction, so the token changes when that transaction commits, in whatever order transactions commit.

What the figures read, and the trigger that covers it:

- decisions and Likert ratings: every insert, update and delete (statement-level, one row per project the
  statement touched);
- the candidate fields they report (error type, gold flag and answer, segment), rating items (kind,
  external id, direction, project), round numbers, gold segments' direction and project: updates that
  change those columns (the frequent status updates of candidates write nothing);
- user names, direction targets and language codes: a change there is logged for every project (NULL).

A project of a row that no longer resolves (its candidate or item already deleted) is logged as NULL too.
Rows are insert-only (no contention between reviewers); the agreement refresh prunes each project's rows
to one new row (``core.triggers_sql.prune``).
"""

from __future__ import annotations

from annotation.review.tally_sql import CANDIDATE, DECISION, ROUND, SEGMENT
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

LOG = "annotation_reviewchange"
RATING = "annotation_likertrating"
ITEM = "annotation_ratingitem"
USER = "auth_user"
DIRECTION = "core_direction"
LANGUAGE = "core_language"


def _log(projects: str) -> str:
    return log_projects(LOG, projects)


def _decision_projects(rows: str) -> str:
    return f"""SELECT s.project_id FROM {rows} d LEFT JOIN {CANDIDATE} c ON c.id = d.candidate_id
               LEFT JOIN {SEGMENT} s ON s.id = c.segment_id"""


def _rating_projects(rows: str) -> str:
    return f"SELECT i.project_id FROM {rows} r LEFT JOIN {ITEM} i ON i.id = r.item_id"


def _both(projects, *tables: str) -> str:
    return " UNION ALL ".join(projects(t) for t in tables)


# name: (table, event, referencing, function body)
STATEMENT_TRIGGERS = {
    "xq_change_decision_insert": (DECISION, "INSERT", NEW_ROWS, _log(_decision_projects("new_rows"))),
    "xq_change_decision_update": (
        DECISION,
        "UPDATE",
        BOTH_ROWS,
        _log(_both(_decision_projects, "old_rows", "new_rows")),
    ),
    "xq_change_decision_delete": (DECISION, "DELETE", OLD_ROWS, _log(_decision_projects("old_rows"))),
    "xq_change_rating_insert": (RATING, "INSERT", NEW_ROWS, _log(_rating_projects("new_rows"))),
    "xq_change_rating_update": (RATING, "UPDATE", BOTH_ROWS, _log(_both(_rating_projects, "old_rows", "new_rows"))),
    "xq_change_rating_delete": (RATING, "DELETE", OLD_ROWS, _log(_rating_projects("old_rows"))),
    "xq_change_project_delete": forget_deleted_projects(LOG),
}


def _update(columns: tuple[str, ...], projects: str) -> str:
    return _log(changed_rows_projects(columns, projects))


_SEGMENT_PROJECT = f"(SELECT project_id FROM {SEGMENT} WHERE id = %s)"

# Updates of the rows the figures join to that change a reported column (statement-level like the others).
# name: (table, columns, the projects to log as SQL expressions over o and n)
UPDATE_TRIGGERS = {
    "xq_change_candidate": (
        CANDIDATE,
        ("error_type", "is_gold", "gold_answer", "segment_id"),
        f"({_SEGMENT_PROJECT % 'o.segment_id'}), ({_SEGMENT_PROJECT % 'n.segment_id'})",
    ),
    "xq_change_segment": (SEGMENT, ("project_id", "direction_id"), "(o.project_id), (n.project_id)"),
    "xq_change_item": (ITEM, ("project_id", "kind", "external_id", "direction_id"), "(o.project_id), (n.project_id)"),
    "xq_change_round": (ROUND, ("project_id", "number"), "(o.project_id), (n.project_id)"),
    "xq_change_user": (USER, ("username",), "(NULL::bigint)"),
    "xq_change_direction": (DIRECTION, ("target_id",), "(NULL::bigint)"),
    "xq_change_language": (LANGUAGE, ("code",), "(NULL::bigint)"),
}


def install() -> str:
    parts = [
        statement_trigger(name, table, event, referencing, body, INDEX_LOOKUPS if table in (DECISION, RATING) else ())
        for name, (table, event, referencing, body) in STATEMENT_TRIGGERS.items()
    ]
    parts += [
        statement_trigger(name, table, "UPDATE", BOTH_ROWS, _update(columns, projects))
        for name, (table, columns, projects) in UPDATE_TRIGGERS.items()
    ]
    return "\n".join(parts)


def uninstall() -> str:
    return "\n".join(drop_trigger(name, spec[0]) for name, spec in {**STATEMENT_TRIGGERS, **UPDATE_TRIGGERS}.items())
