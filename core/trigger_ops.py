"""Migration operations for the PostgreSQL triggers that ``core.triggers_sql`` builds; elsewhere (SQLite)
they do nothing, as the pages that read the triggers' rows compute their figures there."""
from __future__ import annotations

from django.db import migrations

from core.triggers_sql import drop_trigger, statement_trigger


def install_trigger(name: str, spec: tuple[str, str, str, str], settings: tuple[str, ...] = ()) -> migrations.RunPython:
    """Install the statement trigger ``name`` (``spec``: table, event, referencing, body), alone; reversed by
    dropping it."""
    table = spec[0]

    def install(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(statement_trigger(name, *spec, settings))

    def uninstall(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(drop_trigger(name, table))

    return migrations.RunPython(install, uninstall)
