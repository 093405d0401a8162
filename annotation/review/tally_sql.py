"""The SQL that keeps ``ReviewTally`` exact (PostgreSQL triggers) and rebuilds it. Django-free: the
migration that installs the triggers and the recount command share these strings.

Invariant: for every project, the tally (its rows plus the unfolded changes) equals ``contribution`` summed
over the project's candidates, where a candidate contributes one unit at (its direction, round 1, its
status, its round-1 annotator decisions) and one at (direction, r, status, round-r annotator decisions)
for every later round r that sampled it. Each trigger adds what its statement changed: the contribution of
the rows it touched after the statement minus before it. The triggers are statement-level with
transition tables, so a COPY or ``INSERT … SELECT`` of a million candidates writes a handful of change
rows, not a million. Decisions and samples of a candidate already deleted are skipped (its contribution
left with it, counted from the rows present then); that holds whichever order a cascade deletes in.
"""

from __future__ import annotations

from core.triggers_sql import BOTH_ROWS, NEW_ROWS, OLD_ROWS, SEGMENT, install_triggers, uninstall_triggers

CANDIDATE = "injection_candidate"
DECISION = "annotation_reviewdecision"
ROUND = "annotation_reviewround"
SAMPLE = "annotation_reviewround_candidates"
TALLY = "annotation_reviewtally"
CHANGE = "annotation_reviewtallychange"
KEY = "project_id, direction_id, round_number, status, reviews"


def contribution(candidates: str) -> str:
    """``SELECT project_id, direction_id, round_number, status, reviews`` (one row per unit) of the rows of
    ``candidates`` (a table or transition table with id, segment_id, status), counted from the decisions and
    samples present now."""
    return f"""
        SELECT s.project_id, s.direction_id, 1 AS round_number, c.status,
               (SELECT COUNT(*) FROM {DECISION} d JOIN {ROUND} r ON r.id = d.round_id
                 WHERE d.candidate_id = c.id AND d.source = 'annotator' AND r.number = 1)::int AS reviews
          FROM {candidates} c JOIN {SEGMENT} s ON s.id = c.segment_id
        UNION ALL
        SELECT s.project_id, s.direction_id, r.number, c.status,
               (SELECT COUNT(*) FROM {DECISION} d
                 WHERE d.candidate_id = c.id AND d.round_id = r.id AND d.source = 'annotator')::int
          FROM {candidates} c JOIN {SEGMENT} s ON s.id = c.segment_id
          JOIN {SAMPLE} m ON m.candidate_id = c.id JOIN {ROUND} r ON r.id = m.reviewround_id AND r.number > 1
    """


def _append(units: str, sign: str) -> str:
    """Append the grouped ``units`` (rows of KEY) to the change log with ``sign`` (+1 or -1) each."""
    return f"""
        INSERT INTO {CHANGE} ({KEY}, delta)
        SELECT {KEY}, {sign} * COUNT(*) FROM ({units}) u GROUP BY {KEY};
    """


# A decision statement changes the count of (candidate, round) pairs by inserted minus deleted rows; the
# unit of the pair moves from reviews = now - delta to reviews = now.
_DECISION_MOVES = f"""
    WITH delta AS (
        SELECT candidate_id, round_id, SUM(k)::int AS k FROM (
            SELECT candidate_id, round_id, 1 AS k FROM new_rows WHERE source = 'annotator' AND round_id IS NOT NULL
            UNION ALL
            SELECT candidate_id, round_id, -1 FROM old_rows WHERE source = 'annotator' AND round_id IS NOT NULL
        ) x GROUP BY candidate_id, round_id HAVING SUM(k) <> 0
    ), unit AS (
        SELECT s.project_id, s.direction_id, r.number AS round_number, c.status, delta.k,
               (SELECT COUNT(*) FROM {DECISION} d
                 WHERE d.candidate_id = c.id AND d.round_id = r.id AND d.source = 'annotator')::int AS now
          FROM delta JOIN {CANDIDATE} c ON c.id = delta.candidate_id JOIN {SEGMENT} s ON s.id = c.segment_id
          JOIN {ROUND} r ON r.id = delta.round_id
         WHERE r.number = 1 OR EXISTS (SELECT 1 FROM {SAMPLE} m WHERE m.reviewround_id = r.id AND m.candidate_id = c.id)
    )
    INSERT INTO {CHANGE} ({KEY}, delta)
    SELECT project_id, direction_id, round_number, status, reviews, SUM(delta) FROM (
        SELECT project_id, direction_id, round_number, status, now - k AS reviews, -1 AS delta FROM unit
        UNION ALL
        SELECT project_id, direction_id, round_number, status, now, 1 FROM unit
    ) m GROUP BY {KEY};
"""

