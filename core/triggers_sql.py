"""SQL builders for PostgreSQL statement-level triggers and the change logs they append to. Django-free:
migrations install these strings (the review counters, the review change log, the benchmark change log).

A change log is an insert-only table ``(id, project_id)``: its triggers add one row per statement and
project that changed the rows some figure is computed from. Its token, (rows, newest id) of a project's
rows plus those for every project (NULL), changes when such a transaction commits, whichever order
transactions commit in; pruning keeps the project's newest row, so a token never reads as an earlier one.
"""
from __future__ import annotations


def function(name: str, body: str) -> str:
    return f"""
        CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            {body}
            RETURN NULL;
        END $$;
    """


def statement_trigger(name: str, table: str, event: str, referencing: str, body: str) -> str:
    """The PL/pgSQL function ``name`` running ``body`` and the statement-level AFTER ``event`` trigger on
    ``table`` that calls it with its transition tables (``referencing``), replacing earlier ones."""
    return "\n".join([
        function(name, body),
        f"DROP TRIGGER IF EXISTS {name} ON {table};",
        f"CREATE TRIGGER {name} AFTER {event} ON {table} {referencing} FOR EACH STATEMENT EXECUTE FUNCTION {name}();",
    ])


def drop_trigger(name: str, table: str) -> str:
    return f"DROP TRIGGER IF EXISTS {name} ON {table}; DROP FUNCTION IF EXISTS {name}();"


NEW_ROWS = "REFERENCING NEW TABLE AS new_rows"
OLD_ROWS = "REFERENCING OLD TABLE AS old_rows"
BOTH_ROWS = "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"


def log_projects(log: str, projects: str) -> str:
    """Append to change log ``log`` one row per distinct project of ``projects`` (a SELECT of ``project_id``)."""
    return f"INSERT INTO {log} (project_id) SELECT DISTINCT project_id FROM ({projects}) p;"


def token(log: str) -> str:
    return f"SELECT COUNT(*), MAX(id) FROM {log} WHERE project_id = %(project)s OR project_id IS NULL"


def prune(log: str) -> str:
    # The rows for every project (NULL) stay: pruning them would change every other project's token.
    return f"""
        DELETE FROM {log} WHERE project_id = %(project)s
           AND id < (SELECT MAX(id) FROM {log} WHERE project_id = %(project)s)
    """


def forget(log: str) -> str:
    return f"DELETE FROM {log} WHERE project_id = %(project)s"
