"""SQL builders for PostgreSQL statement-level triggers and the change logs they append to. Django-free:
migrations install these strings (the review counters, the review change log, the benchmark change log).

A change log is an insert-only table ``(id, project_id)``: its triggers add one row per statement and
project that changed the rows some figure is computed from. Its token, (rows, newest id) of a project's
rows plus those for every project (NULL), changes when such a transaction commits, whichever order
transactions commit in (a later commit of an earlier id still adds a row).

Pruning replaces a project's rows (two or more) with one new row, whose id is above every id drawn so far:
from then on every token of the project has a newer id than any token read before, so no token can read as
an earlier one. (Keeping the newest row instead would not do: a transaction that drew an older id and
commits after the prune brings the count back, and the token with it, to one read before the prune.)
"""

from __future__ import annotations

# A trigger that joins its statement's rows to a large table by primary key (a decision to its candidate and
# segment, a pseudo translation to its segment) must look the rows up by index. Left to the cost model, a
# few hundred rows against a table that grows inside a long transaction (an import writes a language per
# statement) are hash-joined to a sequential scan of the whole table, so each statement reads everything
# written before it: quadratic (measured: an import's database writes 3.3 s -> 5.5 s at k = 10). Turning
# hash and merge joins off for the function's own statements leaves the nested loop over the primary keys.
INDEX_LOOKUPS = ("enable_hashjoin = off", "enable_mergejoin = off")


def function(name: str, body: str, settings: tuple[str, ...] = ()) -> str:
    options = "".join(f" SET {setting}" for setting in settings)
    return f"""
        CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql{options} AS $$
        BEGIN
            {body}
            RETURN NULL;
        END $$;
    """


def statement_trigger(
    name: str, table: str, event: str, referencing: str, body: str, settings: tuple[str, ...] = ()
) -> str:
    """The PL/pgSQL function ``name`` running ``body`` (with ``settings`` for its own statements) and the
    statement-level AFTER ``event`` trigger on ``table`` that calls it with its transition tables
    (``referencing``), replacing earlier ones."""
    return "\n".join(
        [
            function(name, body, settings),
            f"DROP TRIGGER IF EXISTS {name} ON {table};",
            f"CREATE TRIGGER {name} AFTER {event} ON {table} {referencing} FOR EACH STATEMENT EXECUTE FUNCTION {name}();",
        ]
    )


def drop_trigger(name: str, table: str) -> str:
    return f"DROP TRIGGER IF EXISTS {name} ON {table}; DROP FUNCTION IF EXISTS {name}();"


def install_triggers(triggers: dict[str, tuple[str, str, str, str]], by_key: tuple[str, ...] = ()) -> str:
    """The SQL creating ``triggers`` (name: (table, event, referencing, function body)), in their order; the
    functions of those on the tables ``by_key`` look rows up by key (``INDEX_LOOKUPS``)."""
    return "\n".join(
        statement_trigger(name, *spec, INDEX_LOOKUPS if spec[0] in by_key else ()) for name, spec in triggers.items()
    )


def uninstall_triggers(triggers: dict[str, tuple[str, str, str, str]]) -> str:
    return "\n".join(drop_trigger(name, spec[0]) for name, spec in triggers.items())


NEW_ROWS = "REFERENCING NEW TABLE AS new_rows"
OLD_ROWS = "REFERENCING OLD TABLE AS old_rows"
BOTH_ROWS = "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"


def log_projects(log: str, projects: str) -> str:
    """Append to change log ``log`` one row per distinct project of ``projects`` (a SELECT of ``project_id``)."""
    return f"INSERT INTO {log} (project_id) SELECT DISTINCT project_id FROM ({projects}) p;"


def changed_rows_projects(columns: tuple[str, ...], projects: str) -> str:
    """In an UPDATE trigger: for each row whose ``columns`` changed, ``projects`` (a VALUES list of SQL
    expressions over ``o``, the old row, and ``n``, the new one), as a SELECT of ``project_id``. The columns
    are compared here, not in a trigger ``WHEN``, which would pin them: a later migration altering one
    (Django's own on ``auth_user.username``) would then fail."""
    changed = " OR ".join(f"o.{c} IS DISTINCT FROM n.{c}" for c in columns)
    return f"""SELECT v.project_id FROM old_rows o JOIN new_rows n ON n.id = o.id
               CROSS JOIN LATERAL (VALUES {projects}) v(project_id) WHERE {changed}"""


def logged_writes(log: str, prefix: str, table: str, projects) -> dict[str, tuple[str, str, str, str]]:
    """The triggers ``prefix``_insert, _update and _delete logging to ``log``, for every insert, update and
    delete of ``table``, the projects of the statement's rows: ``projects(rows)`` is a SELECT of
    ``project_id`` over the transition table ``rows`` (an update logs its old rows' and its new rows')."""
    return {
        f"{prefix}_insert": (table, "INSERT", NEW_ROWS, log_projects(log, projects("new_rows"))),
        f"{prefix}_update": (
            table,
            "UPDATE",
            BOTH_ROWS,
            log_projects(log, " UNION ALL ".join(projects(rows) for rows in ("old_rows", "new_rows"))),
        ),
        f"{prefix}_delete": (table, "DELETE", OLD_ROWS, log_projects(log, projects("old_rows"))),
    }


def logged_update(log: str, table: str, columns: tuple[str, ...], projects: str) -> tuple[str, str, str, str]:
    """The trigger (table, event, referencing, body) logging to ``log``, for an UPDATE of ``table``, the
    ``projects`` of each row whose ``columns`` changed (see ``changed_rows_projects``)."""
    return table, "UPDATE", BOTH_ROWS, log_projects(log, changed_rows_projects(columns, projects))


def token(log: str) -> str:
    return f"SELECT COUNT(*), MAX(id) FROM {log} WHERE project_id = %(project)s OR project_id IS NULL"


def all_tokens(log: str) -> str:
    return f"SELECT project_id, COUNT(*), MAX(id) FROM {log} GROUP BY project_id ORDER BY project_id NULLS FIRST"


# The core tables several logs watch, and the projects to log for a change that concerns every project.
PROJECT = "core_project"
SEGMENT = "core_goldsegment"
DIRECTION = "core_direction"
LANGUAGE = "core_language"
EVERY_PROJECT = "SELECT NULL::bigint AS project_id"


def forget_deleted_projects(log: str) -> tuple[str, str, str, str]:
    """The trigger (table, event, referencing, body) deleting a deleted project's rows from ``log``: those
    its own cascade wrote (it deletes a project's rows before the project) and the earlier ones. No token
    of the project is read again, and a project id is never reused."""
    return PROJECT, "DELETE", OLD_ROWS, f"DELETE FROM {log} WHERE project_id IN (SELECT id FROM old_rows);"


def prune(log: str) -> str:
    # One statement, so the delete and the new row commit together. A log of one row is left as it is (its
    # token stays: a refresh with nothing new to read must not make every kept figure stale). The rows for
    # every project (NULL) stay: pruning them would change every other project's token.
    return f"""
        WITH pruned AS (
            DELETE FROM {log} WHERE project_id = %(project)s
               AND (SELECT COUNT(*) FROM {log} WHERE project_id = %(project)s) > 1
            RETURNING id
        )
        INSERT INTO {log} (project_id) SELECT %(project)s WHERE EXISTS (SELECT FROM pruned)
    """