_SAMPLE_UNITS = f"""
    SELECT s.project_id, s.direction_id, r.number AS round_number, c.status,
           (SELECT COUNT(*) FROM {DECISION} d
             WHERE d.candidate_id = c.id AND d.round_id = r.id AND d.source = 'annotator')::int AS reviews
      FROM %s m JOIN {ROUND} r ON r.id = m.reviewround_id AND r.number > 1
      JOIN {CANDIDATE} c ON c.id = m.candidate_id JOIN {SEGMENT} s ON s.id = c.segment_id
"""

# Only candidates whose status or segment changed count: an update of other columns, or one that re-derives
# statuses to the same values, writes no change rows. (PostgreSQL allows no column list on a trigger with
# transition tables, so every UPDATE of candidates runs this join of its old and new rows.)
_MOVED = """(SELECT o.* FROM old_rows o JOIN new_rows n ON n.id = o.id
              WHERE o.status IS DISTINCT FROM n.status OR o.segment_id IS DISTINCT FROM n.segment_id)"""
_MOVED_NEW = """(SELECT n.* FROM old_rows o JOIN new_rows n ON n.id = o.id
              WHERE o.status IS DISTINCT FROM n.status OR o.segment_id IS DISTINCT FROM n.segment_id)"""

TRIGGERS = {
    # name: (table, event, referencing, function body)
    "xq_tally_candidate_insert": (
        CANDIDATE,
        "INSERT",
        NEW_ROWS,
        _append(contribution("new_rows"), "1"),
    ),
    "xq_tally_candidate_delete": (
        CANDIDATE,
        "DELETE",
        OLD_ROWS,
        _append(contribution("old_rows"), "-1"),
    ),
    "xq_tally_candidate_update": (
        CANDIDATE,
        "UPDATE",
        BOTH_ROWS,
        _append(contribution(_MOVED), "-1") + _append(contribution(_MOVED_NEW), "1"),
    ),
    "xq_tally_decision_insert": (
        DECISION,
        "INSERT",
        NEW_ROWS,
        _DECISION_MOVES.replace("FROM old_rows", "FROM (SELECT * FROM new_rows WHERE false) o"),
    ),
    "xq_tally_decision_delete": (
        DECISION,
        "DELETE",
        OLD_ROWS,
        _DECISION_MOVES.replace("FROM new_rows", "FROM (SELECT * FROM old_rows WHERE false) n"),
    ),
    "xq_tally_decision_update": (
        DECISION,
        "UPDATE",
        BOTH_ROWS,
        _DECISION_MOVES,
    ),
    "xq_tally_sample_insert": (
        SAMPLE,
        "INSERT",
        NEW_ROWS,
        _append(_SAMPLE_UNITS % "new_rows", "1"),
    ),
    "xq_tally_sample_delete": (
        SAMPLE,
        "DELETE",
        OLD_ROWS,
        _append(_SAMPLE_UNITS % "old_rows", "-1"),
    ),
}


def install() -> str:
    return install_triggers(TRIGGERS)


def uninstall() -> str:
    return uninstall_triggers(TRIGGERS)


# Move the logged changes into the tally rows: one statement, so a reader (tally rows plus changes, in one
# statement) never sees a change twice or not at all. Rows are upserted in key order, so two folds cannot
# deadlock (and an advisory lock keeps a second fold from waiting on the first at all). Changes of a
# project deleted meanwhile are dropped.
FOLD = f"""
    WITH moved AS (DELETE FROM {CHANGE} RETURNING {KEY}, delta),
    summed AS (SELECT {KEY}, SUM(delta) AS delta FROM moved GROUP BY {KEY} HAVING SUM(delta) <> 0)
    INSERT INTO {TALLY} ({KEY}, candidates)
    SELECT u.project_id, u.direction_id, u.round_number, u.status, u.reviews, u.delta FROM summed u
      JOIN core_project p ON p.id = u.project_id JOIN core_direction dr ON dr.id = u.direction_id
     ORDER BY u.project_id, u.direction_id, u.round_number, u.status, u.reviews
    ON CONFLICT ({KEY}) DO UPDATE SET candidates = {TALLY}.candidates + excluded.candidates
"""

# The tally of one project from its rows (the recount): every unit of every candidate, grouped.
RECOUNT = f"""
    INSERT INTO {TALLY} ({KEY}, candidates)
    SELECT {KEY}, COUNT(*) FROM ({contribution(f"(SELECT c.* FROM {CANDIDATE} c JOIN {SEGMENT} s ON s.id = c.segment_id WHERE s.project_id = %(project)s)")}) u
     GROUP BY {KEY}
"""

# Rows plus unfolded changes, in one statement.
READ = f"""
    SELECT direction_id, round_number, status, reviews, SUM(candidates)::bigint FROM (
        SELECT direction_id, round_number, status, reviews, candidates FROM {TALLY} WHERE project_id = %(project)s
        UNION ALL
        SELECT direction_id, round_number, status, reviews, delta FROM {CHANGE} WHERE project_id = %(project)s
    ) t GROUP BY direction_id, round_number, status, reviews HAVING SUM(candidates) <> 0
"""
