"""A deleted project's rows leave its change log with it (``core.triggers_sql.forget_deleted_projects``):
one trigger on the projects, installed alone (the earlier migration installs the log's other triggers)."""

from django.db import migrations

from core.triggers_sql import PROJECT, drop_trigger, statement_trigger
from injection import changes_sql

NAME = "xq_flags_project_delete"


def install_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(statement_trigger(NAME, *changes_sql.TRIGGERS[NAME]))


def uninstall_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(drop_trigger(NAME, PROJECT))


class Migration(migrations.Migration):

    dependencies = [
        ('injection', '0007_flag_change_log'),
    ]

    operations = [
        migrations.RunPython(install_trigger, uninstall_trigger),
    ]
