"""Django's PostgreSQL backend, for the test process only (``tests/settings.py``), with a cheaper flush.

A transactional test is cleaned up by ``flush``, which on PostgreSQL is one ``TRUNCATE`` of every table: a new
file for each table and index, 0.1 to 1 s here whatever the tables hold (more while the disk is busy), after
every transactional test (and around every module that shares rows, ``module_data``). Most of those tests
leave a few rows, which ``DELETE`` removes in milliseconds. So the flush counts each table's rows (up to a
bound, in one query), truncates the tables that hold many (``CASCADE``: with the tables that point at them)
and deletes the rest, again until a pass deletes nothing (a deletion fires the triggers that log changes into
other tables; a statement trigger fires even when no row goes, so only a table with rows is deleted from).
Foreign keys are deferred to the commit (Django creates them ``DEFERRABLE INITIALLY DEFERRED``), so the order
of the deletions does not matter. What is left is the same: every table empty. A flush that resets sequences
(``reset_sequences=True``) is Django's own.
"""

from __future__ import annotations

from django.db.backends.postgresql import base, operations

# Above this many rows a table is truncated: DELETE's row-by-row work (and the statement triggers' joins over
# the deleted rows, nested loops: 900 gold segments took 2.5 s) grows with the rows, TRUNCATE's cost does not.
DELETE_AT_MOST = 100
MAX_PASSES = 10


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if not tables or reset_sequences:
            return super().sql_flush(style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        qn = self.quote_name
        tables = list(tables)
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT "
                + ", ".join(
                    f"(SELECT count(*) FROM (SELECT 1 FROM {qn(table)} LIMIT {DELETE_AT_MOST + 1}) AS capped)"
                    for table in tables
                )
            )
            counts = dict(zip(tables, cursor.fetchone()))
        sql = []
        large = [table for table in tables if counts[table] > DELETE_AT_MOST]
        if large:
            sql.append(f"TRUNCATE {', '.join(qn(table) for table in large)} CASCADE;")
        deletes = "\n".join(
            f"IF EXISTS (SELECT FROM {qn(table)}) THEN DELETE FROM {qn(table)}; "
            "GET DIAGNOSTICS deleted = ROW_COUNT; total := total + deleted; END IF;"
            for table in tables
        )
        sql.append(
            f"""DO $flush$
DECLARE deleted bigint; total bigint;
BEGIN
  FOR pass IN 1..{MAX_PASSES} LOOP
    total := 0;
{deletes}
    IF total = 0 THEN RETURN; END IF;
  END LOOP;
  RAISE EXCEPTION 'flush: rows still left after {MAX_PASSES} passes of deletions';
END $flush$;"""
        )
        return sql


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
