"""A GIN index of the candidates' flag names, on PostgreSQL only.

A flag filter on a list of 1.6 M candidates read every flagged one: ``flags::text LIKE '%"x"%'`` can use no
index and PostgreSQL prices it at a few dozen rows, so it sorted them all (0.3–1.3 s). Containment
(``flags @> '["x"]'``) is what a GIN index answers, and its estimate comes from the column's statistics.
SQLite has neither the index type nor the operator, so the migration creates nothing there and the
selector falls back to matching the quoted name (``injection.selectors.with_flag``). Not in the model's
``Meta.indexes``: a ``GinIndex`` there would be created on SQLite too."""
from django.db import migrations

INDEX = "candidate_flag_names"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON injection_candidate USING gin (flags jsonb_path_ops)")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):

    dependencies = [
        ("injection", "0005_candidate_partial_indexes"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
