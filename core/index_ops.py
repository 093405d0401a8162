"""Migration operation that drops the index Django made for a field (``db_index``) and leaves the field's
foreign key alone. Django's own ``AlterField`` drops the foreign key constraint and adds it again, which
re-checks every row of the table under a lock: minutes on a FLORES-sized database, to change nothing."""

from __future__ import annotations

from django.db import migrations


def drop_field_index(
    alter_field: migrations.AlterField, *, table: str, column: str, index: str, pattern_index: str | None = None
) -> migrations.SeparateDatabaseAndState:
    """``alter_field`` (to ``db_index=False``) for the model state; in the database only ``DROP INDEX index``
    (and ``pattern_index``, PostgreSQL's ``varchar_pattern_ops`` twin of a text column's index). Reversed, the
    plain index is created again; the pattern twin is not (no query of ours uses ``LIKE`` on these columns)."""
    names = [index] + ([pattern_index] if pattern_index else [])
    return migrations.SeparateDatabaseAndState(
        state_operations=[alter_field],
        database_operations=[
            migrations.RunSQL(
                sql=[f'DROP INDEX IF EXISTS "{name}"' for name in names],
                reverse_sql=[f'CREATE INDEX IF NOT EXISTS "{index}" ON "{table}" ("{column}")'],
            )
        ],
    )
