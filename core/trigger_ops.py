"""Migration operations for the PostgreSQL triggers that ``core.triggers_sql`` builds; elsewhere (SQLite)
they do nothing, as the pages that read the triggers' rows compute their figures there."""

from __future__ import annotations

from collections.abc import Callable

from django.db import migrations

from core.triggers_sql import drop_trigger, statement_trigger


def postgresql_only(install: Callable[[], str], uninstall: Callable[[], str]) -> migrations.RunPython:
    """Run the SQL ``install()`` returns (``uninstall()``'s when reversed) on PostgreSQL; a no-op elsewhere.
    Called when the migration runs, so it installs the triggers as their module spells them then."""

    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(install())

    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(uninstall())

    return migrations.RunPython(forwards, backwards)


def install_trigger(name: str, spec: tuple[str, str, str, str], settings: tuple[str, ...] = ()) -> migrations.RunPython:
    """Install the statement trigger ``name`` (``spec``: table, event, referencing, body), alone; reversed by
    dropping it."""
    return postgresql_only(lambda: statement_trigger(name, *spec, settings), lambda: drop_trigger(name, spec[0]))
