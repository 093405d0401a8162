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

from annotation.review.tally_sql import CANDIDATE, DECISION, ROUND
from core import triggers_sql as sql

LOG = "annotation_reviewchange"
RATING = "annotation_likertrating"
ITEM = "annotation_ratingitem"
USER = "auth_user"


def _decision_projects(rows: str) -> str:
    return f"""SELECT s.project_id FROM {rows} d LEFT JOIN {CANDIDATE} c ON c.id = d.candidate_id
               LEFT JOIN {sql.SEGMENT} s ON s.id = c.segment_id"""


def _rating_projects(rows: str) -> str:
    return f"SELECT i.project_id FROM {rows} r LEFT JOIN {ITEM} i ON i.id = r.item_id"


# name: (table, event, referencing, function body)
STATEMENT_TRIGGERS = {
    **sql.logged_writes(LOG, "xq_change_decision", DECISION, _decision_projects),
    **sql.logged_writes(LOG, "xq_change_rating", RATING, _rating_projects),
    "xq_change_project_delete": sql.forget_deleted_projects(LOG),
}

_SEGMENT_PROJECT = f"(SELECT project_id FROM {sql.SEGMENT} WHERE id = %s)"

# Updates of the rows the figures join to that change a reported column (statement-level like the others):
# name: (table, the columns, the projects to log as SQL expressions over o and n).
_UPDATES = {
    "xq_change_candidate": (
        CANDIDATE,
        ("error_type", "is_gold", "gold_answer", "segment_id"),
        f"({_SEGMENT_PROJECT % 'o.segment_id'}), ({_SEGMENT_PROJECT % 'n.segment_id'})",
    ),
    "xq_change_segment": (sql.SEGMENT, ("project_id", "direction_id"), "(o.project_id), (n.project_id)"),
    "xq_change_item": (ITEM, ("project_id", "kind", "external_id", "direction_id"), "(o.project_id), (n.project_id)"),
    "xq_change_round": (ROUND, ("project_id", "number"), "(o.project_id), (n.project_id)"),
    "xq_change_user": (USER, ("username",), "(NULL::bigint)"),
    "xq_change_direction": (sql.DIRECTION, ("target_id",), "(NULL::bigint)"),
    "xq_change_language": (sql.LANGUAGE, ("code",), "(NULL::bigint)"),
}
UPDATE_TRIGGERS = {name: sql.logged_update(LOG, *spec) for name, spec in _UPDATES.items()}


def install() -> str:
    return sql.install_triggers({**STATEMENT_TRIGGERS, **UPDATE_TRIGGERS}, by_key=(DECISION, RATING))


def uninstall() -> str:
    return sql.uninstall_triggers({**STATEMENT_TRIGGERS, **UPDATE_TRIGGERS})
